#include "wire/inspect.h"

namespace cairva::wire::inspect {

Error invalid(std::string message) {
  return make_error(ErrorCode::invalid_request, std::move(message));
}

Error repeated(std::string_view name) {
  return invalid("member \"" + std::string(name) + "\" appears more than once");
}

Error malformed(simdjson::error_code e) {
  if (e == simdjson::DEPTH_ERROR) return invalid("request body is nested too deeply");
  return invalid("request body is not valid JSON: " + std::string(json::reason(e)));
}

Status model(od::value v, std::string& out) {
  std::string_view name;
  if (v.get_string().get(name)) return invalid("model must be a string");
  // Kept on the request's row: PostgreSQL's text cannot hold a NUL byte.
  if (name.find('\0') != std::string_view::npos)
    return invalid("model must not contain a NUL character");
  out.assign(name);
  return {};
}

Status limit(od::value v, std::string_view name, int64_t max, std::optional<int64_t>& out) {
  const std::string must = std::string(name) + " must be an integer >= 1";
  od::json_type type;
  if (auto e = v.type().get(type)) return malformed(e);
  if (type == od::json_type::null) {
    if (auto e = json::validate(v, member_depth)) return malformed(e);
    out.reset();
    return {};
  }
  if (type != od::json_type::number) return invalid(must);
  od::number_type number_type;
  if (v.get_number_type().get(number_type)) return invalid(must);
  if (number_type == od::number_type::unsigned_integer) {
    return invalid(std::string(name) + " must be at most " + std::to_string(max));
  }
  int64_t x = 0;
  if (number_type != od::number_type::signed_integer || v.get_int64().get(x)) return invalid(must);
  if (x < 1) return invalid(must);
  if (x > max) return invalid(std::string(name) + " must be at most " + std::to_string(max));
  out = x;
  return {};
}

Status boolean(od::value v, std::string_view name, bool& out) {
  bool is_null = false;
  if (v.is_null().get(is_null) == simdjson::SUCCESS && is_null) {
    out = false;
    return {};
  }
  if (v.get_bool().get(out)) return invalid(std::string(name) + " must be a boolean");
  return {};
}

Status optional_string(od::value v, std::string_view name, EstimateWalk& walk,
                       std::optional<std::string>& out) {
  od::json_type type;
  if (auto e = v.type().get(type)) return malformed(e);
  if (type == od::json_type::null) return checked(json::validate(v, member_depth));
  if (type != od::json_type::string) return invalid(std::string(name) + " must be a string");
  std::string_view text;
  if (auto e = json::read_string(v, text)) return malformed(e);
  walk.string(text);
  out.emplace(text);
  return {};
}

}  // namespace cairva::wire::inspect
