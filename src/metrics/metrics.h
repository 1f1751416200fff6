// The process's metrics, declared in ONE list below, updated on the hot path with relaxed
// atomics and rendered in the Prometheus text format for `GET /metrics` (SPEC §7).
//
// Why not prometheus-cpp: its Histogram::Observe takes a mutex and its families are
// looked up through label maps; every update here is one relaxed fetch_add on a fixed
// array slot, and the text format is simple enough to render by hand.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/error_code.h"
#include "core/admission.h"
#include "core/ledger.h"
#include "core/limits.h"
#include "store/rows.h"

namespace cairva::store {
class Store;
}

namespace cairva::metrics {

// Upper bounds (inclusive) of the provider latency histogram, in microseconds: 5 ms to
// the 600 s provider timeout.
inline constexpr std::array<int64_t, 14> provider_latency_bucket_us = {
    5'000,     10'000,    25'000,    50'000,     100'000,    250'000,     500'000,
    1'000'000, 2'500'000, 5'000'000, 10'000'000, 30'000'000, 120'000'000, 600'000'000};
static_assert(provider_latency_bucket_us.back() == core::in_flight_timeout_s_default * 1'000'000,
              "the last bucket is the default provider timeout (config.h)");
// Upper bounds of the store's commit batch size histogram, in writes per commit.
inline constexpr std::array<int64_t, 11> commit_batch_bucket_writes = {1,  2,   4,   8,   16,  32,
                                                                       64, 128, 256, 512, 1024};
// Upper bounds of the store wait histogram, in microseconds: 100 µs to 10 s.
inline constexpr std::array<int64_t, 11> store_wait_bucket_us = {
    100, 250, 500, 1'000, 2'500, 5'000, 10'000, 25'000, 100'000, 1'000'000, 10'000'000};
// Upper bounds of the stream relay histogram, in microseconds: 10 µs to 1 s.
inline constexpr std::array<int64_t, 12> stream_relay_bucket_us = {
    10, 25, 50, 100, 250, 500, 1'000, 2'500, 5'000, 10'000, 100'000, 1'000'000};
// A scrape renders per-allocation gauges for at most this many allocations, so /metrics
// stays bounded however many agreements a store holds.
inline constexpr size_t allocation_series_max = 10'000;

inline constexpr int refusal_count = static_cast<int>(core::Refusal::allowance_exhausted) + 1;
// The request path's waits on the store, in the order a request makes them.
enum class StoreWait : uint8_t { admit, settle };
inline constexpr int store_wait_count = static_cast<int>(StoreWait::settle) + 1;

// Usage reports end in the outcomes up to reused_id (pending and failed are other kinds').
inline constexpr int book_result_count = static_cast<int>(core::BookResult::reused_id) + 1;

// A fixed-bucket histogram: per-bucket counts (not cumulative; rendering sums them), a sum
// and a count.
template <size_t N>
class Histogram {
 public:
  explicit constexpr Histogram(const std::array<int64_t, N>& bounds) : bounds_(bounds) {}
  void observe(int64_t v) {
    size_t i = 0;
    while (i < N && v > bounds_[i]) ++i;
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(v, std::memory_order_relaxed);
  }
  const std::array<int64_t, N>& bounds() const { return bounds_; }
  // Bucket i < N counts values <= bounds[i] and > bounds[i-1]; bucket N counts the rest.
  int64_t bucket(size_t i) const { return buckets_[i].load(std::memory_order_relaxed); }
  int64_t sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::array<int64_t, N> bounds_;
  std::array<std::atomic<int64_t>, N + 1> buckets_{};
  std::atomic<int64_t> sum_{0};
};

// What cairva_build_info says: the build (as `cairva --version` prints it) and the schema
// version of the store it serves.
struct BuildInfo {
  std::string version;  // the project version, e.g. "0.1.0"
  std::string commit;   // the git commit it was built from ("unknown" outside a checkout)
  std::string schema;   // the store's backend and schema version, e.g. "sqlite 5"
};

class Metrics {
 public:
  // --- The one list of what Cairva counts. ---
  // cairva_build_info{version,commit,schema} 1: set once at start-up (absent until then), so
  // that a fleet's versions and schemas can be compared during a rolling upgrade.
  void set_build_info(BuildInfo info) {
    std::lock_guard lock(build_mu_);
    build_ = std::move(info);
  }
  // cairva_requests_total{outcome}: public API requests by final outcome: "admitted" or
  // the wire name of the error that answered them (before or at admission).
  void count_admitted() { admitted_.fetch_add(1, std::memory_order_relaxed); }
  void count_refused(ErrorCode code) {
    refused_[static_cast<size_t>(code)].fetch_add(1, std::memory_order_relaxed);
  }
  // cairva_admission_refusals_total{reason}: admission refusals by the check that failed.
  void count_refusal(core::Refusal r) {
    refusals_[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  }
  // cairva_provider_latency_seconds: time to the provider's response headers.
  void observe_provider_latency_us(int64_t us) { provider_latency_.observe(us); }
  // cairva_bookings_total{result} and cairva_booked_tokens_total{direction}.
  void count_booking(core::BookResult r, const core::Tokens& booked) {
    if (static_cast<int>(r) >= book_result_count) return;  // not a usage report's outcome
    bookings_[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
    if (r == core::BookResult::booked) {
      booked_input_.fetch_add(booked.input, std::memory_order_relaxed);
      booked_output_.fetch_add(booked.output, std::memory_order_relaxed);
    }
  }
  // cairva_usage_missing_total: settlements that left a request usage_pending.
  void count_usage_missing() { usage_missing_.fetch_add(1, std::memory_order_relaxed); }
  // cairva_store_wait_seconds{op}: from a request's store call (admission, settlement) to
  // its coroutine running again: the store's queue and commit plus the event loop's queue.
  void observe_store_wait_us(StoreWait op, int64_t us) {
    store_wait_[static_cast<size_t>(op)].observe(us);
  }
  // cairva_stream_relay_seconds: a stream's bytes from the provider read that brought them
  // to the end of their write to the client: the gateway's own share of a chunk's latency
  // (the wake-ups on either side are not in it).
  void observe_stream_relay_us(int64_t us) { stream_relay_.observe(us); }
  // cairva_store_commit_batch_writes: writes per store commit (the store's hook).
  void observe_commit_batch(int64_t writes) { commit_batch_.observe(writes); }
  // cairva_access_log_dropped_lines_total: access log lines dropped because the log's
  // buffer was full (its disk or pipe stalled).
  void count_access_log_dropped() { access_log_dropped_.fetch_add(1, std::memory_order_relaxed); }
  // Scraped from the store, not counted: per-allocation in_flight, held and usage_pending
  // gauges and the total usage_pending count (see render_metrics).

  // Prometheus text for the counters above plus gauges from `allocations`.
  std::string render(const std::vector<store::AllocationStatus>& allocations) const;

 private:
  std::atomic<int64_t> admitted_{0};
  std::array<std::atomic<int64_t>, error_code_count> refused_{};
  std::array<std::atomic<int64_t>, refusal_count> refusals_{};
  Histogram<provider_latency_bucket_us.size()> provider_latency_{provider_latency_bucket_us};
  std::array<std::atomic<int64_t>, book_result_count> bookings_{};
  std::atomic<int64_t> booked_input_{0};
  std::atomic<int64_t> booked_output_{0};
  std::atomic<int64_t> usage_missing_{0};
  std::atomic<int64_t> access_log_dropped_{0};
  mutable std::mutex build_mu_;
  std::optional<BuildInfo> build_;  // GUARDED_BY(build_mu_)
  Histogram<commit_batch_bucket_writes.size()> commit_batch_{commit_batch_bucket_writes};
  Histogram<stream_relay_bucket_us.size()> stream_relay_{stream_relay_bucket_us};
  std::array<Histogram<store_wait_bucket_us.size()>, store_wait_count> store_wait_{
      Histogram<store_wait_bucket_us.size()>{store_wait_bucket_us},
      Histogram<store_wait_bucket_us.size()>{store_wait_bucket_us}};
};

// The process-wide registry the gateway and the store hook update.
Metrics& registry();

// What `GET /metrics` serves: registry().render() over the store's allocations as of now.
// A store error is reported as a comment and cairva_store_up 0, never as a failed scrape.
std::string render_metrics(store::Store& store);

}  // namespace cairva::metrics
