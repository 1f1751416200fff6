#include "http/message_reader.h"

#include <algorithm>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

namespace cairva::http {

namespace bhttp = boost::beast::http;

namespace {

// Appends a kept value to a reader's text and says where it lies.
TextSpan append_kept(std::string& text, boost::beast::string_view value) {
  TextSpan s{text.size(), value.size(), true};
  text.append(value.data(), value.size());
  return s;
}

}  // namespace

TextSpan RequestReader::keep(string_view value) { return append_kept(text_, value); }

void RequestReader::on_request_impl(bhttp::verb method, string_view method_str, string_view target, int version,
                                    error_code&) {
  method_ = method;
  method_text_ = keep(method_str);
  target_ = keep(target);
  version_ = static_cast<unsigned>(version);  // Beast accepts 1.0 and 1.1 only
}

void RequestReader::on_field_impl(bhttp::field name, string_view, string_view value, error_code&) {
  if (name == bhttp::field::authorization && !authorization_.found) authorization_ = keep(value);
}

size_t RequestReader::on_body_impl(string_view body, error_code&) {
  body_.append(body.data(), body.size());  // the parser's body limit bounds it
  return body.size();
}

size_t RequestReader::on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) {
  return on_body_impl(body, ec);
}

std::string_view ResponseReader::field(size_t i) const {
  return std::string_view(text_).substr(fields_[i].begin, fields_[i].size);
}

void ResponseReader::on_response_impl(int code, string_view, int, error_code&) {
  status_ = static_cast<unsigned>(code);  // three digits: Beast checks
}

void ResponseReader::on_field_impl(bhttp::field, string_view name_string, string_view value, error_code&) {
  for (size_t i = 0; i < kept_fields.size(); ++i) {
    if (fields_[i].found || !boost::beast::iequals(name_string, kept_fields[i])) continue;
    fields_[i] = append_kept(text_, value);
    return;
  }
}

void ResponseReader::on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code&) {
  // The announced length is the provider's word: the gateway refuses one over its body
  // limit before reading the body (chat.cpp), but reserving up to that limit for every
  // response on the provider's say-so would still waste memory: reserve it only when small.
  if (content_length && hold_max_ == 0 && *content_length <= response_reserve_bytes_max) {
    body_.reserve(static_cast<size_t>(*content_length));
  }
}

size_t ResponseReader::take(string_view body, error_code& ec) {
  size_t n = body.size();
  if (hold_max_ > 0) {
    n = std::min(n, hold_max_ - std::min(hold_max_, body_.size()));
    if (n < body.size()) ec = bhttp::error::need_buffer;
  }
  body_.append(body.data(), n);
  return n;
}

}  // namespace cairva::http
