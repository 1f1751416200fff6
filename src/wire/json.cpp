#include "wire/json.h"

#include <bit>
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
        if (auto e = field.unescaped_key().get(key)) return e;
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
      return v.get_string().get(s);
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

int64_t count_code_points(std::string_view utf8) {
  // A continuation byte is 10xxxxxx: bit 7 set and bit 6 clear.
  constexpr uint64_t high_bits = 0x8080808080808080ull;
  const char* p = utf8.data();
  size_t left = utf8.size();
  int64_t continuation = 0;
  while (left >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    continuation += std::popcount(w & ~(w << 1) & high_bits);
    p += 8;
    left -= 8;
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

std::string_view reason(simdjson::error_code e) { return simdjson::error_message(e); }

}  // namespace cairva::wire::json
