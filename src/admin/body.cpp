#include "admin/body.h"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace cairva::admin {
namespace json = boost::json;

namespace {

std::string kind_of(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
      return "an integer";
    case json::kind::double_:
      return "a number with a fraction";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
  }
  return "a value";
}

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// Every string the admin API takes is stored as text, and PostgreSQL's text cannot hold a
// NUL byte (libpq would cut it there).
bool has_nul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

}  // namespace

BodyReader::BodyReader(std::string_view body, std::initializer_list<std::string_view> known) {
  if (blank(body)) return;
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) {
    fail("request body is not valid JSON: " + ec.message());
    return;
  }
  if (!v.is_object()) {
    fail("request body must be a JSON object, got " + kind_of(v));
    return;
  }
  object_ = std::move(v.as_object());
  refuse_unknown(known);
}

BodyReader::BodyReader(const json::object& object, std::initializer_list<std::string_view> known,
                       std::string path)
    : path_(std::move(path)), object_(object) {
  refuse_unknown(known);
}

void BodyReader::refuse_unknown(std::initializer_list<std::string_view> known) {
  std::string unknown;
  for (const auto& kv : object_) {
    bool found = false;
    for (auto k : known) found = found || kv.key() == k;
    if (!found) unknown += (unknown.empty() ? "" : ", ") + std::string(kv.key());
  }
  if (!unknown.empty()) fail("unknown field(s): " + unknown);
}

const json::value* BodyReader::field(std::string_view key, bool required) {
  const json::value* v = object_.if_contains(key);
  if (v == nullptr && required) fail(std::string(key) + ": required");
  return v;
}

std::optional<int64_t> BodyReader::integer(std::string_view key, int64_t min, int64_t max,
                                           bool required) {
  const json::value* v = field(key, required);
  if (v == nullptr) return std::nullopt;
  const std::string range = " between " + std::to_string(min) + " and " + std::to_string(max);
  if (v->is_uint64() || (v->is_int64() && (v->get_int64() < min || v->get_int64() > max))) {
    fail(std::string(key) + ": must be an integer" + range + ", got " + json::serialize(*v));
    return std::nullopt;
  }
  if (!v->is_int64()) {
    fail(std::string(key) + ": must be an integer" + range + ", got " + kind_of(*v));
    return std::nullopt;
  }
  return v->get_int64();
}

std::optional<bool> BodyReader::boolean(std::string_view key, bool required) {
  const json::value* v = field(key, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_bool()) {
    fail(std::string(key) + ": must be true or false, got " + kind_of(*v));
    return std::nullopt;
  }
  return v->get_bool();
}

std::optional<std::string> BodyReader::string(std::string_view key, size_t max_bytes,
                                              bool required) {
  const json::value* v = field(key, required);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) {
    fail(std::string(key) + ": must be a string, got " + kind_of(*v));
    return std::nullopt;
  }
  const json::string& s = v->get_string();
  if (s.empty() || s.size() > max_bytes) {
    fail(std::string(key) + ": must be a non-empty string of at most " + std::to_string(max_bytes) +
         " bytes");
    return std::nullopt;
  }
  if (has_nul(s)) {
    fail(std::string(key) + ": must not contain a NUL character");
    return std::nullopt;
  }
  return std::string(s);
}

std::optional<UnixMicros> BodyReader::time(std::string_view key, bool required) {
  const json::value* v = field(key, required);
  if (v == nullptr) return std::nullopt;
  std::optional<UnixMicros> t;
  if (v->is_string()) t = parse_rfc3339(v->get_string());
  if (!t) {
    fail(std::string(key) + ": must be an RFC 3339 time such as \"2026-12-01T00:00:00Z\", got " +
         json::serialize(*v));
  }
  return t;
}

std::optional<std::vector<std::string>> BodyReader::string_list(std::string_view key,
                                                                size_t max_items,
                                                                size_t max_item_bytes) {
  const json::value* v = field(key, false);
  if (v == nullptr || v->is_null()) return std::nullopt;
  const std::string problem = std::string(key) + ": must be an array of at most " +
                              std::to_string(max_items) + " non-empty strings";
  if (!v->is_array() || v->get_array().size() > max_items) {
    fail(problem);
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const auto& item : v->get_array()) {
    if (!item.is_string() || item.get_string().empty() ||
        item.get_string().size() > max_item_bytes || has_nul(item.get_string())) {
      fail(problem);
      return std::nullopt;
    }
    out.emplace_back(item.get_string());
  }
  return out;
}

const json::array* BodyReader::array(std::string_view key, size_t max_items, bool required) {
  const json::value* v = field(key, required);
  if (v == nullptr) return nullptr;
  if (!v->is_array()) {
    fail(std::string(key) + ": must be an array, got " + kind_of(*v));
    return nullptr;
  }
  if (v->get_array().size() > max_items) {
    fail(std::string(key) + ": at most " + std::to_string(max_items) + " per call, got " +
         std::to_string(v->get_array().size()));
    return nullptr;
  }
  return &v->get_array();
}

Error BodyReader::error() const {
  CAIRVA_ASSERT(error_.has_value());
  return make_error(ErrorCode::invalid_request, *error_);
}

}  // namespace cairva::admin
