#include "cli/admin_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <chrono>

namespace cairva::cli {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

Result<HttpReply> admin_http(const std::string& admin_url, const std::string& token,
                             const HttpCall& call) {
  auto url = boost::urls::parse_absolute_uri(admin_url);
  if (!url || url->scheme() != "http" || url->host().empty()) {
    return make_error(ErrorCode::invalid_request,
                      "admin URL must look like http://HOST:PORT, got \"" + admin_url + "\"");
  }
  const std::string host(url->host());
  const std::string port = url->has_port() ? std::string(url->port()) : "80";
  std::string prefix(url->encoded_path());
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  const auto fail = [&](const std::string& what, const boost::system::error_code& ec) {
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
  bhttp::write(stream, req, ec);
  if (ec) return fail("cannot send the request", ec);

  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(admin_reply_bytes_max);
  bhttp::read(stream, buffer, parser, ec);
  if (ec) return fail("no valid answer", ec);
  stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
  auto res = parser.release();
  return HttpReply{static_cast<int>(res.result_int()), std::move(res.body())};
}

}  // namespace cairva::cli
