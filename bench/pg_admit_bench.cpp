// pg_admit_bench: admissions + settlements per second through PostgresStore against a
// real PostgreSQL, on one hot allocation or spread over many, with several stores (as
// several gateway processes would be) and several threads per store. Each operation is
// one admit (one transaction under the allocation's row lock) followed by one usage
// settlement (another). Uses the database clock, as production does.
//
//   export CAIRVA_TEST_PG_URL=$(scripts/pg-test-cluster.sh url)
//   build-pg/src/store/postgres/pg_admit_bench --stores 3 --threads 4 --allocations 1 --seconds 5
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "store/postgres/postgres_store.h"
#include "store/postgres/test_schema.h"

using namespace cairva;
using namespace cairva::store;

namespace {

struct Args {
  int stores = 1;
  int threads = 4;        // per store
  int allocations = 1;
  int seconds = 5;
  int pool = 8;           // per store
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (k == "--stores") a.stores = v;
    else if (k == "--threads") a.threads = v;
    else if (k == "--allocations") a.allocations = v;
    else if (k == "--seconds") a.seconds = v;
    else if (k == "--pool") a.pool = v;
    else { std::fprintf(stderr, "unknown option %s\n", k.c_str()); std::exit(2); }
  }
  return a;
}

template <class T, class F>
Result<T> wait_for(F start) {
  std::promise<Result<T>> p;
  auto fut = p.get_future();
  start([&p](Result<T> r) { p.set_value(std::move(r)); });
  return fut.get();
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  pg::testing::TestSchema schema;
  if (!schema.ok()) {
    std::fprintf(stderr, "%s\n", schema.error().c_str());
    return 1;
  }
  auto clock = std::make_shared<SystemClock>();
  StoreOptions o;
  o.url = schema.url();
  o.pool_size = args.pool;
  o.use_database_clock = true;
  o.providers = {"bench"};
  std::vector<std::unique_ptr<pg::PostgresStore>> stores;
  for (int i = 0; i < args.stores; ++i) {
    auto s = pg::PostgresStore::open(o, clock);
    if (!s.ok()) {
      std::fprintf(stderr, "open: %s\n", s.error().message.c_str());
      return 1;
    }
    stores.push_back(std::move(s).value());
  }
  std::vector<std::string> allocations;
  const UnixMicros now = clock->now();
  constexpr int64_t huge = int64_t{1} << 40;
  for (int i = 0; i < args.allocations; ++i) {
    NewAgreement a{"s", "b", "bench", {}, {}};
    a.terms.window = {now - micros_per_second, now + 86'400LL * micros_per_second};
    a.terms.limits = {huge, huge, huge};
    a.terms.allowance = {huge, huge};
    auto c = stores[0]->create_agreement(a);
    if (!c.ok()) {
      std::fprintf(stderr, "create: %s\n", c.error().message.c_str());
      return 1;
    }
    allocations.push_back(c->allocation.id);
  }

  std::atomic<bool> stop{false};
  std::atomic<int64_t> ops{0}, errors{0};
  std::vector<std::thread> threads;
  for (int s = 0; s < args.stores; ++s) {
    for (int t = 0; t < args.threads; ++t) {
      threads.emplace_back([&, s, t] {
        Store& store = *stores[static_cast<size_t>(s)];
        size_t next = static_cast<size_t>(s * args.threads + t);
        while (!stop.load(std::memory_order_relaxed)) {
          const std::string& alloc = allocations[next++ % allocations.size()];
          AdmitCommand cmd;
          cmd.request_id = new_id("req");
          cmd.allocation_id = alloc;
          cmd.key_id = "key_bench";
          cmd.model = "m";
          cmd.facts.input_estimate = 20;
          cmd.facts.max_tokens = 100;
          const std::string id = cmd.request_id;
          auto r = wait_for<AdmitResult>([&](auto done) { store.admit(std::move(cmd), done); });
          if (!r.ok() || !r->decision.admitted()) {
            ++errors;
            continue;
          }
          auto st = wait_for<SettleResult>([&](auto done) {
            store.settle({id, alloc, SettleKind::usage, "p-" + id, {15, 80}}, done);
          });
          if (!st.ok()) {
            ++errors;
            continue;
          }
          ++ops;
        }
      });
    }
  }
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(args.seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto audit = stores[0]->audit();
  std::printf(
      "stores=%d threads/store=%d allocations=%d pool=%d: %.0f admit+settle/s "
      "(%lld in %.1f s, %lld errors), audit %s\n",
      args.stores, args.threads, args.allocations, args.pool, static_cast<double>(ops) / secs,
      static_cast<long long>(ops.load()), secs, static_cast<long long>(errors.load()),
      audit.ok() && audit->violations.empty() ? "clean" : "VIOLATIONS");
  return audit.ok() && audit->violations.empty() && errors == 0 ? 0 : 1;
}
