#include "wire/json.h"

#include <cstring>

#include "base/assert.h"
#include "wire/limits.h"

namespace cairva::wire::json {

Scratch::Scratch() {
  // Only the depth matters here: capacity grows on first use to the document's size.
  CAIRVA_ASSERT(parser_.allocate(0, json_depth_max) == simdjson::SUCCESS);
}

simdjson::simdjson_result<od::document> Scratch::iterate(std::string_view text) {
  const size_t needed = text.size() + simdjson::SIMDJSON_PADDING;
  if (needed > capacity_) {
    buffer_ = std::make_unique_for_overwrite<char[]>(needed);
    capacity_ = needed;
  }
  if (!text.empty()) std::memcpy(buffer_.get(), text.data(), text.size());
  // The padding must not look like a continuation of the document to stage 1.
  std::memset(buffer_.get() + text.size(), ' ', simdjson::SIMDJSON_PADDING);
  return parser_.iterate(buffer_.get(), text.size(), capacity_);
}

Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

bool use_thread_scratch(size_t text_bytes) { return text_bytes <= json_scratch_retained_bytes_max; }

simdjson::error_code validate(od::value v, int depth) {
  if (depth > json_depth_max) return simdjson::DEPTH_ERROR;
  od::json_type type;
  if (auto e = v.type().get(type)) return e;
  switch (type) {
    case od::json_type::object: {
      od::object obj;
      if (auto e = v.get_object().get(obj)) return e;
      for (auto member : obj) {
        od::field field;
        if (auto e = std::move(member).get(field)) return e;
        std::string_view key;
        if (auto e = read_key(field, key)) return e;
        if (auto e = validate(field.value(), depth + 1)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::array: {
      od::array arr;
      if (auto e = v.get_array().get(arr)) return e;
      for (auto element : arr) {
        od::value item;
        if (auto e = std::move(element).get(item)) return e;
        if (auto e = validate(item, depth + 1)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::string: {
      std::string_view s;
      return read_string(v, s);
    }
    case od::json_type::number: {
      od::number n;
      return v.get_number().get(n);
    }
    case od::json_type::boolean: {
      bool b;
      return v.get_bool().get(b);
    }
    case od::json_type::null: {
      bool is_null = false;
      if (auto e = v.is_null().get(is_null)) return e;
      return is_null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
    }
  }
  return simdjson::INCORRECT_TYPE;
}

simdjson::error_code read_string(od::value& v, std::string_view& out) {
  const std::string_view token = trim_right(v.raw_json_token());
  if (token.size() < 2 || token.front() != '"') return simdjson::INCORRECT_TYPE;
  const std::string_view inside = token.substr(1, token.size() - 2);
  if (std::memchr(inside.data(), '\\', inside.size()) == nullptr) {
    // Consumed without unescaping. It must be consumed: On-Demand skipping an unread value
    // also steps over a stray ':' or ',' after it without complaint.
    od::raw_json_string raw;
    if (auto e = v.get_raw_json_string().get(raw)) return e;
    out = inside;
    return simdjson::SUCCESS;
  }
  return v.get_string().get(out);
}

simdjson::error_code read_key(od::field& f, std::string_view& out) {
  // The name runs to the first quote unless a backslash comes first; stage 1 guarantees
  // the closing quote, and the padding keeps the scan inside the buffer.
  const char* begin = f.key().raw();
  const char* p = begin;
  while (*p != '"' && *p != '\\') ++p;
  if (*p == '"') {
    out = std::string_view(begin, static_cast<size_t>(p - begin));
    return simdjson::SUCCESS;
  }
  return f.unescaped_key().get(out);
}

int64_t count_code_points(std::string_view utf8) {
  // A continuation byte is 10xxxxxx: bit 7 set and bit 6 clear. Eight bytes at a time,
  // each byte of `lanes` counting its column's continuation bytes (flushed before a lane
  // can pass 255). No popcount: the baseline x86-64 target has none in hardware.
  constexpr uint64_t high_bits = 0x8080808080808080ull;
  constexpr uint64_t low_bytes = 0x00FF00FF00FF00FFull;
  constexpr size_t words_per_flush = 255;
  const char* p = utf8.data();
  size_t left = utf8.size();
  int64_t continuation = 0;
  while (left >= 8) {
    uint64_t lanes = 0;
    for (size_t k = 0; k < words_per_flush && left >= 8; ++k, p += 8, left -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      lanes += (w & ~(w << 1) & high_bits) >> 7;
    }
    const uint64_t pairs = (lanes & low_bytes) + ((lanes >> 8) & low_bytes);  // four 16-bit sums
    continuation += static_cast<int64_t>((pairs * 0x0001000100010001ull) >> 48);
  }
  for (; left > 0; --left, ++p) {
    continuation += (static_cast<unsigned char>(*p) & 0xC0) == 0x80;
  }
  return static_cast<int64_t>(utf8.size()) - continuation;
}

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

simdjson::simdjson_result<size_t> end_of_consumed(od::document& doc, const char* base) {
  const char* next = nullptr;
  if (auto e = doc.current_location().get(next)) return e;
  while (next > base && is_space(next[-1])) --next;
  return static_cast<size_t>(next - base);
}

SpanStart span_start(od::value& v, const char* base) {
  const std::string_view token = trim_right(v.raw_json_token());
  SpanStart s;
  s.offset = static_cast<size_t>(token.data() - base);
  s.container = !token.empty() && (token.front() == '{' || token.front() == '[');
  s.scalar_size = token.size();
  return s;
}

simdjson::error_code span_end(const SpanStart& start, od::document& doc, const char* base, size_t& end) {
  if (!start.container) {
    end = start.offset + start.scalar_size;
    return simdjson::SUCCESS;
  }
  return end_of_consumed(doc, base).get(end);
}

std::string_view reason(simdjson::error_code e) { return simdjson::error_message(e); }

}  // namespace cairva::wire::json
