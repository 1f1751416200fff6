// UpstreamPool against an in-process provider that closes each connection once it has
// answered, as a provider's keep-alive timeout does to an idle one (SPEC §5: a reused idle
// connection that fails before any response byte is retried once, on a fresh connection).
#include "upstream/connection.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <string>
#include <vector>

namespace cairva::upstream {
namespace {

// Answers one request per connection with a keep-alive 200 and then closes it. Calls
// `on_closed` each time a connection has been closed.
class ClosingProvider {
 public:
  explicit ClosingProvider(net::io_context& ctx)
      : acceptor_(ctx, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
    net::co_spawn(ctx, accept_loop(), net::detached);
  }
  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  int accepted = 0;
  int closed = 0;
  std::function<void()> on_closed;
  void stop() {
    error_code ignored;
    acceptor_.close(ignored);
  }

 private:
  net::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(net::as_tuple(net::use_awaitable));
      if (ec) co_return;
      ++accepted;
      net::co_spawn(acceptor_.get_executor(), serve(std::move(socket)), net::detached);
    }
  }
  net::awaitable<void> serve(tcp::socket socket) {
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    auto [ec, n] =
        co_await http::async_read(socket, buffer, req, net::as_tuple(net::use_awaitable));
    if (!ec) {
      http::response<http::string_body> res{http::status::ok, 11};
      res.set(http::field::content_type, "application/json");
      res.body() = R"({"id":"x","usage":{"prompt_tokens":1,"completion_tokens":1}})";
      res.keep_alive(true);
      res.prepare_payload();
      co_await http::async_write(socket, res, net::as_tuple(net::use_awaitable));
    }
    // The provider's keep-alive timeout, at once: the connection is idle in the pool now.
    socket.close();
    ++closed;
    if (on_closed) on_closed();
  }

  tcp::acceptor acceptor_;
};

ProviderEndpoint endpoint(unsigned short port) {
  config::Provider p;
  p.name = "p";
  p.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  p.timeout_s = 10;
  auto ep = make_endpoint(p);
  EXPECT_TRUE(ep.ok());
  return *ep;
}

// Sends one request and reads its body whole; releases the connection when it may be reused.
Task<Result<unsigned>> exchange(UpstreamPool& pool, const ProviderEndpoint& ep) {
  const Request req{ep.chat_path, "req_1", R"({"model":"m"})", std::chrono::seconds(10)};
  auto sent = co_await pool.send(ep, req);
  if (!sent) co_return sent.error();
  auto res = std::move(*sent);
  auto read = res->body_buffered(1 << 20);
  if (!read) {
    const auto outcome = co_await res->read_body();
    read = res->status_of(outcome);
  }
  if (*read != ReadStatus::ok) co_return make_error(ErrorCode::provider_unavailable, "body cut");
  const unsigned status = res->status();
  if (res->keep_alive()) pool.release(ep, std::move(res));
  co_return status;
}

TEST(UpstreamPool, AStaleIdleConnectionIsRetriedOnAFreshOneNotAnotherIdleOne) {
  net::io_context ctx(1);
  ClosingProvider provider(ctx);
  auto tls = make_client_tls_context();
  UpstreamPool pool(ctx.get_executor(), *tls);
  const ProviderEndpoint ep = endpoint(provider.port());
  std::vector<std::string> outcomes;
  auto record = [&](const Result<unsigned>& r) {
    outcomes.push_back(r ? std::to_string(*r)
                         : std::string(wire_name(r.error().code)) + ": " + r.error().message);
  };

  // Two requests at once: two connections, both idle in the pool once answered. Once
  // both are back and the provider has closed both (it reports it), the next request
  // meets two stale idle connections: it must reach the provider on a fresh one.
  int done = 0;
  auto next_when_all_stale = [&] {
    if (done != 2 || provider.closed != 2) return;
    net::co_spawn(
        pool.executor(),
        [&]() -> Task<void> {
          EXPECT_EQ(pool.idle_count(ep), 2u);
          record(co_await exchange(pool, ep));
          provider.stop();
          ctx.stop();  // the idle connections' timers would keep the loop running
        },
        net::detached);
  };
  provider.on_closed = next_when_all_stale;
  for (int i = 0; i < 2; ++i) {
    net::co_spawn(
        pool.executor(),
        [&]() -> Task<void> {
          record(co_await exchange(pool, ep));
          ++done;
          next_when_all_stale();
        },
        net::detached);
  }
  ctx.run();
  EXPECT_EQ(outcomes, (std::vector<std::string>{"200", "200", "200"}));
  EXPECT_EQ(provider.accepted, 3);  // the third on its own, fresh connection
}

TEST(UpstreamPool, AConnectionThatCannotBeMadeIsProviderUnavailable) {
  net::io_context ctx(1);
  unsigned short port = 0;
  {
    tcp::acceptor closed(ctx, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    port = closed.local_endpoint().port();
  }  // nothing listens there now
  auto tls = make_client_tls_context();
  UpstreamPool pool(ctx.get_executor(), *tls);
  const ProviderEndpoint ep = endpoint(port);
  std::optional<Result<unsigned>> got;
  net::co_spawn(
      pool.executor(),
      [&]() -> Task<void> {
        got.emplace(co_await exchange(pool, ep));
        ctx.stop();
      },
      net::detached);
  ctx.run();
  ASSERT_TRUE(got.has_value());
  ASSERT_FALSE(got->ok());
  EXPECT_EQ(got->error().code, ErrorCode::provider_unavailable);
}

}  // namespace
}  // namespace cairva::upstream
