// UpstreamConnection: one keep-alive connection to a provider, plain TCP or TLS (with
// certificate and host name verification), and UpstreamPool: the idle connections of
// one event loop. Neither is thread-safe: each event loop owns its own pool.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <tuple>
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
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "base/result.h"
#include "http/buffered_parse.h"
#include "http/deadline.h"
#include "http/executor.h"
#include "upstream/provider_endpoint.h"

namespace cairva::upstream {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using cairva::http::Socket;
using cairva::http::Task;
using cairva::http::task_nothrow;

class UpstreamConnection {
 public:
  using Tls = beast::ssl_stream<Socket>;

  // A connected socket; with `tls`, TLS on it once handshake() succeeds.
  explicit UpstreamConnection(Socket s) : stream_(std::move(s)), deadline_(std::get<0>(stream_)) {}
  UpstreamConnection(Socket s, net::ssl::context& tls)
      : stream_(std::make_unique<Tls>(std::move(s), tls)), deadline_(beast::get_lowest_layer(*std::get<1>(stream_))) {}
  // The deadline watches the socket by address: the connection stays where it was made.
  UpstreamConnection(const UpstreamConnection&) = delete;
  UpstreamConnection& operator=(const UpstreamConnection&) = delete;

  // Every operation after now + d fails with beast::error::timeout. A deadline that moves
  // later costs no timer operation (http::Deadline), unlike beast::tcp_stream's timer per
  // operation.
  void expires_after(std::chrono::steady_clock::duration d) { deadline_.expires_after(d); }
  void expires_never() { deadline_.clear(); }
  // True once this connection has carried a complete exchange (it came from the pool).
  bool reused = false;

  Tls* tls() { return stream_.index() == 1 ? std::get<1>(stream_).get() : nullptr; }

  Task<error_code> handshake() {
    auto [ec] = co_await tls()->async_handshake(net::ssl::stream_base::client, task_nothrow);
    co_return timed_out(ec);
  }
  // The operations below are not coroutines but the Asio operations' own awaitables: one
  // coroutine frame and one resumption fewer per call, on every request.
  // Each yields (error_code, bytes); error_of() maps it, as beast::tcp_stream did, to
  // beast::error::timeout when the deadline cancelled the operation.
  using Outcome = std::tuple<error_code, std::size_t>;
  error_code error_of(const Outcome& o) const { return timed_out(std::get<0>(o)); }
  template <class ConstBufferSequence>
  Task<Outcome> write(const ConstBufferSequence& bytes) {
    if (stream_.index() == 0) return net::async_write(std::get<0>(stream_), bytes, task_nothrow);
    return net::async_write(*std::get<1>(stream_), bytes, task_nothrow);
  }
  template <class Parser>
  Task<Outcome> read_header(Parser& p) {
    if (stream_.index() == 0) return http::async_read_header(std::get<0>(stream_), buffer_, p, task_nothrow);
    return http::async_read_header(*std::get<1>(stream_), buffer_, p, task_nothrow);
  }
  // Parses what the buffer already holds: true when that ends the message (or fails it:
  // `ec`), else read() the rest.
  template <class Parser>
  bool parse_buffered(Parser& p, error_code& ec) {
    return cairva::http::parse_buffered(p, buffer_, false, ec);
  }
  template <class Parser>
  Task<Outcome> read(Parser& p) {
    if (stream_.index() == 0) return http::async_read(std::get<0>(stream_), buffer_, p, task_nothrow);
    return http::async_read(*std::get<1>(stream_), buffer_, p, task_nothrow);
  }
  template <class Parser>
  Task<Outcome> read_some(Parser& p) {
    if (stream_.index() == 0) return http::async_read_some(std::get<0>(stream_), buffer_, p, task_nothrow);
    return http::async_read_some(*std::get<1>(stream_), buffer_, p, task_nothrow);
  }

 private:
  // An operation the deadline cancelled reports a timeout, as beast::tcp_stream's did.
  error_code timed_out(error_code ec) const { return ec && deadline_.expired() ? error_code(beast::error::timeout) : ec; }

  std::variant<Socket, std::unique_ptr<Tls>> stream_;
  cairva::http::Deadline deadline_;
  beast::flat_buffer buffer_;
};

// Connection failures are values: provider_unavailable (refused, DNS, TLS) or
// provider_timeout (no connection within the provider's timeout).
class UpstreamPool {
 public:
  // `tls` verifies against the system trust store; a provider with a ca_file gets its own
  // context (created on first use) that also trusts that file.
  UpstreamPool(cairva::http::Executor ex, net::ssl::context& tls) : ex_(ex), tls_(tls) {}
  // The event loop's executor, of the data path's type.
  const cairva::http::Executor& executor() const { return ex_; }

  // An idle connection to `ep` (marked reused), or null: then connect(). Two calls, not one
  // coroutine: the common case, a pooled connection, costs no coroutine frame.
  std::unique_ptr<UpstreamConnection> take_idle(const ProviderEndpoint& ep);
  Task<Result<std::unique_ptr<UpstreamConnection>>> connect(const ProviderEndpoint& ep);
  // Returns a connection whose last exchange ended cleanly with keep-alive.
  void release(const ProviderEndpoint& ep, std::unique_ptr<UpstreamConnection> conn);

 private:
  Result<net::ssl::context*> tls_for(const ProviderEndpoint& ep);

  cairva::http::Executor ex_;
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
