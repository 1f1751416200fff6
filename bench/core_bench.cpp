// admit + book on one hot allocation, the core's share of every request: two critical
// sections under the allocation's mutex (admission before forwarding, booking after the
// provider's usage), as the embedded store runs them. And the heap one allocation's
// booked provider ids take, which the ledger keeps for the allocation's life.
//
//   ninja -C build-core core_bench && build-core/bench/core_bench
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "core/ledger.h"

namespace {

using cairva::UnixMicros;
using namespace cairva::core;

// Limits far above what the benchmark reaches, so every request is admitted and booked:
// the window logs then hold a full minute of starts and bookings (60,000 of each at the
// simulated rate of one request per millisecond).
constexpr int64_t kRequestsPerMinute = 10'000'000;
constexpr int64_t kTokens = int64_t{1} << 50;
constexpr UnixMicros kStart = 1'800'000'000LL * cairva::micros_per_second;
constexpr UnixMicros kStepUs = 1000;  // simulated time between requests
// The ledger remembers every booked provider request id; a fresh ledger every this many
// requests keeps the benchmark's memory flat (the swap is inside the timed loop).
constexpr int64_t kRequestsPerLedger = int64_t{1} << 18;

Terms bench_terms() {
  Terms t;
  t.window = {kStart, kStart + (int64_t{1} << 50)};
  t.limits = {kRequestsPerMinute, kTokens, kRequestsPerMinute};
  t.allowance = {kTokens, kTokens};
  return t;
}

struct HotAllocation {
  std::mutex mu;
  std::unique_ptr<AllocationLedger> ledger;  // GUARDED_BY(mu)
  int64_t requests = 0;                      // GUARDED_BY(mu)
};

std::unique_ptr<HotAllocation> g_hot;

void SetUp(const benchmark::State&) {
  g_hot = std::make_unique<HotAllocation>();
  g_hot->ledger = std::make_unique<AllocationLedger>(bench_terms());
}

void TearDown(const benchmark::State&) { g_hot.reset(); }

void BM_AdmitBook(benchmark::State& state) {
  HotAllocation& hot = *g_hot;
  RequestFacts facts;
  facts.input_estimate = 120;
  facts.max_tokens = 256;
  const Tokens usage{100, 50};
  const std::string prefix = "req_" + std::to_string(state.thread_index()) + "_";
  int64_t n = 0;
  for (auto _ : state) {
    const std::string id = prefix + std::to_string(n++);
    {
      std::lock_guard lock(hot.mu);
      if (++hot.requests % kRequestsPerLedger == 0) {
        hot.ledger = std::make_unique<AllocationLedger>(bench_terms());
      }
      const UnixMicros now = kStart + hot.requests * kStepUs;
      const AdmissionDecision d = hot.ledger->admit(id, facts, now);
      benchmark::DoNotOptimize(d);
      if (!d.admitted()) state.SkipWithError("refused");
    }
    // (the request is forwarded here, outside the lock)
    {
      std::lock_guard lock(hot.mu);
      const UnixMicros now = kStart + hot.requests * kStepUs;
      const BookOutcome o = hot.ledger->book(id, id, usage, now);
      benchmark::DoNotOptimize(o);
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AdmitBook)->Setup(SetUp)->Teardown(TearDown)->Threads(1)->Threads(2)->UseRealTime();

// Bookings of distinct provider ids into one ledger for the memory figure: about what a
// busy gateway books between restarts (the 10,000-stream run booked ~944k).
constexpr int64_t kMemoryBookings = 1'000'000;
// One booking per simulated second keeps the minute's logs at 60 entries, so the heap the
// ledger grows by is the booked ids' (and nothing else's) to within a few kB.
constexpr UnixMicros kMemoryStepUs = cairva::micros_per_second;

// Heap in use: small chunks plus mmap'd ones (a large flat map's array is mmap'd).
int64_t heap_in_use_bytes() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
}

// Books kMemoryBookings distinct provider ids into one ledger and reports the heap it
// grew by per booking (counter bytes_per_booking). One iteration: the figure is a size.
void BM_BookedIdsMemory(benchmark::State& state) {
  RequestFacts facts;
  facts.input_estimate = 120;
  facts.max_tokens = 256;
  const Tokens usage{100, 50};
  double bytes_per_booking = 0;
  for (auto _ : state) {
    auto ledger = std::make_unique<AllocationLedger>(bench_terms());
    const int64_t heap_before = heap_in_use_bytes();
    for (int64_t i = 0; i < kMemoryBookings; ++i) {
      const std::string id = "chatcmpl-" + std::to_string(i);
      const UnixMicros now = kStart + i * kMemoryStepUs;
      if (!ledger->admit(id, facts, now).admitted()) state.SkipWithError("refused");
      if (ledger->book(id, id, usage, now).result != BookResult::booked) {
        state.SkipWithError("not booked");
      }
    }
    bytes_per_booking = static_cast<double>(heap_in_use_bytes() - heap_before) /
                        static_cast<double>(kMemoryBookings);
    benchmark::DoNotOptimize(ledger);
  }
  state.counters["bytes_per_booking"] = bytes_per_booking;
}
BENCHMARK(BM_BookedIdsMemory)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
