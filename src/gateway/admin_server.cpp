#include "gateway/admin_server.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "base/ids.h"
#include "http/limits.h"

namespace cairva::gateway {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

net::awaitable<void> admin_session(admin::AdminApi& api, net::ip::tcp::socket socket) {
  constexpr auto nothrow = net::as_tuple(net::use_awaitable);
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(http::request_header_bytes_max));
    parser.body_limit(admin_body_bytes_max);
    stream.expires_after(std::chrono::seconds(http::idle_timeout_s));
    auto [ec, n] = co_await bhttp::async_read(stream, buffer, parser, nothrow);
    if (ec == bhttp::error::end_of_stream || ec == net::error::eof) break;
    admin::AdminResponse out;
    bool keep_alive = false;
    if (ec == bhttp::error::body_limit) {
      out = admin::AdminResponse{413, R"({"error":{"type":"request_too_large","code":"request_too_large","message":"admin request body exceeds 1 MiB"}})"};
    } else if (ec == bhttp::error::header_limit) {
      out = admin::AdminResponse{431, R"({"error":{"type":"headers_too_large","code":"headers_too_large","message":"request headers too large"}})"};
    } else if (ec) {
      break;
    } else {
      auto& req = parser.get();
      keep_alive = req.keep_alive();
      admin::AdminRequest in{std::string(req.method_string()), std::string(req.target()),
                             std::string(req[bhttp::field::authorization]), std::move(req.body())};
      out = api.handle(in);
    }
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(out.status), 11};
    res.set(bhttp::field::content_type, out.content_type);
    res.set("x-cairva-request-id", new_id("req"));
    res.keep_alive(keep_alive);
    res.body() = std::move(out.body);
    res.prepare_payload();
    stream.expires_after(std::chrono::seconds(http::client_write_timeout_s));
    auto [wec, wn] = co_await bhttp::async_write(stream, res, nothrow);
    if (wec || !keep_alive) break;
  }
  boost::system::error_code ignored;
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
}

}  // namespace cairva::gateway
