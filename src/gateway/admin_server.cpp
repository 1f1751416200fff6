#include "gateway/admin_server.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "base/ids.h"
#include "console/assets.h"
#include "gateway/console_http.h"
#include "http/executor.h"
#include "http/limits.h"
#include "http/linger.h"
#include "http/message_reader.h"
#include "wire/errors.h"

namespace cairva::gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

namespace {

admin::AdminResponse error_response(ErrorCode code, std::string_view message) {
  return admin::AdminResponse{http_status(code), wire::error_body(code, message)};
}

// Every Transfer-Encoding field names chunked alone (see http::only_chunked_coding).
bool framed_by_chunked(const bhttp::request_parser<bhttp::string_body>& parser) {
  const auto& fields = parser.get();
  auto [begin, end] = fields.equal_range(bhttp::field::transfer_encoding);
  if (begin == end) return true;
  for (auto it = begin; it != end; ++it) {
    const auto v = it->value();
    if (!http::only_chunked_coding(std::string_view(v.data(), v.size()))) return false;
  }
  return parser.chunked();
}

}  // namespace

net::awaitable<void> admin_session(admin::AdminApi& api, const AdminSessionOptions& options,
                                   net::ip::tcp::socket socket,
                                   std::shared_ptr<http::Connection> connection) {
  using http::nothrow;
  beast::tcp_stream stream(std::move(socket));
  connection->on_shed([&stream] { stream.close(); });
  beast::flat_buffer buffer;
  bool first_request = true;
  bool unread = false;  // closing with request bytes unread: discard them first
  for (;;) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(http::request_header_bytes_max));
    parser.body_limit(admin_body_bytes_max);
    if (buffer.size() == 0) {
      // Idle until the request's first byte: a fresh connection gets the short wait.
      stream.expires_after(std::chrono::seconds(first_request ? options.first_byte_timeout_s
                                                              : http::idle_timeout_s));
      http::Connection::Idle idle(*connection);
      auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096), nothrow);
      if (ec) break;
      buffer.commit(n);
    }
    first_request = false;
    stream.expires_after(std::chrono::seconds(http::header_read_timeout_s));
    auto [ec, n] = co_await bhttp::async_read_header(stream, buffer, parser, nothrow);
    if (ec == bhttp::error::end_of_stream || ec == net::error::eof || ec == beast::error::timeout)
      break;
    admin::AdminResponse out;
    const console::Asset* asset = nullptr;  // a console file instead of `out`
    bool keep_alive = false;
    bool head_only = false;
    const bool has_body = !ec && (parser.chunked() || parser.content_length().value_or(0) > 0);
    unread = true;  // until the body is read
    if (ec == bhttp::error::header_limit) {
      out = error_response(ErrorCode::headers_too_large, "request headers exceed 16 KiB");
    } else if (ec == bhttp::error::bad_transfer_encoding || (!ec && !framed_by_chunked(parser))) {
      out = error_response(
          ErrorCode::invalid_request,
          "Transfer-Encoding must be chunked alone, without Content-Length (RFC 9112 section 6.1)");
    } else if (ec ==
               bhttp::error::body_limit) {  // Beast checks an announced length with the header
      out = error_response(ErrorCode::request_too_large, "admin request body exceeds 4 MiB");
    } else if (ec) {
      out = error_response(ErrorCode::invalid_request, "malformed HTTP request: " + ec.message());
    } else {
      auto& req = parser.get();
      // A client waiting for 100 Continue gets it: every refusal above came instead of it.
      if (has_body && req.version() >= 11 && buffer.size() == 0 &&
          beast::iequals(req[bhttp::field::expect], "100-continue")) {
        stream.expires_after(std::chrono::seconds(http::client_write_timeout_s));
        static constexpr std::string_view continue_text = "HTTP/1.1 100 Continue\r\n\r\n";
        auto [cec, cn] = co_await net::async_write(stream, net::buffer(continue_text), nothrow);
        if (cec) break;
      }
      stream.expires_after(std::chrono::seconds(http::body_read_timeout_s));
      auto [bec, bn] = co_await bhttp::async_read(stream, buffer, parser, nothrow);
      if (bec == bhttp::error::body_limit) {
        out = error_response(ErrorCode::request_too_large, "admin request body exceeds 4 MiB");
      } else if (bec) {
        break;  // gone, or too slow (the stream's timeout closed it)
      } else {
        unread = false;
        keep_alive = req.keep_alive();
        head_only = req.method() == bhttp::verb::head;
        const std::string_view target(req.target().data(), req.target().size());
        if (console::is_console_path(target)) {
          const ConsoleAnswer answer =
              console_answer(console::Audience::operators, req.method(), target);
          asset = answer.asset;
          if (asset == nullptr) out = error_response(answer.error, answer.message);
        } else {
          admin::AdminRequest in{std::string(req.method_string()), std::string(target),
                                 std::string(req[bhttp::field::authorization]),
                                 std::move(req.body())};
          out = api.handle(in);
        }
      }
    }
    if (asset != nullptr)
      out = admin::AdminResponse{200, std::string(asset->body), std::string(asset->content_type)};
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(out.status), 11};
    res.set(bhttp::field::content_type, out.content_type);
    res.set("x-cairva-request-id", new_id("req"));
    if (asset != nullptr) {
      res.set(bhttp::field::cache_control, asset->cache_control);
      for (const auto& [name, value] : console::security_headers) res.set(name, value);
    }
    res.keep_alive(keep_alive);
    const size_t body_size = out.body.size();
    if (!head_only) res.body() = std::move(out.body);
    res.prepare_payload();
    if (head_only) res.content_length(body_size);  // a HEAD's answer: the GET's length, no body
    stream.expires_after(std::chrono::seconds(http::client_write_timeout_s));
    auto [wec, wn] = co_await bhttp::async_write(stream, res, nothrow);
    if (wec || !keep_alive) break;
  }
  if (connection->shed() || !stream.socket().is_open()) co_return;
  boost::system::error_code ignored;
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  if (unread) {
    http::Connection::Idle idle(*connection);  // discarding is the first thing to give up
    co_await http::discard_until_closed(stream, buffer,
                                        [&stream](auto d) { stream.expires_after(d); });
  }
}

}  // namespace cairva::gateway
