#include "admin/handler_support.h"

#include <boost/json/serialize.hpp>
#include <charconv>

#include "admin/limits.h"
#include "render/entity_json.h"

namespace cairva::admin {
namespace json = boost::json;

AdminResponse error_response(ErrorCode code, std::string_view message) {
  return AdminResponse{http_status(code), render::error_json(code, message)};
}

AdminResponse error_response(const Error& e) { return error_response(e.code, e.message); }

AdminResponse json_response(int status, const json::value& v) {
  return AdminResponse{status, json::serialize(v)};
}

Status check_query(const Query& q, std::initializer_list<std::string_view> known) {
  for (const auto& [k, v] : q) {
    bool found = false;
    for (auto name : known) found = found || k == name;
    if (!found) return make_error(ErrorCode::invalid_request, "unknown query parameter: " + k);
  }
  return {};
}

std::optional<std::string> non_empty(const Query& q, std::string_view key) {
  auto it = q.find(key);
  if (it == q.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

Result<size_t> page_size(const Query& q) {
  auto it = q.find("limit");
  if (it == q.end() || it->second.empty()) return page_size_default;
  size_t v = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 1 || v > page_size_max) {
    return make_error(ErrorCode::invalid_request, "limit: must be an integer between 1 and " +
                                                      std::to_string(page_size_max) + ", got " + s);
  }
  return v;
}

Result<std::optional<UnixMicros>> time_param(const Query& q, std::string_view key) {
  auto v = non_empty(q, key);
  if (!v) return std::optional<UnixMicros>();
  auto t = parse_rfc3339(*v);
  if (!t) {
    return make_error(
        ErrorCode::invalid_request,
        std::string(key) + ": must be an RFC 3339 time such as 2026-12-01T00:00:00Z, got " + *v);
  }
  return std::optional<UnixMicros>(*t);
}

}  // namespace cairva::admin
