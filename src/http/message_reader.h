// RequestReader and ResponseReader: Beast parsers that keep only what the gateway reads of
// a message. Beast's basic_parser does all the parsing (syntax, header and body limits,
// chunked framing, keep-alive); these classes are its documented extension point and
// store the start line, a few named fields and the body. A full beast::http::parser also
// copies every field into a basic_fields, an allocation per field of every proxied message.
#pragma once

#include <array>
#include <boost/asio/error.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/verb.hpp>
#include <cstddef>
#include <string>
#include <string_view>

#include "http/body_budget.h"

namespace cairva::http {

// Most of a provider's announced Content-Length reserved up front; a longer body grows
// as it arrives (and stops at the parser's body limit).
inline constexpr size_t response_reserve_bytes_max = size_t{1} << 20;

// Where a kept field's value lies in a reader's text: offsets, since the text may grow.
struct TextSpan {
  size_t begin = 0;
  size_t size = 0;
  bool found = false;
};

// True when a Transfer-Encoding value names only the chunked coding (once or more; the
// parser refuses "chunked, chunked" itself). The gateway decodes no other coding, and a
// request whose final coding is not chunked has no length a server can trust
// (RFC 9112 §6.1: 400 and close), so any other coding refuses the request.
bool only_chunked_coding(std::string_view transfer_encoding);

// What RequestReader's parse fails with when a chunked body would grow past the
// process's body budget (BodyLease): the request gets 503, not the memory.
inline constexpr auto body_budget_exhausted = boost::asio::error::no_buffer_space;

class RequestReader final : public boost::beast::http::basic_parser<true> {
 public:
  // `text` holds the target and the kept fields; it is the connection's, so its capacity
  // is reused from one request to the next.
  explicit RequestReader(std::string& text) : text_(text) { text_.clear(); }

  boost::beast::http::verb method() const { return method_; }
  std::string_view method_text() const { return view(method_text_); }
  std::string_view target() const { return view(target_); }
  unsigned version() const { return version_; }
  // The first Authorization field's value; empty without one.
  std::string_view authorization() const { return view(authorization_); }
  // The first x-api-key field's value (the key as Anthropic's clients send it); empty
  // without one.
  std::string_view x_api_key() const { return view(x_api_key_); }
  // The first anthropic-version field's value and every anthropic-beta field's values
  // joined into one list (", " between lines, as RFC 9110 section 5.3 combines a list field's
  // lines), passed on to an Anthropic provider; empty without one.
  std::string_view anthropic_version() const { return view(anthropic_version_); }
  std::string_view anthropic_beta() const { return view(anthropic_beta_); }
  // The body read so far. Reserve before reading it to parse in place (wire::in_place_slack_bytes).
  std::string& body() { return body_; }
  // An "Expect: 100-continue" field: the client waits for 100 Continue before its body.
  bool expects_continue() const { return expects_continue_; }
  // Takes the room the body grows to from `lease` (a chunked body; an announced length is
  // the caller's to take before reserving it): past the budget the parse fails with
  // body_budget_exhausted. Null: no budget.
  void body_lease(BodyLease* lease) { lease_ = lease; }

 private:
  using string_view = boost::beast::string_view;
  using error_code = boost::system::error_code;
  std::string_view view(const TextSpan& s) const {
    return std::string_view(text_).substr(s.begin, s.size);
  }
  TextSpan keep(string_view value);
  // Keeps `value` as the first value of a list field, or appends it to `span`'s list.
  void keep_joined(TextSpan& span, string_view value);
  // What joins a list field's lines into one value (RFC 9110 section 5.3).
  static constexpr std::string_view list_separator = ", ";

  void on_request_impl(boost::beast::http::verb method, string_view method_str, string_view target,
                       int version, error_code& ec) override;
  void on_response_impl(int, string_view, int, error_code&) override {}
  void on_field_impl(boost::beast::http::field name, string_view name_string, string_view value,
                     error_code& ec) override;
  void on_header_impl(error_code& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  size_t on_body_impl(string_view body, error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) override;
  void on_finish_impl(error_code&) override {}

  std::string& text_;
  std::string body_;
  boost::beast::http::verb method_ = boost::beast::http::verb::unknown;
  TextSpan method_text_, target_, authorization_, x_api_key_, anthropic_version_, anthropic_beta_;
  unsigned version_ = 11;
  bool expects_continue_ = false;
  bool transfer_encoding_ = false;      // a Transfer-Encoding field was sent
  bool other_transfer_coding_ = false;  // one named a coding other than chunked
  BodyLease* lease_ = nullptr;
};

class ResponseReader final : public boost::beast::http::basic_parser<false> {
 public:
  // The response fields the gateway reads (the provider's id, OpenAI's or Anthropic's,
  // those passed on to the client, and a 429's Retry-After), matched without regard to case.
  static constexpr std::array<std::string_view, 4> kept_fields = {
      "x-request-id", "openai-processing-ms", "retry-after", "request-id"};
  static constexpr size_t request_id_field = 0;

  unsigned status() const { return status_; }
  // A kept field's value (kept_fields[i]); empty when the provider sent none.
  std::string_view field(size_t i) const;
  bool has_field(size_t i) const { return fields_[i].found; }
  // The body read so far (or, streaming, since the caller last cleared it).
  std::string& body() { return body_; }
  // Streaming: the body holds at most `bytes` at a time; the parser then stops with
  // error::need_buffer until the caller clears it, as with Beast's buffer_body.
  void hold_at_most(size_t bytes) { hold_max_ = bytes; }

 private:
  using string_view = boost::beast::string_view;
  using error_code = boost::system::error_code;
  size_t take(string_view body, error_code& ec);

  void on_request_impl(boost::beast::http::verb, string_view, string_view, int,
                       error_code&) override {}
  void on_response_impl(int code, string_view reason, int version, error_code& ec) override;
  void on_field_impl(boost::beast::http::field name, string_view name_string, string_view value,
                     error_code& ec) override;
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         error_code& ec) override;
  size_t on_body_impl(string_view body, error_code& ec) override { return take(body, ec); }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) override {
    return take(body, ec);
  }
  void on_finish_impl(error_code&) override {}

  std::string text_;  // the kept fields' values
  std::string body_;
  std::array<TextSpan, kept_fields.size()> fields_{};
  unsigned status_ = 0;
  size_t hold_max_ = 0;  // 0: no bound but the parser's body limit
};

}  // namespace cairva::http
