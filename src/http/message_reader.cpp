#include "http/message_reader.h"

#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <utility>

#include "http/limits.h"

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

bool only_chunked_coding(std::string_view transfer_encoding) {
  // The field is a comma-separated list whose empty elements are ignored (RFC 9110 section
  // 5.6.1); every element must be the bare token: a parameter or another coding is refused.
  bool any = false;
  while (!transfer_encoding.empty()) {
    const size_t comma = transfer_encoding.find(',');
    std::string_view coding = transfer_encoding.substr(0, comma);
    transfer_encoding.remove_prefix(comma == std::string_view::npos ? transfer_encoding.size()
                                                                    : comma + 1);
    while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t'))
      coding.remove_prefix(1);
    while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t'))
      coding.remove_suffix(1);
    if (coding.empty()) continue;
    if (!boost::beast::iequals(boost::beast::string_view(coding.data(), coding.size()), "chunked"))
      return false;
    any = true;
  }
  return any;
}

TextSpan RequestReader::keep(string_view value) { return append_kept(text_, value); }

void RequestReader::keep_joined(TextSpan& span, string_view value) {
  if (!span.found) {
    span = keep(value);
    return;
  }
  // The joined value must stay one run of the text: when another field was kept after it,
  // it moves to the end once (the other kept fields are kept once each, so this copies a
  // bounded number of times, never once per line).
  if (span.begin + span.size != text_.size()) {
    const size_t moved = text_.size();
    text_.append(text_, span.begin, span.size);
    span.begin = moved;
  }
  text_.append(list_separator);
  text_.append(value.data(), value.size());
  span.size = text_.size() - span.begin;
}

void RequestReader::on_request_impl(bhttp::verb method, string_view method_str, string_view target,
                                    int version, error_code&) {
  method_ = method;
  method_text_ = keep(method_str);
  target_ = keep(target);
  version_ = static_cast<unsigned>(version);  // Beast accepts 1.0 and 1.1 only
}

void RequestReader::on_field_impl(bhttp::field name, string_view name_string, string_view value,
                                  error_code&) {
  switch (name) {
    case bhttp::field::authorization:
      if (!authorization_.found) authorization_ = keep(value);
      break;
    case bhttp::field::expect:
      expects_continue_ = expects_continue_ || boost::beast::iequals(value, "100-continue");
      break;
    case bhttp::field::transfer_encoding:
      transfer_encoding_ = true;
      other_transfer_coding_ = other_transfer_coding_ ||
                               !only_chunked_coding(std::string_view(value.data(), value.size()));
      break;
    case bhttp::field::unknown:
      // Fields Beast has no name for: the Anthropic dialect's key and version fields.
      if (boost::beast::iequals(name_string, "anthropic-beta")) {
        keep_joined(anthropic_beta_, value);
        break;
      }
      for (auto [field_name, span] : {std::pair{"x-api-key", &x_api_key_},
                                      std::pair{"anthropic-version", &anthropic_version_}}) {
        if (!span->found && boost::beast::iequals(name_string, field_name)) *span = keep(value);
      }
      break;
    default:
      break;
  }
}

// Beast frames a request by its Transfer-Encoding only when the final coding is chunked;
// otherwise it reads no body, and the body's bytes would be parsed as the next request.
void RequestReader::on_header_impl(error_code& ec) {
  if (transfer_encoding_ && (other_transfer_coding_ || !chunked()))
    ec = bhttp::error::bad_transfer_encoding;
}

size_t RequestReader::on_body_impl(string_view body, error_code& ec) {
  const size_t need = body_.size() + body.size();
  if (need > body_.capacity()) {
    // Grows as std::string would (doubling, up to the body limit), the room taken from
    // the budget before it is allocated.
    const size_t room = std::max(need, std::min(2 * body_.capacity(), request_body_bytes_max));
    if (lease_ && !lease_->grow_to(room)) {
      ec = body_budget_exhausted;
      return 0;
    }
    body_.reserve(room);
  }
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

void ResponseReader::on_field_impl(bhttp::field, string_view name_string, string_view value,
                                   error_code&) {
  for (size_t i = 0; i < kept_fields.size(); ++i) {
    if (fields_[i].found || !boost::beast::iequals(name_string, kept_fields[i])) continue;
    fields_[i] = append_kept(text_, value);
    return;
  }
}

void ResponseReader::on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                                       error_code&) {
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
