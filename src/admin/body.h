// Strict reading of admin request bodies: a JSON object whose fields are all known, each of
// the right type and range. The first problem found is the answer (400 invalid_request).
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/time.h"

namespace cairva::admin {

class BodyReader {
 public:
  // Parses `body` (empty or whitespace = {}) and refuses fields outside `known`.
  BodyReader(std::string_view body, std::initializer_list<std::string_view> known);
  // Reads an object nested in a body (an item of an array) the same way; its errors are
  // prefixed with `path` ("items[3]").
  BodyReader(const boost::json::object& object, std::initializer_list<std::string_view> known,
             std::string path);

  // Each getter returns nullopt when the field is absent or bad; a bad (or absent and
  // required) field records the error.
  std::optional<int64_t> integer(std::string_view key, int64_t min, int64_t max, bool required);
  std::optional<std::string> string(std::string_view key, size_t max_bytes, bool required);
  std::optional<UnixMicros> time(std::string_view key, bool required);
  std::optional<bool> boolean(std::string_view key, bool required);
  std::optional<std::vector<std::string>> string_list(std::string_view key, size_t max_items,
                                                      size_t max_item_bytes);
  // An array of at most `max_items` values (nullptr when absent or bad).
  const boost::json::array* array(std::string_view key, size_t max_items, bool required);

  bool ok() const { return !error_; }
  // The first error, as an invalid_request Error.
  Error error() const;
  void fail(std::string message) {
    if (!error_) error_ = path_.empty() ? std::move(message) : path_ + ": " + message;
  }

 private:
  const boost::json::value* field(std::string_view key, bool required);
  void refuse_unknown(std::initializer_list<std::string_view> known);

  std::string path_;
  boost::json::object object_;
  std::optional<std::string> error_;
};

}  // namespace cairva::admin
