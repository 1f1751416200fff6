// Internal helpers over simdjson On-Demand shared by the wire parsers: a padded parsing
// scratch, a validating walk, code point counting and byte offsets. Not included by the
// public headers, so simdjson stays an implementation detail of cairva_wire.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace cairva::wire::json {

namespace od = simdjson::ondemand;

// Depth of a top-level member's value (the top-level object is depth 1).
inline constexpr int member_depth = 2;

// A parser plus a padded copy of the document it iterates. On-Demand reads up to
// SIMDJSON_PADDING bytes past the end, and the strings we are given (Beast bodies, SSE
// lines) promise no such slack, hence the copy. Not thread-safe; one per thread.
class Scratch {
 public:
  Scratch();
  // Copies `text` into the padded buffer and starts iterating it. The document and every
  // view it yields stay valid until the next call. Offsets of the views from base() are
  // offsets into `text`.
  simdjson::simdjson_result<od::document> iterate(std::string_view text);
  // Iterates `text` where it lies, without the copy. REQUIRES: the SIMDJSON_PADDING bytes
  // after `text` are readable and initialized (not part of the document), and they and
  // `text` stay unchanged until the next call.
  simdjson::simdjson_result<od::document> iterate_in_place(std::string_view text);
  // The document's first byte. REQUIRES: read after iterate(), which may move the buffer.
  const char* base() const { return base_; }
  size_t retained_bytes() const { return capacity_; }

 private:
  od::parser parser_;
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;  // bytes of buffer_, padding included
  const char* base_ = nullptr;
};

// Runs fn(Scratch&) with this thread's retained scratch, or with a temporary one when
// `text_bytes` is above json_scratch_retained_bytes_max. The wire functions never suspend
// nor re-enter each other, so one scratch per thread is enough.
template <class Fn>
decltype(auto) with_scratch(size_t text_bytes, Fn&& fn);

Scratch& thread_scratch();
bool use_thread_scratch(size_t text_bytes);

template <class Fn>
decltype(auto) with_scratch(size_t text_bytes, Fn&& fn) {
  if (use_thread_scratch(text_bytes)) return fn(thread_scratch());
  Scratch own;
  return fn(own);
}

// Consumes `v` completely so that every byte of it is checked: structure, numbers,
// literals, string escapes. On-Demand skips what it is not asked for without checking it,
// and a malformed body must not reach the provider. `depth` is v's nesting depth.
// REQUIRES: `v` is in a document iterated by a Scratch (see count_string).
simdjson::error_code validate(od::value v, int depth);

// A string value's contents, consumed: a view of the document's own bytes when they hold
// no escape (stage 1 already checked them, and most strings have nothing to unescape),
// else unescaped into the parser's buffer. INCORRECT_TYPE when `v` is not a string.
simdjson::error_code read_string(od::value& v, std::string_view& out);
// A member's name, the same way. REQUIRES: as for count_string.
simdjson::error_code read_key(od::field& f, std::string_view& out);

// Reads `data` as one JSON object: fn(doc, key, value) for each member in order, up to the
// first false, then refuses bytes after the object. False when `data` is not one valid JSON
// object or fn returned false. What SSE event scanners share: an event they cannot read
// whole passes through untouched.
template <class Fn>
bool scan_object(Scratch& scratch, std::string_view data, Fn&& fn) {
  od::document doc;
  if (scratch.iterate(data).get(doc)) return false;
  od::object obj;
  if (doc.get_object().get(obj)) return false;
  for (auto entry : obj) {
    od::field field;
    if (std::move(entry).get(field)) return false;
    std::string_view key;
    if (read_key(field, key)) return false;
    if (!fn(doc, key, field.value())) return false;
  }
  const char* next = nullptr;
  return doc.current_location().get(next) != simdjson::SUCCESS;  // nothing after the object
}

// Adds the code points of string value `v`, once unescaped, to `chars`, consuming it. The
// escapes are checked as simdjson's unescaping checks them (STRING_ERROR), but counted in
// the document's own bytes: nothing is unescaped. INCORRECT_TYPE, with `v` left unread, when
// `v` is not a string.
// REQUIRES: `v` is in a document iterated by a Scratch, whose padding the scan may read
// into (and ignore).
simdjson::error_code count_string(od::value& v, int64_t& chars);

// Unicode code points in valid UTF-8 (simdjson validated it): bytes that are not
// continuation bytes, counted sixteen (SSE2) or eight at a time.
int64_t count_code_points(std::string_view utf8);

// JSON insignificant whitespace.
inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// `s` without trailing JSON whitespace.
std::string_view trim_right(std::string_view s);

// Where a value starts in the document, taken before it is read. A scalar's end is known
// at once; a container's only after it is consumed (see span_end). read_string does not
// consume, hence the distinction.
struct SpanStart {
  size_t offset = 0;
  size_t scalar_size = 0;
  bool container = false;
};
SpanStart span_start(od::value& v, const char* base);
// The offset just past the value; call once the value has been read.
simdjson::error_code span_end(const SpanStart& start, od::document& doc, const char* base,
                              size_t& end);

// Offset just past the value the iterator has consumed: the next structural character
// (',', '}' or ']') with the whitespace before it stepped back over.
simdjson::simdjson_result<size_t> end_of_consumed(od::document& doc, const char* base);

// "request body is not valid JSON (<simdjson's reason>)"-style text for an error code.
std::string_view reason(simdjson::error_code e);

}  // namespace cairva::wire::json
