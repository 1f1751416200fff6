#include "cli/admin_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
#include <chrono>
#include <functional>

namespace cairva::cli {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using Fail = std::function<Error(const std::string&, const boost::system::error_code&)>;

namespace {

// Sends the request and reads the reply over a connected stream (TCP, or TLS over it).
template <class Stream>
Result<HttpReply> exchange(Stream& stream, const bhttp::request<bhttp::string_body>& req, const Fail& fail) {
  boost::system::error_code ec;
  bhttp::write(stream, req, ec);
  if (ec) return fail("cannot send the request", ec);
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(admin_reply_bytes_max);
  bhttp::read(stream, buffer, parser, ec);
  if (ec) return fail("no valid answer", ec);
  auto res = parser.release();
  return HttpReply{static_cast<int>(res.result_int()), std::move(res.body())};
}

}  // namespace

Result<HttpReply> admin_http(const std::string& admin_url, const std::string& token,
                             const HttpCall& call) {
  auto url = boost::urls::parse_absolute_uri(admin_url);
  const bool tls = url && url->scheme() == "https";
  if (!url || !(tls || url->scheme() == "http") || url->host().empty()) {
    return make_error(ErrorCode::invalid_request,
                      "admin URL must look like http://HOST:PORT or https://HOST:PORT, got \"" + admin_url + "\"");
  }
  const std::string host(url->host());
  const std::string port = url->has_port() ? std::string(url->port()) : tls ? "443" : "80";
  std::string prefix(url->encoded_path());
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  const Fail fail = [&](const std::string& what, const boost::system::error_code& ec) {
    return make_error(ErrorCode::provider_unavailable,
                      "admin API at " + admin_url + ": " + what + ": " + ec.message());
  };

  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  boost::system::error_code ec;
  net::ip::tcp::resolver resolver(ioc);
  auto endpoints = resolver.resolve(host, port, ec);
  if (ec) return fail("cannot resolve " + host, ec);
  stream.expires_after(std::chrono::seconds(admin_call_timeout_s));
  stream.connect(endpoints, ec);
  if (ec) return fail("cannot connect (is `cairva serve` running?)", ec);

  bhttp::request<bhttp::string_body> req{bhttp::string_to_verb(call.method), prefix + call.target,
                                         11};
  req.set(bhttp::field::host, url->encoded_host_and_port());
  req.set(bhttp::field::user_agent, "cairva-cli");
  req.set(bhttp::field::authorization, "Bearer " + token);
  if (!call.body.empty()) req.set(bhttp::field::content_type, "application/json");
  req.body() = call.body;
  req.prepare_payload();
  if (!tls) {
    auto reply = exchange(stream, req, fail);
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
    return reply;
  }
  // The token is sent only to a server whose certificate the system's CAs (or OpenSSL's
  // SSL_CERT_FILE / SSL_CERT_DIR) vouch for, for this host name.
  net::ssl::context ctx(net::ssl::context::tls_client);
  ctx.set_default_verify_paths(ec);
  if (ec) return fail("cannot load the system's CA certificates", ec);
  beast::ssl_stream<beast::tcp_stream&> secure(stream, ctx);
  secure.set_verify_mode(net::ssl::verify_peer);
  secure.set_verify_callback(net::ssl::host_name_verification(host));
  boost::system::error_code not_ip;
  (void)net::ip::make_address(host, not_ip);
  // Server name indication names hosts, never addresses (RFC 6066 §3).
  if (not_ip && !SSL_set_tlsext_host_name(secure.native_handle(), host.c_str())) {
    return fail("cannot set the TLS server name", beast::error_code(static_cast<int>(::ERR_get_error()),
                                                                    net::error::get_ssl_category()));
  }
  secure.handshake(net::ssl::stream_base::client, ec);
  if (ec) return fail("TLS handshake failed", ec);
  auto reply = exchange(secure, req, fail);
  secure.shutdown(ec);  // a peer that just closes is fine: the reply is complete
  return reply;
}

}  // namespace cairva::cli
