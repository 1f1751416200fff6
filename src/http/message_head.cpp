#include "http/message_head.h"

#include <boost/beast/http/status.hpp>
#include <charconv>
#include <cstring>

#include "base/assert.h"

namespace cairva::http {
namespace {

// Room for a status line and the gateway's usual fields in one allocation.
constexpr size_t head_reserve_bytes = 512;
// What a field adds to its name and value: ": " and CRLF.
constexpr size_t field_framing_bytes = 4;

// Writes "name: value\r\n" at `p` (room for it reserved) and returns the end.
char* write_field(char* p, std::string_view name, std::string_view value) {
  std::memcpy(p, name.data(), name.size());
  p += name.size();
  *p++ = ':';
  *p++ = ' ';
  if (!value.empty())
    std::memcpy(p, value.data(), value.size());  // an empty view's data may be null
  p += value.size();
  *p++ = '\r';
  *p++ = '\n';
  return p;
}

// Two memchr scans: string_view::find_first_of calls memchr once per character.
bool is_safe_value(std::string_view v) {
  return std::memchr(v.data(), '\r', v.size()) == nullptr &&
         std::memchr(v.data(), '\n', v.size()) == nullptr;
}

}  // namespace

Decimal::Decimal(int64_t value) {
  const auto [end, ec] = std::to_chars(chars_.data(), chars_.data() + chars_.size(), value);
  size_ = static_cast<size_t>(end - chars_.data());
}

MessageHead::MessageHead(unsigned version, size_t reserve) : version_(version) {
  text_.reserve(reserve);
}

MessageHead MessageHead::response(unsigned status, unsigned version) {
  CAIRVA_ASSERT(status >= 100 && status <= 999);  // the gateway's own or a checked provider status
  // The request's version is the client's (Beast reads any "HTTP/d.d"): the answer is 1.1,
  // or 1.0 to a 1.0 (or older) client.
  MessageHead h(version >= 11 ? 11 : 10, head_reserve_bytes);
  h.status_ = status;
  h.text_ += h.version_ == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  char code[4];
  std::to_chars(code, code + 3, status);
  h.text_.append(code, 3);
  h.text_ += ' ';
  const auto reason =
      boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status));
  h.text_.append(reason.data(), reason.size());
  h.text_ += "\r\n";
  return h;
}

MessageHead MessageHead::request(std::string_view method, std::string_view target) {
  MessageHead h(11, head_reserve_bytes + target.size());
  h.text_.append(method);
  h.text_ += ' ';
  h.text_.append(target);
  h.text_ += " HTTP/1.1\r\n";
  return h;
}

void MessageHead::add(std::string_view name, std::string_view value) {
  if (is_safe_value(value)) append_field(name, value);
}

void MessageHead::add(std::string_view name, int64_t value) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  append_field(name,
               std::string_view(buf, static_cast<size_t>(end - buf)));  // digits: nothing to check
}

void MessageHead::add_formatted(std::initializer_list<Field> fields) {
  size_t bytes = 0;
  for (const Field& f : fields) bytes += f.name.size() + f.value.size() + field_framing_bytes;
  const size_t at = text_.size();
  text_.resize(at + bytes);
  char* p = text_.data() + at;
  for (const Field& f : fields) p = write_field(p, f.name, f.value);
}

// One resize and copies instead of four appends: the gateway writes ~8 fields per response.
void MessageHead::append_field(std::string_view name, std::string_view value) {
  const size_t at = text_.size();
  text_.resize(at + name.size() + value.size() + field_framing_bytes);
  write_field(text_.data() + at, name, value);
}

void MessageHead::finish_connection(bool keep_alive) {
  if (version_ == 11 && !keep_alive) text_ += "Connection: close\r\n";
  if (version_ == 10 && keep_alive) text_ += "Connection: keep-alive\r\n";
}

const std::string& MessageHead::finish(size_t content_length, bool keep_alive) {
  add("Content-Length", static_cast<int64_t>(content_length));
  finish_connection(keep_alive);
  text_ += "\r\n";
  return text_;
}

const std::string& MessageHead::finish_chunked(bool keep_alive) {
  text_ += "Transfer-Encoding: chunked\r\n";
  finish_connection(keep_alive);
  text_ += "\r\n";
  return text_;
}

}  // namespace cairva::http
