#include "gateway/serve.h"

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "admin/admin_api.h"
#include "base/run_soon.h"
#include "base/thread_name.h"
#include "gateway/admin_server.h"
#include "gateway/drain.h"
#include "gateway/gateway.h"
#include "http/body_budget.h"
#include "http/limits.h"
#include "http/listener.h"
#include "metrics/metrics.h"
#include "store/open.h"
#include "store/validate.h"
#include "upstream/connection.h"

namespace cairva::gateway {
namespace {

namespace net = boost::asio;

// How often every gateway sweeps stale in-flight requests (SPEC §9: at least once a second).
constexpr auto sweep_interval = std::chrono::seconds(1);

struct Loop {
  explicit Loop(net::ssl::context& tls) : ctx(1), pool(ctx.get_executor(), tls) {}
  // Before ctx: the requests' coroutine frames, destroyed with ctx, unlink from it.
  OpenRequests open;
  net::io_context ctx;
  upstream::UpstreamPool pool;
  std::function<void()> stop_listening;  // the public listener's, on this loop
};

// Runs store.sweep_stale() every sweep_interval on its own thread, so a slow store never
// stalls an event loop; before each sweep, the settlements kept for retry settle again.
class Sweeper {
 public:
  Sweeper(store::Store& store, SettlementRetry& retry)
      : thread_([this, &store, &retry] {
          name_this_thread("cairva-sweep");
          run(store, retry);
        }) {}
  ~Sweeper() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void run(store::Store& store, SettlementRetry& retry) {
    std::unique_lock lock(mutex_);
    while (!cv_.wait_for(lock, sweep_interval, [this] { return stop_; })) {
      lock.unlock();
      retry.retry_all();
      auto swept = store.sweep_stale();
      if (!swept) std::fprintf(stderr, "cairva: sweep failed: %s\n", swept.error().message.c_str());
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mutex_)
  std::thread thread_;
};

int loop_count(const config::Config& cfg) {
  if (cfg.threads > 0) return cfg.threads;
  return std::max(1u, std::thread::hardware_concurrency());
}

// The public listener's connection cap the descriptors allow: server.connections_max, or,
// when the hard RLIMIT_NOFILE cannot hold it with the admin budget and the reserve, half
// of what is left beyond the admin budget (each admitted request may hold an upstream
// connection too), so that the budget, not EMFILE, refuses connections.
int64_t public_connections_max(const config::Config& cfg) {
  const int64_t wanted =
      cfg.connections_max + http::admin_connections_max + http::file_descriptors_reserve;
  const int64_t files = http::raise_open_files_limit(wanted);
  if (files >= wanted) return cfg.connections_max;
  const int64_t beyond_admin = files - http::admin_connections_max;
  const int64_t fitting = std::max<int64_t>(1, std::min(cfg.connections_max, beyond_admin / 2));
  std::printf(
      "cairva: open files limit %lld cannot hold server.connections_max %lld: the public listener "
      "holds %lld\n",
      static_cast<long long>(files), static_cast<long long>(cfg.connections_max),
      static_cast<long long>(fitting));
  return fitting;
}

}  // namespace

int run_serve(const config::Config& cfg, store::StoreOptions options) {
  // A closed pipe on stdout (the access log's default, a journald restarting) is a write
  // error to report, not a reason for the process to die.
  std::signal(SIGPIPE, SIG_IGN);
  auto clock = std::make_shared<SystemClock>();
  options.on_commit_batch = [](int64_t writes) {
    metrics::registry().observe_commit_batch(writes);
  };
  auto opened = store::open_store(options, clock);
  if (!opened) {
    std::fprintf(stderr, "cairva: store %s: %s\n", store::redacted_store_url(cfg.store_url).c_str(),
                 opened.error().message.c_str());
    // conflict: the store needs an operator's step first (an upgrade through an earlier
    // build); restarting this binary cannot help, so it is not a runtime error's 1.
    return opened.error().code == ErrorCode::conflict ? 2 : 1;
  }
  std::unique_ptr<store::Store> store = std::move(*opened);

  http::BodyBudget bodies(static_cast<size_t>(cfg.body_bytes_in_flight_max));
  SettlementRetry retry(
      [&store](store::SettleCommand cmd, store::Callback<store::SettleResult> done) {
        store->settle(std::move(cmd), std::move(done));
      });
  std::atomic<bool> draining{false};
  std::unique_ptr<AccessLog> access_log;  // outlives the loops: their coroutines log as they end
  if (cfg.access_log) {
    auto opened_log = AccessLog::open(
        cfg.access_log_path, cfg.access_log_json ? AccessLogFormat::json : AccessLogFormat::text);
    if (!opened_log) {
      std::fprintf(stderr, "cairva: %s: %s\n", cfg.source.c_str(),
                   opened_log.error().message.c_str());
      return 2;
    }
    access_log = std::move(*opened_log);
  }
  Gateway gw{cfg, *store, *clock, {}, &bodies, &retry, &draining, access_log.get()};
  for (const auto& p : cfg.providers) {
    auto ep = upstream::make_endpoint(p);
    if (!ep) {
      std::fprintf(stderr, "cairva: %s: %s\n", cfg.source.c_str(), ep.error().message.c_str());
      return 2;
    }
    gw.providers.push_back(std::move(*ep));
  }
  auto public_ep = http::parse_listen_address(cfg.listen);
  auto admin_ep = http::parse_listen_address(cfg.admin_listen);
  if (!public_ep || !admin_ep) {
    std::fprintf(stderr, "cairva: listen address: %s\n",
                 (!public_ep ? public_ep : admin_ep).error().message.c_str());
    return 2;
  }

  auto public_budget = std::make_shared<http::ConnectionBudget>(
      http::ConnectionLimits{public_connections_max(cfg), cfg.connections_per_client_max});
  // Operators' own budget: a flood of the public port never takes it.
  auto admin_budget = std::make_shared<http::ConnectionBudget>(
      http::ConnectionLimits{http::admin_connections_max, 0});
  auto tls = upstream::make_client_tls_context();
  std::vector<std::unique_ptr<Loop>> loops;
  http::tcp::endpoint bound = *public_ep;
  for (int i = 0; i < loop_count(cfg); ++i) {
    loops.push_back(std::make_unique<Loop>(*tls));
    Loop& loop = *loops.back();
    auto r = http::start_listener(
        loop.ctx, bound, true, public_budget,
        [&gw, &loop](http::tcp::socket s, std::shared_ptr<http::Connection> c) {
          return public_session(gw, loop.pool, loop.open, std::move(s), std::move(c));
        });
    if (!r) {
      std::fprintf(stderr, "cairva: %s\n", r.error().message.c_str());
      return 1;
    }
    bound = r->endpoint;
    loop.stop_listening = std::move(r->stop);
  }

  net::io_context admin_ctx(1);
  admin::AdminApi admin_api(*store, cfg.admin_token, clock,
                            [&store] { return metrics::render_metrics(*store); });
  const AdminSessionOptions admin_options{cfg.first_byte_timeout_s};
  auto admin_bound = http::start_listener(
      admin_ctx, *admin_ep, false, admin_budget,
      [&admin_api, &admin_options](http::tcp::socket s, std::shared_ptr<http::Connection> c) {
        return admin_session(admin_api, admin_options, std::move(s), std::move(c));
      });
  if (!admin_bound) {
    std::fprintf(stderr, "cairva: admin: %s\n", admin_bound.error().message.c_str());
    return 1;
  }
  std::printf("cairva listening on %s:%u (admin %s:%u), store %s, %zu event loops\n",
              bound.address().to_string().c_str(), bound.port(),
              admin_bound->endpoint.address().to_string().c_str(), admin_bound->endpoint.port(),
              store::redacted_store_url(cfg.store_url).c_str(), loops.size());
  if (cfg.admin_token.empty()) {
    std::printf("cairva: no admin token in $%s: the admin API refuses every call\n",
                cfg.admin_token_env.c_str());
  }
  std::fflush(stdout);

  std::optional<Sweeper> sweeper(std::in_place, *store, retry);
  std::atomic<int64_t> listeners_open{static_cast<int64_t>(loops.size())};
  Drain drain(admin_ctx, std::chrono::seconds(cfg.drain_timeout_s), draining,
              {[&loops, &listeners_open] {
                 for (auto& l : loops) {
                   net::post(l->ctx, [&l = *l, &listeners_open] {
                     l.stop_listening();
                     listeners_open.fetch_sub(1, std::memory_order_release);
                   });
                 }
               },
               [&public_budget] { return public_budget->open(); },
               [&listeners_open] { return listeners_open.load(std::memory_order_acquire); }});
  drain.start();
  // SIGHUP reopens the access log file (rotation); without a handler it would end the process.
  net::signal_set hangups(admin_ctx, SIGHUP);
  std::function<void()> on_hangup = [&] {
    hangups.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec) return;
      if (access_log) access_log->reopen();
      on_hangup();
    });
  };
  on_hangup();
  std::vector<std::thread> threads;
  for (size_t i = 0; i < loops.size(); ++i) {
    threads.emplace_back([&l = loops[i], i] {
      name_this_thread("cairva-io-" + std::to_string(i));
      const RunSoon run_soon = [&ctx = l->ctx](std::function<void()> f) {
        net::post(ctx, std::move(f));
      };
      set_run_soon_for_this_thread(&run_soon);
      l->ctx.run();
      set_run_soon_for_this_thread(nullptr);
    });
  }
  admin_ctx.run();  // until the drain ends
  for (auto& l : loops) l->ctx.stop();
  for (auto& t : threads) t.join();
  sweeper.reset();
  if (drain.forced()) {
    std::vector<const OpenRequests*> open;
    open.reserve(loops.size());
    for (const auto& l : loops) open.push_back(&l->open);
    settle_cut_requests(*store, retry, open);
  }
  retry.retry_all();  // settlements the store could not record yet: a last chance
  // The store goes first: it runs every callback it still owes (each resumes nothing: the
  // loops are stopped) while the loops' contexts exist; the loops' coroutines go after.
  store.reset();
  return 0;
}

}  // namespace cairva::gateway
