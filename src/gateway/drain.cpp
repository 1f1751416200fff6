#include "gateway/drain.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>

namespace cairva::gateway {
namespace {

const char* signal_name(int signal) { return signal == SIGINT ? "SIGINT" : "SIGTERM"; }

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Drain::Drain(boost::asio::io_context& ctx, std::chrono::seconds timeout,
             std::atomic<bool>& draining, Hooks hooks)
    : ctx_(ctx),
      timeout_(timeout),
      draining_(draining),
      hooks_(std::move(hooks)),
      signals_(ctx, SIGINT, SIGTERM),
      timer_(ctx) {}

void Drain::start() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (!ec) on_first_signal(signal);
  });
}

void Drain::on_first_signal(int signal) {
  started_ = std::chrono::steady_clock::now();
  draining_.store(true, std::memory_order_relaxed);
  hooks_.stop_accepting();
  std::fprintf(
      stderr,
      "cairva: %s: draining: no new connections, /healthz answers 503, %lld connections open; "
      "requests in flight may run for up to %lld s (server.drain_timeout_s); a second signal ends "
      "the drain\n",
      signal_name(signal), static_cast<long long>(hooks_.open_connections()),
      static_cast<long long>(timeout_.count()));
  signals_.async_wait([this](const boost::system::error_code& ec, int second) {
    if (ec) return;
    std::fprintf(stderr, "cairva: %s: ending the drain now\n", signal_name(second));
    second_signal_ = true;
    timer_.cancel();
  });
  check();
}

void Drain::check() {
  const auto deadline = started_ + timeout_;
  const auto now = std::chrono::steady_clock::now();
  const bool listeners_closed = !hooks_.listeners_open || hooks_.listeners_open() == 0;
  if ((listeners_closed && hooks_.open_connections() == 0) || second_signal_ || now >= deadline) {
    end();
    return;
  }
  timer_.expires_after(
      std::min<std::chrono::steady_clock::duration>(drain_check_interval, deadline - now));
  timer_.async_wait([this](const boost::system::error_code&) { check(); });
}

void Drain::end() {
  const int64_t open = hooks_.open_connections();
  forced_ = open > 0;
  if (forced_) {
    std::fprintf(
        stderr,
        "cairva: drain ended after %.1f s with %lld connections open: their requests are cut\n",
        seconds_since(started_), static_cast<long long>(open));
  } else {
    std::fprintf(stderr, "cairva: drained in %.1f s\n", seconds_since(started_));
  }
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  ctx_.stop();
}

int64_t settle_cut_requests(store::Store& store, SettlementRetry& retry,
                            const std::vector<const OpenRequests*>& lists) {
  std::vector<store::SettleCommand> cuts;
  for (const OpenRequests* l : lists) {
    auto more = l->cut_settlements();
    cuts.insert(cuts.end(), std::make_move_iterator(more.begin()),
                std::make_move_iterator(more.end()));
  }
  if (cuts.empty()) return 0;
  // Shared with the callbacks, which may outlive this call when the store is slow.
  struct Waiting {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<bool> answered;  // GUARDED_BY(mu)
    size_t left = 0;             // GUARDED_BY(mu)
  };
  auto waiting = std::make_shared<Waiting>();
  waiting->answered.assign(cuts.size(), false);
  waiting->left = cuts.size();
  for (size_t i = 0; i < cuts.size(); ++i) {
    store.settle(
        cuts[i], [waiting, i, &retry, cmd = cuts[i]](const Result<store::SettleResult>& r) mutable {
          if (!r) retry.keep(std::move(cmd), r.error());  // settled again before the process exits
          std::lock_guard lock(waiting->mu);
          waiting->answered[i] = true;
          if (--waiting->left == 0) waiting->cv.notify_all();
        });
  }
  std::unique_lock lock(waiting->mu);
  if (!waiting->cv.wait_for(lock, cut_settlement_wait, [&] { return waiting->left == 0; })) {
    for (size_t i = 0; i < cuts.size(); ++i) {
      if (!waiting->answered[i]) {
        retry.keep(cuts[i],
                   make_error(ErrorCode::store_unavailable, "the store did not answer in time"));
      }
    }
  }
  std::fprintf(
      stderr,
      "cairva: %zu requests cut at the end of the drain: settled as usage_pending, holds kept\n",
      cuts.size());
  return static_cast<int64_t>(cuts.size());
}

}  // namespace cairva::gateway
