#include "wire/usage.h"

#include "wire/limits.h"

namespace cairva::wire {
namespace {

namespace od = json::od;

// A count, or nullopt when `v` is not an integer in range (v is consumed either way).
std::optional<int64_t> read_count(od::value v, int depth, simdjson::error_code& e) {
  od::json_type type;
  if ((e = v.type().get(type))) return std::nullopt;
  if (type == od::json_type::number) {
    od::number_type nt;
    int64_t x = 0;
    if (v.get_number_type().get(nt) == simdjson::SUCCESS && nt == od::number_type::signed_integer &&
        v.get_int64().get(x) == simdjson::SUCCESS) {
      if (x >= 0 && x <= usage_tokens_max) return x;
      return std::nullopt;
    }
    // A number, but not a count (fraction, negative, beyond 64 bits): the usage is invalid,
    // the body is not. A failed get_* leaves the value unconsumed, so get_double consumes it.
    double ignored = 0;
    if (v.get_double().get(ignored) == simdjson::SUCCESS) return std::nullopt;
  }
  e = json::validate(v, depth);
  return std::nullopt;
}

}  // namespace

std::optional<core::Tokens> read_usage(od::value v, int depth, simdjson::error_code& e,
                                       const UsageFields& fields) {
  e = simdjson::SUCCESS;
  od::json_type type;
  if ((e = v.type().get(type))) return std::nullopt;
  if (type != od::json_type::object) {
    e = json::validate(v, depth);
    return std::nullopt;
  }
  od::object obj;
  if ((e = v.get_object().get(obj))) return std::nullopt;
  std::optional<int64_t> input, output;
  if (fields.output.empty()) output = 0;  // an API without output: nothing to read
  bool valid = true;
  for (auto entry : obj) {
    od::field field;
    if ((e = std::move(entry).get(field))) return std::nullopt;
    std::string_view key;
    if ((e = json::read_key(field, key))) return std::nullopt;
    if (key == fields.input || (!fields.output.empty() && key == fields.output)) {
      auto& slot = key == fields.input ? input : output;
      if (slot) valid = false;  // repeated: which one counts is ambiguous
      slot = read_count(field.value(), depth + 1, e);
      if (e) return std::nullopt;
      if (!slot) valid = false;
    } else if ((e = json::validate(field.value(), depth + 1))) {
      return std::nullopt;
    }
  }
  if (!valid || !input || !output) return std::nullopt;
  return core::Tokens{*input, *output};
}

}  // namespace cairva::wire
