#include "wire/json.h"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "base/assert.h"
#include "wire/limits.h"

namespace cairva::wire::json {
namespace {

// The value of the four hex digits at `p`, or -1 when one is not a hex digit.
int32_t hex4(const char* p) {
  int32_t value = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = p[i];
    int32_t digit;
    if (c >= '0' && c <= '9')
      digit = c - '0';
    else if (c >= 'a' && c <= 'f')
      digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      digit = c - 'A' + 10;
    else
      return -1;
    value = value * 16 + digit;
  }
  return value;
}

// The length in bytes of the escape at `p` (a backslash in a string's contents that end
// at `end`), checked exactly as simdjson's unescaping checks it: 0 for an unknown escape,
// a u-escape without four hex digits, or a lone surrogate. Every escape unescapes to one
// code point, a surrogate pair's two escapes together too.
ptrdiff_t escape_length(const char* p, const char* end) {
  if (end - p < 2) return 0;  // not reached: stage 1 found the closing quote
  switch (p[1]) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
      return 2;
    case 'u':
      break;
    default:
      return 0;
  }
  constexpr ptrdiff_t u_escape_bytes = 6;  // backslash, 'u', four hex digits
  if (end - p < u_escape_bytes) return 0;
  const int32_t unit = hex4(p + 2);
  if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return 0;
  if (unit < 0xD800 || unit > 0xDBFF) return u_escape_bytes;
  // A high surrogate: the low one must follow at once.
  if (end - p < 2 * u_escape_bytes || p[6] != '\\' || p[7] != 'u') return 0;
  const int32_t low = hex4(p + 8);
  if (low < 0xDC00 || low > 0xDFFF) return 0;
  return 2 * u_escape_bytes;
}

// The code points of a string's raw contents once unescaped, and its escapes checked:
// STRING_ERROR for a bad one. The bytes of an escape are ASCII, so the count is the raw
// count less, for each escape, its length less one.
class StringScan {
 public:
  explicit StringScan(std::string_view inside)
      : begin_(inside.data()), end_(inside.data() + inside.size()), escaped_to_(begin_) {}

  // The escape at `p`, unless an escape read before covers it (the second backslash of
  // "\\", the low half of a surrogate pair). False when it is malformed.
  bool escape_at(const char* p) {
    if (p < escaped_to_) return true;
    const ptrdiff_t n = escape_length(p, end_);
    if (n == 0) return false;
    excess_ += n - 1;
    escaped_to_ = p + n;
    return true;
  }
  int64_t code_points(int64_t continuation) const {
    return (end_ - begin_) - continuation - excess_;
  }

 private:
  const char* begin_;
  const char* end_;
  const char* escaped_to_;  // bytes before it belong to an escape already read
  int64_t excess_ = 0;
};

#if defined(__SSE2__)
// Byte lanes of a 16-byte block, counted before the sums are flushed: a lane may count
// up to 255 before it wraps.
constexpr size_t blocks_per_flush = 255;

// 0xFF in the lanes holding a continuation byte, 10xxxxxx: as a signed byte, -128..-65.
inline __m128i continuation_lanes(__m128i block) {
  return _mm_cmplt_epi8(block, _mm_set1_epi8(-64));
}

// The sum of the 16 byte lanes of `counts`.
inline int64_t sum_lanes(__m128i counts) {
  const __m128i sums = _mm_sad_epu8(counts, _mm_setzero_si128());  // two sums of eight, each < 2^16
  return _mm_extract_epi16(sums, 0) + _mm_extract_epi16(sums, 4);
}

// The continuation bytes among the eight bytes of `w`: bit 7 set and bit 6 clear.
inline int64_t continuation_in_word(uint64_t w) {
  const uint64_t ones = (w & ~(w << 1) & 0x8080808080808080ull) >> 7;  // 1 in each such byte
  return static_cast<int64_t>((ones * 0x0101010101010101ull) >> 56);   // their sum, at most 8
}

// The continuation bytes among the `n` (< 16) bytes at `p`: what is left after the whole
// blocks, and the whole of a member name or a short value. Two loads, the second
// overlapping the first with the bytes counted already shifted out (little-endian: the
// first bytes are the low ones), instead of a loop of up to 15 bytes.
int64_t continuation_in_short(const char* p, size_t n) {
  static_assert(std::endian::native == std::endian::little);
  if (n >= 8) {
    uint64_t first, last;
    std::memcpy(&first, p, 8);
    std::memcpy(&last, p + n - 8, 8);
    const size_t overlap = 16 - n;  // 1..8
    return continuation_in_word(first) +
           (overlap < 8 ? continuation_in_word(last >> (8 * overlap)) : 0);
  }
  if (n >= 4) {
    uint32_t first, last;
    std::memcpy(&first, p, 4);
    std::memcpy(&last, p + n - 4, 4);
    const size_t overlap = 8 - n;  // 1..4
    const uint32_t rest = overlap < 4 ? last >> (8 * overlap) : 0;
    return continuation_in_word(first | uint64_t{rest} << 32);
  }
  int64_t continuation = 0;
  for (size_t i = 0; i < n; ++i) continuation += (static_cast<unsigned char>(p[i]) & 0xC0) == 0x80;
  return continuation;
}

// 0xFF in the first `n` lanes (n < 16).
inline __m128i first_lanes(size_t n) {
  const __m128i index = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return _mm_cmplt_epi8(index, _mm_set1_epi8(static_cast<char>(n)));
}

