// sqlite_store_bench: the embedded store alone (no HTTP), as the gateway drives it: K
// requests always outstanding, each an admit (durable before the callback) then a usage
// settlement, the next admit started from the settlement's callback. Reports requests/s,
// the process's CPU per request and the writes per group commit, so a change to the
// writer or the schema is measured without the network's noise.
//
//   build-release/src/store/sqlite/sqlite_store_bench --outstanding 32 --seconds 5 [--sync full]
// With --requests N it stops after N requests: under `perf stat -e instructions` that gives
// instructions per request, which machine load does not move the way it moves time.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "base/ids.h"
#include "store/sqlite/sqlite_store.h"

using namespace cairva;
using namespace cairva::store;

namespace {

struct Args {
  int outstanding = 32;
  int seconds = 5;
  int64_t requests = 0;  // > 0: stop after this many instead of after --seconds
  bool sync_full = false;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--sync" && i + 1 < argc) {
      a.sync_full = std::string(argv[++i]) == "full";
    } else if (k == "--outstanding" && i + 1 < argc) {
      a.outstanding = std::atoi(argv[++i]);
    } else if (k == "--requests" && i + 1 < argc) {
      a.requests = std::atoll(argv[++i]);
    } else if (k == "--seconds" && i + 1 < argc) {
      a.seconds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: sqlite_store_bench [--outstanding K] [--seconds S | --requests N] "
                   "[--sync normal|full]\n");
      std::exit(2);
    }
  }
  return a;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// One chain of requests: admit → settle → admit … until told to stop.
struct Driver {
  Store& store;
  std::string allocation_id;
  std::string key_id;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> done{0};
  std::atomic<int64_t> errors{0};
  std::atomic<int> running{0};

  void next() {
    if (stop.load(std::memory_order_relaxed)) {
      running.fetch_sub(1);
      return;
    }
    AdmitCommand cmd;
    cmd.request_id = new_time_ordered_id("req");
    cmd.allocation_id = allocation_id;
    cmd.key_id = key_id;
    cmd.model = "bench";
    cmd.facts.input_estimate = 10;
    cmd.facts.max_tokens = 16;
    std::string id = cmd.request_id;
    store.admit(std::move(cmd), [this, id](Result<AdmitResult> r) {
      if (!r.ok() || !r->decision.admitted()) {
        errors.fetch_add(1);
        next();
        return;
      }
      // Providers' ids are random (chatcmpl-…): the booking key is, too.
      SettleCommand s{id, allocation_id, SettleKind::usage, new_id("chatcmpl"), {10, 7}};
      store.settle(std::move(s), [this](Result<SettleResult> r) {
        if (r.ok() && r->book == core::BookResult::booked) {
          done.fetch_add(1, std::memory_order_relaxed);
        } else {
          errors.fetch_add(1);
        }
        next();
      });
    });
  }
};

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const auto dir = std::filesystem::temp_directory_path() / new_id("cairva-store-bench");
  std::filesystem::create_directories(dir);
  std::atomic<int64_t> commits{0}, rows{0};
  StoreOptions o;
  o.url = "sqlite://" + (dir / "bench.db").string();
  o.sync_full = args.sync_full;
  o.providers = {"bench"};
  o.on_commit_batch = [&](int64_t writes) {
    commits.fetch_add(1, std::memory_order_relaxed);
    rows.fetch_add(writes, std::memory_order_relaxed);
  };
  auto clock = std::make_shared<SystemClock>();
  int rc = 0;
  {
    auto opened = sqlite::SqliteStore::open((dir / "bench.db").string(), o, clock);
    if (!opened.ok()) {
      std::fprintf(stderr, "open: %s\n", opened.error().message.c_str());
      return 1;
    }
    auto& store = **opened;
    const int64_t big = int64_t{1} << 50;
    const UnixMicros now = clock->now();
    auto created =
        store.create_agreement({"bench",
                                "bench",
                                "bench",
                                {},
                                {{now - micros_per_second, now + 86'400 * micros_per_second},
                                 {big, big, big},
                                 {big, big}}});
    if (!created.ok()) {
      std::fprintf(stderr, "agreement: %s\n", created.error().message.c_str());
      return 1;
    }
    Driver d{store, created->allocation.id, created->key_id};
    const double cpu0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t c0 = commits.load(), r0 = rows.load();
    d.running = args.outstanding;
    for (int i = 0; i < args.outstanding; ++i) d.next();
    if (args.requests > 0) {
      while (d.done.load() < args.requests)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else {
      std::this_thread::sleep_for(std::chrono::seconds(args.seconds));
    }
    d.stop = true;
    while (d.running.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    const int64_t n = d.done.load();
    const int64_t nc = commits.load() - c0, nr = rows.load() - r0;
    std::printf(
        "sqlite_store_bench sync=%s outstanding=%d: %.0f requests/s, CPU %.1f us/request, "
        "%.1f writes/commit, %lld errors\n",
        args.sync_full ? "full" : "normal", args.outstanding, static_cast<double>(n) / wall,
        n > 0 ? cpu / static_cast<double>(n) * 1e6 : 0.0,
        nc > 0 ? static_cast<double>(nr) / static_cast<double>(nc) : 0.0,
        static_cast<long long>(d.errors.load()));
    rc = d.errors.load() == 0 && n > 0 ? 0 : 1;
  }
  std::filesystem::remove_all(dir);
  return rc;
}
