// The real provider client behind the upstream seam (upstream.h): UpstreamConnection, one
// keep-alive connection to a provider, plain TCP or TLS (with certificate and host name
// verification), and UpstreamPool: the idle connections of one event loop. Neither is
// thread-safe: each event loop owns its own pool. Only this file and connection.cpp (and
// the wiring in serve.cpp) include Beast's client headers.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "base/result.h"
#include "http/buffered_parse.h"
#include "http/deadline.h"
#include "http/executor.h"
#include "http/message_reader.h"
#include "upstream/provider_endpoint.h"
#include "upstream/upstream.h"

namespace cairva::upstream {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;
using cairva::http::Socket;
using cairva::http::Task;
using cairva::http::task_nothrow;

// One keep-alive connection and, once a request went out on it, the response being read.
class UpstreamConnection final : public Response {
 public:
  using Tls = beast::ssl_stream<Socket>;

  // A connected socket; with `tls`, TLS on it once handshake() succeeds.
  explicit UpstreamConnection(Socket s) : stream_(std::move(s)), deadline_(std::get<0>(stream_)) {}
  UpstreamConnection(Socket s, net::ssl::context& tls)
      : stream_(std::make_unique<Tls>(std::move(s), tls)),
        deadline_(beast::get_lowest_layer(*std::get<1>(stream_))) {}
  // The deadline watches the socket by address: the connection stays where it was made.
  UpstreamConnection(const UpstreamConnection&) = delete;
  UpstreamConnection& operator=(const UpstreamConnection&) = delete;

  // Response. The response's reader exists from start_response() on.
  unsigned status() const override { return reader_->status(); }
  std::string_view field(Field f) const override { return reader_->field(static_cast<size_t>(f)); }
  bool has_field(Field f) const override { return reader_->has_field(static_cast<size_t>(f)); }
  bool keep_alive() const override { return reader_->keep_alive(); }
  bool complete() const override { return reader_->is_done(); }
  std::string& body() override { return reader_->body(); }
  // Every operation after now + d fails with beast::error::timeout. A deadline that moves
  // later costs no timer operation (http::Deadline), unlike beast::tcp_stream's timer per
  // operation.
  void expires_after(std::chrono::steady_clock::duration d) override { deadline_.expires_after(d); }
  std::optional<ReadStatus> body_buffered(size_t bytes_max) override;
  Task<Outcome> read_body() override {
    if (stream_.index() == 0)
      return http::async_read(std::get<0>(stream_), buffer_, *reader_, task_nothrow);
    return http::async_read(*std::get<1>(stream_), buffer_, *reader_, task_nothrow);
  }
  void hold_at_most(size_t bytes) override {
    reader_->body_limit(boost::none);  // a stream is bounded by time (in-flight timeout), not size
    reader_->hold_at_most(bytes);
  }
  Task<Outcome> read_some() override {
    if (stream_.index() == 0)
      return http::async_read_some(std::get<0>(stream_), buffer_, *reader_, task_nothrow);
    return http::async_read_some(*std::get<1>(stream_), buffer_, *reader_, task_nothrow);
  }
  ReadStatus status_of(const Outcome& o) const override;

  // The pool's side. The operations below are not coroutines but the Asio operations' own
  // awaitables (one coroutine frame and resumption fewer per call). Each yields
  // (error_code, bytes); error_of() maps it, as beast::tcp_stream did, to
  // beast::error::timeout when the deadline cancelled the operation.
  void expires_never() { deadline_.clear(); }
  Tls* tls() { return stream_.index() == 1 ? std::get<1>(stream_).get() : nullptr; }
  Task<error_code> handshake() {
    auto [ec] = co_await tls()->async_handshake(net::ssl::stream_base::client, task_nothrow);
    co_return timed_out(ec);
  }
  error_code error_of(const Outcome& o) const { return timed_out(std::get<0>(o)); }
  template <class ConstBufferSequence>
  Task<Outcome> write(const ConstBufferSequence& bytes) {
    if (stream_.index() == 0) return net::async_write(std::get<0>(stream_), bytes, task_nothrow);
    return net::async_write(*std::get<1>(stream_), bytes, task_nothrow);
  }
  // A fresh reader for the next response, then its head.
  void start_response();
  Task<Outcome> read_header() {
    if (stream_.index() == 0)
      return http::async_read_header(std::get<0>(stream_), buffer_, *reader_, task_nothrow);
    return http::async_read_header(*std::get<1>(stream_), buffer_, *reader_, task_nothrow);
  }
  // True when `ec` (from sending or reading the head) is how a connection the provider
  // closed while it sat idle fails: reset, broken pipe or end of stream, before any
  // response byte arrived.
  bool closed_while_idle(error_code ec) const;

  // True once this connection has carried a complete exchange (it came from the pool).
  bool reused = false;
  // When it last went back to the pool.
  std::chrono::steady_clock::time_point idle_since;

 private:
  // An operation the deadline cancelled reports a timeout, as beast::tcp_stream's did.
  error_code timed_out(error_code ec) const {
    return ec && deadline_.expired() ? error_code(beast::error::timeout) : ec;
  }

  std::variant<Socket, std::unique_ptr<Tls>> stream_;
  cairva::http::Deadline deadline_;
  beast::flat_buffer buffer_;
  std::optional<cairva::http::ResponseReader> reader_;
};

// The real provider client: the idle connections of one event loop, each provider's
// kept at most upstream_idle_connections_max and at most upstream_idle_keepalive_s.
// Connection failures are values: provider_unavailable (refused, DNS, TLS) or
// provider_timeout (no connection within the provider's timeout).
class UpstreamPool final : public Upstream {
 public:
  // `tls` verifies against the system trust store; a provider with a ca_file gets its own
  // context (created on first use) that also trusts that file.
  UpstreamPool(cairva::http::Executor ex, net::ssl::context& tls) : ex_(std::move(ex)), tls_(tls) {}
  // The event loop's executor, of the data path's type.
  const cairva::http::Executor& executor() const { return ex_; }

  // Upstream. A reused idle connection that fails before any response byte (the provider
  // closed it while idle) is retried once, on a fresh connection: another idle one may be
  // just as stale (SPEC §5).
  Task<Result<std::unique_ptr<Response>>> send(const ProviderEndpoint& ep,
                                               const Request& req) override;
  void release(const ProviderEndpoint& ep, std::unique_ptr<Response> response) override;

  // An idle connection to `ep` (marked reused) idle for less than
  // upstream_idle_keepalive_s, or null: then connect().
  std::unique_ptr<UpstreamConnection> take_idle(const ProviderEndpoint& ep);
  Task<Result<std::unique_ptr<UpstreamConnection>>> connect(const ProviderEndpoint& ep);
  // Idle connections to `ep` held now (for tests).
  size_t idle_count(const ProviderEndpoint& ep) const;

 private:
  Result<net::ssl::context*> tls_for(const ProviderEndpoint& ep);

  cairva::http::Executor ex_;
  net::ssl::context& tls_;
  // Per provider, oldest first: taken from the back, expired from the front.
  std::unordered_map<std::string, std::vector<std::unique_ptr<UpstreamConnection>>> idle_;
  std::unordered_map<std::string, tcp::resolver::results_type> resolved_;
  std::unordered_map<std::string, std::unique_ptr<net::ssl::context>> provider_tls_;
};

// A TLS client context verifying certificates against the system store.
std::unique_ptr<net::ssl::context> make_client_tls_context();
// The same, also trusting the CA certificates in `ca_file` (PEM).
Result<std::unique_ptr<net::ssl::context>> make_client_tls_context(const std::string& ca_file);

}  // namespace cairva::upstream
