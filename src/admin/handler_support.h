// What every admin route handler shares: answers (JSON, or an error body), the query's
// checks, and a listing's page parameters.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "admin/admin_api.h"
#include "base/result.h"
#include "base/time.h"
#include "store/store.h"

namespace cairva::admin {

// A request's query parameters (the last value of a repeated one).
using Query = std::map<std::string, std::string, std::less<>>;

AdminResponse error_response(ErrorCode code, std::string_view message);
AdminResponse error_response(const Error& e);
AdminResponse json_response(int status, const boost::json::value& v);

// Refuses query parameters outside `known` (a typo must not silently list everything).
Status check_query(const Query& q, std::initializer_list<std::string_view> known);
std::optional<std::string> non_empty(const Query& q, std::string_view key);
// `limit`: 1..page_size_max, default page_size_default.
Result<size_t> page_size(const Query& q);
// An RFC 3339 time parameter, or nullopt when absent (invalid_request when malformed).
Result<std::optional<UnixMicros>> time_param(const Query& q, std::string_view key);

// {"object":"list","data":[…],"has_more":…} of a store page.
template <class T, class F>
boost::json::object page_of(const store::Paged<T>& page, F render) {
  boost::json::array data;
  data.reserve(page.data.size());
  for (const auto& r : page.data) data.emplace_back(render(r));
  return boost::json::object{
      {"object", "list"}, {"data", std::move(data)}, {"has_more", page.has_more}};
}

}  // namespace cairva::admin
