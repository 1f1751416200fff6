#include "wire/errors.h"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

namespace cairva::wire {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t min_for_length[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < min_for_length[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// `s` as a JSON string literal. Boost.JSON escapes quotes and control characters but
// copies other bytes as they are, so invalid UTF-8 is replaced first.
std::string quoted(std::string_view s) {
  std::string valid;
  valid.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence(s, i);
    if (n == 0) {
      valid.append("\xEF\xBF\xBD");
      ++i;
    } else {
      valid.append(s.substr(i, n));
      i += n;
    }
  }
  return boost::json::serialize(boost::json::string(valid));
}

}  // namespace

std::string json_quoted(std::string_view text) { return quoted(text); }

std::string error_body(ErrorCode code, std::string_view message, std::string_view limit) {
  const std::string name = quoted(wire_name(code));
  std::string out =
      "{\"error\":{\"type\":" + name + ",\"code\":" + name + ",\"message\":" + quoted(message);
  if (code == ErrorCode::rate_limited && !limit.empty()) out += ",\"limit\":" + quoted(limit);
  out += "}}";
  return out;
}

std::string_view anthropic_error_type(int status) {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 402:
      return "billing_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 408:
      return "timeout_error";
    case 413:
    case 431:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 504:
      return "timeout_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

std::string anthropic_error_body(int status, ErrorCode code, std::string_view message,
                                 std::string_view limit) {
  std::string out = "{\"type\":\"error\",\"error\":{\"type\":\"";
  out += anthropic_error_type(status);
  out += "\",\"message\":" + quoted(message) + ",\"code\":" + quoted(wire_name(code));
  if (code == ErrorCode::rate_limited && !limit.empty()) out += ",\"limit\":" + quoted(limit);
  out += "}}";
  return out;
}

}  // namespace cairva::wire
