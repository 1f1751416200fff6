#include "cli/printable.h"

#include <cstdint>

namespace cairva::cli {
namespace {

constexpr unsigned char del = 0x7f;
constexpr char32_t c1_first = 0x80;
constexpr char32_t c1_last = 0x9f;

// The length of the well-formed UTF-8 sequence at the start of `s` (Unicode 15, table 3-7),
// 0 when its first byte does not start one; `code_point` receives its value.
size_t utf8_sequence(std::string_view s, char32_t& code_point) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    length = 2;
    code_point = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    length = 3;
    code_point = b0 & 0x0f;
    if (b0 == 0xe0) low = 0xa0;   // overlong
    if (b0 == 0xed) high = 0x9f;  // surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    length = 4;
    code_point = b0 & 0x07;
    if (b0 == 0xf0) low = 0x90;   // overlong
    if (b0 == 0xf4) high = 0x8f;  // past U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    const unsigned char b = byte(i);
    if (b < (i == 1 ? low : 0x80) || b > (i == 1 ? high : 0xbf)) return 0;
    code_point = (code_point << 6) | (b & 0x3f);
  }
  return length;
}

void append_hex(std::string& out, const char* prefix, uint32_t value, int digits) {
  static constexpr char hex[] = "0123456789abcdef";
  out += prefix;
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out += hex[(value >> shift) & 0xf];
}

}  // namespace

std::string printable(std::string_view text, Escaping escaping) {
  const bool json = escaping == Escaping::json;
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      const bool json_whitespace = b == '\t' || b == '\n' || b == '\r';
      if (b < 0x20 || b == del) {
        if (json && json_whitespace) {
          out += static_cast<char>(b);
        } else {
          append_hex(out, json ? "\\u00" : "\\x", b, 2);
        }
      } else if (b == '\\' && !json) {
        out += "\\\\";
      } else {
        out += static_cast<char>(b);
      }
      ++i;
      continue;
    }
    char32_t code_point = 0;
    const size_t length = utf8_sequence(text.substr(i), code_point);
    if (length == 0) {
      if (json) {
        out += "\\ufffd";
      } else {
        append_hex(out, "\\x", b, 2);
      }
      ++i;
    } else if (code_point >= c1_first && code_point <= c1_last) {
      append_hex(out, "\\u", static_cast<uint32_t>(code_point), 4);
      i += length;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

}  // namespace cairva::cli
