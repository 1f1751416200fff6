#include "cli/admin_client.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
#include <chrono>
#include <optional>
#include <utility>

#include "base/call_within.h"

namespace cairva::cli {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

namespace {

constexpr auto nothrow = net::as_tuple(net::use_awaitable);

struct Target {
  std::string url;  // as given, for messages
  std::string host, port, prefix, host_and_port;
  bool tls = false;
  int timeout_s = admin_call_timeout_s;
};

Error failure(const Target& t, const std::string& what, const boost::system::error_code& ec) {
  const std::string why = ec == beast::error::timeout
                              ? "no answer within " + std::to_string(t.timeout_s) + " s"
                              : ec.message();
  return make_error(ErrorCode::provider_unavailable,
                    "admin API at " + t.url + ": " + what + ": " + why);
}

// Sends the request and reads the reply over a connected stream (TCP, or TLS over it).
// The deadline is the TCP stream's: Beast's timeouts apply to asynchronous operations only.
template <class Stream>
net::awaitable<Result<HttpReply>> exchange(Stream& stream,
                                           const bhttp::request<bhttp::string_body>& req,
                                           const Target& t) {
  auto [wec, wn] = co_await bhttp::async_write(stream, req, nothrow);
  if (wec) co_return failure(t, "cannot send the request", wec);
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(admin_reply_bytes_max);
  auto [rec, rn] = co_await bhttp::async_read(stream, buffer, parser, nothrow);
  if (rec) co_return failure(t, "no valid answer", rec);
  auto res = parser.release();
  co_return HttpReply{static_cast<int>(res.result_int()), std::move(res.body())};
}

using Endpoints = net::ip::tcp::resolver::results_type;

// getaddrinfo cannot be interrupted (Asio's resolver runs it on a thread and waits for it
// too): it runs on a thread of its own, and a call whose deadline passes stops waiting.
Result<Endpoints> resolve_within(const Target& t, std::chrono::steady_clock::time_point deadline) {
  auto answer = call_within(
      [host = t.host, port = t.port] {
        net::io_context ioc;
        net::ip::tcp::resolver resolver(ioc);
        boost::system::error_code ec;
        Endpoints endpoints = resolver.resolve(host, port, ec);
        return std::make_pair(ec, std::move(endpoints));
      },
      deadline);
  if (!answer) return failure(t, "cannot resolve " + t.host, beast::error::timeout);
  if (answer->first) return failure(t, "cannot resolve " + t.host, answer->first);
  return std::move(answer->second);
}

net::awaitable<Result<HttpReply>> call_admin(const Target& t, const Endpoints& endpoints,
                                             std::chrono::steady_clock::time_point deadline,
                                             const std::string& token, const HttpCall& call) {
  auto ex = co_await net::this_coro::executor;
  beast::tcp_stream stream(ex);
  stream.expires_at(deadline);  // covers every later operation on the stream
  auto [cec, ep] = co_await stream.async_connect(endpoints, nothrow);
  if (cec) co_return failure(t, "cannot connect (is `cairva serve` running?)", cec);

  bhttp::request<bhttp::string_body> req{bhttp::string_to_verb(call.method), t.prefix + call.target,
                                         11};
  req.set(bhttp::field::host, t.host_and_port);
  req.set(bhttp::field::user_agent, "cairva-cli");
  req.set(bhttp::field::authorization, "Bearer " + token);
  if (!call.body.empty()) req.set(bhttp::field::content_type, "application/json");
  req.body() = call.body;
  req.prepare_payload();
  if (!t.tls) co_return co_await exchange(stream, req, t);

  // The token is sent only to a server whose certificate the system's CAs (or OpenSSL's
  // SSL_CERT_FILE / SSL_CERT_DIR) vouch for, for this host name.
  net::ssl::context ctx(net::ssl::context::tls_client);
  boost::system::error_code ec;
  ctx.set_default_verify_paths(ec);
  if (ec) co_return failure(t, "cannot load the system's CA certificates", ec);
  beast::ssl_stream<beast::tcp_stream&> secure(stream, ctx);
  secure.set_verify_mode(net::ssl::verify_peer);
  secure.set_verify_callback(net::ssl::host_name_verification(t.host));
  boost::system::error_code not_ip;
  (void)net::ip::make_address(t.host, not_ip);
  // Server name indication names hosts, never addresses (RFC 6066 §3).
  if (not_ip && !SSL_set_tlsext_host_name(secure.native_handle(), t.host.c_str())) {
    co_return failure(
        t, "cannot set the TLS server name",
        beast::error_code(static_cast<int>(::ERR_get_error()), net::error::get_ssl_category()));
  }
  auto [hec] = co_await secure.async_handshake(net::ssl::stream_base::client, nothrow);
  if (hec) co_return failure(t, "TLS handshake failed", hec);
  // No TLS shutdown: the reply's framing says it is complete, and a peer that never
  // answers a close_notify would hold the command until the deadline.
  co_return co_await exchange(secure, req, t);
}

}  // namespace

Result<HttpReply> admin_http(const std::string& admin_url, const std::string& token,
                             const HttpCall& call) {
  auto url = boost::urls::parse_absolute_uri(admin_url);
  const bool tls = url && url->scheme() == "https";
  if (!url || !(tls || url->scheme() == "http") || url->host().empty()) {
    return make_error(ErrorCode::invalid_request,
                      "admin URL must look like http://HOST:PORT or https://HOST:PORT, got \"" +
                          admin_url + "\"");
  }
  Target t{admin_url,
           std::string(url->host()),
           url->has_port() ? std::string(url->port())
           : tls           ? "443"
                           : "80",
           std::string(url->encoded_path()),
           std::string(url->encoded_host_and_port()),
           tls,
           call.timeout_s};
  while (!t.prefix.empty() && t.prefix.back() == '/') t.prefix.pop_back();

  // One deadline for the whole call, name resolution included.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(t.timeout_s);
  auto endpoints = resolve_within(t, deadline);
  if (!endpoints) return endpoints.error();
  net::io_context ioc;
  std::optional<Result<HttpReply>> out;
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        out = co_await call_admin(t, *endpoints, deadline, token, call);
      },
      [&](const std::exception_ptr& e) {
        if (e)
          out = make_error(ErrorCode::provider_unavailable,
                           "admin API at " + admin_url + ": the call failed");
      });
  ioc.run();
  return std::move(*out);
}

}  // namespace cairva::cli