// Counts the continuation bytes of the whole 16-byte blocks at `p` into `continuation`,
// moving `p` and `left` past them, and hands each block to on_block(address, block).
// False, with the counts of the blocks before it lost, as soon as on_block says false.
template <class OnBlock>
bool count_whole_blocks(const char*& p, size_t& left, int64_t& continuation, OnBlock&& on_block) {
  while (left >= 16) {
    __m128i counts = _mm_setzero_si128();
    const size_t blocks = std::min(left / 16, blocks_per_flush);
    for (size_t k = 0; k < blocks; ++k, p += 16) {
      const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      counts = _mm_sub_epi8(counts, continuation_lanes(block));
      if (!on_block(p, block)) return false;
    }
    left -= blocks * 16;
    continuation += sum_lanes(counts);
  }
  return true;
}

// StringScan over `inside` sixteen bytes at a time, in one pass: continuation bytes
// counted, backslashes found, escapes read where they are. Reads up to 15 bytes past the
// end (and ignores them): REQUIRES they are readable, as a document's padding is.
simdjson::error_code scan_string(std::string_view inside, int64_t& code_points) {
  StringScan scan(inside);
  const __m128i backslash = _mm_set1_epi8('\\');
  const char* p = inside.data();
  size_t left = inside.size();
  int64_t continuation = 0;
  // Reads the escapes at the bits of `mask`, backslashes in the block at `block`.
  auto escapes = [&scan](const char* block, uint32_t mask) {
    for (; mask != 0; mask &= mask - 1) {
      if (!scan.escape_at(block + std::countr_zero(mask))) return false;
    }
    return true;
  };
  auto on_block = [&](const char* at, __m128i block) {
    const auto mask = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, backslash)));
    return mask == 0 || escapes(at, mask);
  };
  if (!count_whole_blocks(p, left, continuation, on_block)) return simdjson::STRING_ERROR;
  if (left > 0) {
    const __m128i block =
        _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), first_lanes(left));
    continuation += sum_lanes(_mm_sub_epi8(_mm_setzero_si128(), continuation_lanes(block)));
    const auto mask = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(block, backslash)));
    if (mask != 0 && !escapes(p, mask)) return simdjson::STRING_ERROR;
  }
  code_points = scan.code_points(continuation);
  return simdjson::SUCCESS;
}
#else
simdjson::error_code scan_string(std::string_view inside, int64_t& code_points) {
  StringScan scan(inside);
  const char* const end = inside.data() + inside.size();
  for (const char* p = inside.data(); p < end; ++p) {
    if (*p == '\\' && !scan.escape_at(p)) return simdjson::STRING_ERROR;
  }
  code_points = scan.code_points(static_cast<int64_t>(inside.size()) - count_code_points(inside));
  return simdjson::SUCCESS;
}
#endif

}  // namespace

Scratch::Scratch() {
  // Only the depth matters here: capacity grows on first use to the document's size. One
  // level more than json_depth_max: validate() opens a container at json_depth_max before
  // it refuses the value inside, and simdjson's development checks (on in Debug builds)
  // assert depth < max_depth for every container opened; release builds do not check.
  CAIRVA_ASSERT(parser_.allocate(0, json_depth_max + 1) == simdjson::SUCCESS);
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
  base_ = buffer_.get();
  return parser_.iterate(buffer_.get(), text.size(), capacity_);
}

simdjson::simdjson_result<od::document> Scratch::iterate_in_place(std::string_view text) {
  base_ = text.data();
  return parser_.iterate(text.data(), text.size(), text.size() + simdjson::SIMDJSON_PADDING);
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
        if (auto e = member.error()) return e;
        od::field& field = member.value_unsafe();  // used in place: copying a field out is slow
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
        if (auto e = element.error()) return e;
        if (auto e = validate(element.value_unsafe(), depth + 1)) return e;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::string: {
      int64_t chars = 0;  // only the checks matter here
      return count_string(v, chars);
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
#if defined(__SSE2__)
  // Sixteen bytes at a time (reading into the padding is allowed, as for count_string).
  for (;; p += 16) {
    const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const auto stops = static_cast<uint32_t>(_mm_movemask_epi8(_mm_or_si128(
        _mm_cmpeq_epi8(block, _mm_set1_epi8('"')), _mm_cmpeq_epi8(block, _mm_set1_epi8('\\')))));
    if (stops != 0) {
      p += std::countr_zero(stops);
      break;
    }
  }
#else
  while (*p != '"' && *p != '\\') ++p;
#endif
  if (*p == '"') {
    out = std::string_view(begin, static_cast<size_t>(p - begin));
    return simdjson::SUCCESS;
  }
  return f.unescaped_key().get(out);
}

simdjson::error_code count_string(od::value& v, int64_t& chars) {
  const std::string_view token = trim_right(v.raw_json_token());
  if (token.size() < 2 || token.front() != '"') return simdjson::INCORRECT_TYPE;
  int64_t code_points = 0;
  if (auto e = scan_string(token.substr(1, token.size() - 2), code_points)) return e;
  // Consumed without unescaping: the count and the checks above need only the raw bytes.
  od::raw_json_string raw;
  if (auto e = v.get_raw_json_string().get(raw)) return e;
  chars += code_points;
  return simdjson::SUCCESS;
}

int64_t count_code_points(std::string_view utf8) {
#if defined(__SSE2__)
  const char* p = utf8.data();
  size_t left = utf8.size();
  int64_t continuation = 0;
  count_whole_blocks(p, left, continuation, [](const char*, __m128i) { return true; });
  continuation += continuation_in_short(p, left);
  return static_cast<int64_t>(utf8.size()) - continuation;
#else
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
#endif
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

simdjson::error_code span_end(const SpanStart& start, od::document& doc, const char* base,
                              size_t& end) {
  if (!start.container) {
    end = start.offset + start.scalar_size;
    return simdjson::SUCCESS;
  }
  return end_of_consumed(doc, base).get(end);
}

std::string_view reason(simdjson::error_code e) { return simdjson::error_message(e); }

}  // namespace cairva::wire::json
