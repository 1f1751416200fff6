// UpstreamConnection: one keep-alive connection to a provider, plain TCP or TLS (with
// certificate and host name verification), and UpstreamPool: the idle connections of
// one event loop. Neither is thread-safe: each event loop owns its own pool.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "base/result.h"
#include "upstream/provider_endpoint.h"

namespace cairva::upstream {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
inline constexpr auto nothrow = net::as_tuple(net::use_awaitable);

class UpstreamConnection {
 public:
  using Plain = beast::tcp_stream;
  using Tls = beast::ssl_stream<beast::tcp_stream>;

  explicit UpstreamConnection(Plain s) : stream_(std::move(s)) {}
  explicit UpstreamConnection(std::unique_ptr<Tls> s) : stream_(std::move(s)) {}

  beast::tcp_stream& tcp() {
    return stream_.index() == 0 ? std::get<0>(stream_) : beast::get_lowest_layer(*std::get<1>(stream_));
  }
  void expires_after(std::chrono::steady_clock::duration d) { tcp().expires_after(d); }
  void expires_never() { tcp().expires_never(); }
  beast::flat_buffer& buffer() { return buffer_; }
  // True once this connection has carried a complete exchange (it came from the pool).
  bool reused = false;

  template <class ConstBufferSequence>
  net::awaitable<error_code> write(const ConstBufferSequence& bytes) {
    error_code ec;
    if (stream_.index() == 0) {
      std::tie(ec, std::ignore) = co_await net::async_write(std::get<0>(stream_), bytes, nothrow);
    } else {
      std::tie(ec, std::ignore) = co_await net::async_write(*std::get<1>(stream_), bytes, nothrow);
    }
    co_return ec;
  }
  template <class Parser>
  net::awaitable<error_code> read_header(Parser& p) {
    error_code ec;
    if (stream_.index() == 0) {
      std::tie(ec, std::ignore) = co_await http::async_read_header(std::get<0>(stream_), buffer_, p, nothrow);
    } else {
      std::tie(ec, std::ignore) = co_await http::async_read_header(*std::get<1>(stream_), buffer_, p, nothrow);
    }
    co_return ec;
  }
  template <class Parser>
  net::awaitable<error_code> read(Parser& p) {
    error_code ec;
    if (stream_.index() == 0) {
      std::tie(ec, std::ignore) = co_await http::async_read(std::get<0>(stream_), buffer_, p, nothrow);
    } else {
      std::tie(ec, std::ignore) = co_await http::async_read(*std::get<1>(stream_), buffer_, p, nothrow);
    }
    co_return ec;
  }
  template <class Parser>
  net::awaitable<error_code> read_some(Parser& p) {
    error_code ec;
    if (stream_.index() == 0) {
      std::tie(ec, std::ignore) = co_await http::async_read_some(std::get<0>(stream_), buffer_, p, nothrow);
    } else {
      std::tie(ec, std::ignore) = co_await http::async_read_some(*std::get<1>(stream_), buffer_, p, nothrow);
    }
    co_return ec;
  }

 private:
  std::variant<Plain, std::unique_ptr<Tls>> stream_;
  beast::flat_buffer buffer_;
};

// Connection failures are values: provider_unavailable (refused, DNS, TLS) or
// provider_timeout (no connection within the provider's timeout).
class UpstreamPool {
 public:
  // `tls` verifies against the system trust store; a provider with a ca_file gets its own
  // context (created on first use) that also trusts that file.
  UpstreamPool(net::any_io_executor ex, net::ssl::context& tls) : ex_(std::move(ex)), tls_(tls) {}

  net::awaitable<Result<std::unique_ptr<UpstreamConnection>>> acquire(const ProviderEndpoint& ep);
  // Returns a connection whose last exchange ended cleanly with keep-alive.
  void release(const ProviderEndpoint& ep, std::unique_ptr<UpstreamConnection> conn);

 private:
  net::awaitable<Result<std::unique_ptr<UpstreamConnection>>> connect(const ProviderEndpoint& ep);
  Result<net::ssl::context*> tls_for(const ProviderEndpoint& ep);

  net::any_io_executor ex_;
  net::ssl::context& tls_;
  std::unordered_map<std::string, std::vector<std::unique_ptr<UpstreamConnection>>> idle_;
  std::unordered_map<std::string, tcp::resolver::results_type> resolved_;
  std::unordered_map<std::string, std::unique_ptr<net::ssl::context>> provider_tls_;
};

// A TLS client context verifying certificates against the system store.
std::unique_ptr<net::ssl::context> make_client_tls_context();
// The same, also trusting the CA certificates in `ca_file` (PEM).
Result<std::unique_ptr<net::ssl::context>> make_client_tls_context(const std::string& ca_file);

}  // namespace cairva::upstream
