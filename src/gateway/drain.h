// Graceful drain (SPEC §9, docs/operations.md "Draining and restarting"): at the first
// SIGTERM or SIGINT the gateway stops accepting, answers /healthz with 503 on the
// connections still open, closes idle keep-alive connections and lets the requests in
// flight (streams too) run to their end, each connection closing after its response. The
// drain ends when no public connection is left, or at server.drain_timeout_s, or at a
// second signal; requests still open then are settled as cut (settle_cut_requests).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "gateway/open_requests.h"
#include "gateway/settle_retry.h"
#include "store/store.h"

namespace cairva::gateway {

// How often a drain looks whether the last public connection has closed.
inline constexpr auto drain_check_interval = std::chrono::milliseconds(50);
// The longest the end of a drain waits for the store to record the cut requests'
// settlements; what it has not recorded by then stays kept (settle_retry.h) and is logged.
inline constexpr auto cut_settlement_wait = std::chrono::seconds(10);

// Runs on the admin event loop `ctx`. Thread safety: constructed, started and read on the
// thread that runs `ctx`.
class Drain {
 public:
  struct Hooks {
    // Closes every public listener and its idle connections (posted to each event loop).
    std::function<void()> stop_accepting;
    // Public connections open now, every event loop together.
    std::function<int64_t()> open_connections;
    // Public listeners not closed yet (stop_accepting runs on each loop later). The drain
    // ends only once they are all closed: until then a loop may still accept a connection,
    // which the process's exit would reset. Empty: none to wait for.
    std::function<int64_t()> listeners_open = {};
  };
  Drain(boost::asio::io_context& ctx, std::chrono::seconds timeout, std::atomic<bool>& draining,
        Hooks hooks);
  // Waits for the first signal, then drains; stops `ctx` when the drain ends.
  void start();
  // After `ctx` stopped: true when the drain ended with public connections still open (at
  // its timeout or a second signal), which the caller then settles as cut.
  bool forced() const { return forced_; }

 private:
  void on_first_signal(int signal);
  void check();
  void end();

  boost::asio::io_context& ctx_;
  const std::chrono::seconds timeout_;
  std::atomic<bool>& draining_;
  const Hooks hooks_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point started_{};
  bool second_signal_ = false;
  bool forced_ = false;
};

// Settles each request still open in `lists` as cut: usage_missing, so that it becomes
// usage_pending with its hold kept, under the provider's id seen so far. Waits at most
// cut_settlement_wait for the store; a settlement it did not record is given to `retry`.
// REQUIRES: the event loops owning `lists` have stopped and their threads been joined.
// Returns how many requests were cut.
int64_t settle_cut_requests(store::Store& store, SettlementRetry& retry,
                            const std::vector<const OpenRequests*>& lists);

}  // namespace cairva::gateway
