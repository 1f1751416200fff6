// MessageHead: the head (start line and header fields) of a message the gateway writes,
// built as one string. The gateway's own messages have a handful of known fields, so one
// string and one gathered write with the body replace Beast's allocation per field and
// its serializer. Parsing what others send stays Beast's.
//
// Thread safety: none; a value type.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace cairva::http {

// A number's decimal text, held in place (no allocation), for MessageHead::add_formatted.
class Decimal {
 public:
  explicit Decimal(int64_t value);
  std::string_view view() const { return {chars_.data(), size_}; }

 private:
  std::array<char, 24> chars_;  // INT64_MIN is 20 characters
  size_t size_;
};

class MessageHead {
 public:
  struct Field {
    std::string_view name;
    std::string_view value;
  };

  // "HTTP/1.x <status> <reason>": 1.1, or 1.0 when `version` (the request's, as Beast
  // numbers it: 10 * major + minor) is below 11.
  static MessageHead response(unsigned status, unsigned version);
  // "<method> <target> HTTP/1.1".
  static MessageHead request(std::string_view method, std::string_view target);

  // `name` is a field name (a token: the gateway's own constants). A field whose value would
  // break the head (CR, LF) is left out: values may come from a provider's response.
  void add(std::string_view name, std::string_view value);
  void add(std::string_view name, int64_t value);
  // Fields whose values the gateway formatted itself (Decimal, wire::DurationText): no CR
  // or LF to look for, and one resize for them all (every response to a caller carries six
  // rate-limit fields). REQUIRES: no value holds CR or LF.
  void add_formatted(std::initializer_list<Field> fields);

  // Ends the head for a body of `content_length` bytes, or a chunked one. Connection is
  // written only where HTTP/1.x's default differs from `keep_alive` (as Beast does).
  const std::string& finish(size_t content_length, bool keep_alive);
  const std::string& finish_chunked(bool keep_alive);

  unsigned status() const { return status_; }  // 0 for a request

 private:
  MessageHead(unsigned version, size_t reserve);
  void append_field(std::string_view name, std::string_view value);
  void finish_connection(bool keep_alive);

  std::string text_;
  unsigned version_ = 11;
  unsigned status_ = 0;
};

}  // namespace cairva::http
