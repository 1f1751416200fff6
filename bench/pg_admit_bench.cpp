// pg_admit_bench: admissions + settlements per second through PostgresStore against a
// real PostgreSQL, on one hot allocation or spread over many, with several stores (as
// several gateway processes would be) and several threads per store. Each operation is
// one admit (one transaction under the allocation's row lock) followed by one usage
// settlement (another). Uses the database clock, as production does.
//
//   export CAIRVA_TEST_PG_URL=$(scripts/pg-test-cluster.sh url)
//   build-pg/src/store/postgres/pg_admit_bench --processes 3 --threads 4 --allocations 1 --seconds
//   5
// --processes P forks P gateway-like processes (each with --stores stores of --pool
// connections and --threads threads per store) on one schema.
#include <sys/wait.h>
#include <unistd.h>

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
  int processes = 1;
  int stores = 1;
  int threads = 4;  // per store
  int allocations = 1;
  int seconds = 5;
  int pool = 8;  // per store
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (k == "--processes")
      a.processes = v;
    else if (k == "--stores")
      a.stores = v;
    else if (k == "--threads")
      a.threads = v;
    else if (k == "--allocations")
      a.allocations = v;
    else if (k == "--seconds")
      a.seconds = v;
    else if (k == "--pool")
      a.pool = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      std::exit(2);
    }
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

struct Counts {
  int64_t ops = 0;
  int64_t errors = 0;
};

// One process's share: its own stores (pools, workers) hammering the allocations.
Counts run_process(const Args& args, const StoreOptions& o, std::shared_ptr<const Clock> clock,
                   const std::vector<CreatedAgreement>& allocations, int process) {
  std::vector<std::unique_ptr<pg::PostgresStore>> stores;
  for (int i = 0; i < args.stores; ++i) {
    auto s = pg::PostgresStore::open(o, clock);
    if (!s.ok()) {
      std::fprintf(stderr, "open: %s\n", s.error().message.c_str());
      return {0, 1};
    }
    stores.push_back(std::move(s).value());
  }
  std::atomic<bool> stop{false};
  std::atomic<int64_t> ops{0}, errors{0};
  std::vector<std::thread> threads;
  for (int s = 0; s < args.stores; ++s) {
    for (int t = 0; t < args.threads; ++t) {
      threads.emplace_back([&, s, t] {
        Store& store = *stores[static_cast<size_t>(s)];
        size_t next = static_cast<size_t>((process * args.stores + s) * args.threads + t);
        while (!stop.load(std::memory_order_relaxed)) {
          const CreatedAgreement& created = allocations[next++ % allocations.size()];
          const std::string& alloc = created.allocation.id;
          AdmitCommand cmd;
          cmd.request_id = new_id("req");
          cmd.allocation_id = alloc;
          cmd.key_id = created.key_id;  // each admission reads its key (revoked?)
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
  std::this_thread::sleep_for(std::chrono::seconds(args.seconds));
  stop = true;
  for (auto& t : threads) t.join();
  return {ops.load(), errors.load()};
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
  std::vector<CreatedAgreement> allocations;
  {
    auto admin = pg::PostgresStore::open(o, clock);
    if (!admin.ok()) {
      std::fprintf(stderr, "open: %s\n", admin.error().message.c_str());
      return 1;
    }
    const UnixMicros now = clock->now();
    constexpr int64_t huge = int64_t{1} << 40;
    for (int i = 0; i < args.allocations; ++i) {
      NewAgreement a{"s", "b", "bench", {}, {}};
      a.terms.window = {now - micros_per_second, now + 86'400LL * micros_per_second};
      a.terms.limits = {huge, huge, huge};
      a.terms.allowance = {huge, huge};
      auto c = (*admin)->create_agreement(a);
      if (!c.ok()) {
        std::fprintf(stderr, "create: %s\n", c.error().message.c_str());
        return 1;
      }
      allocations.push_back(*c);
    }
  }  // no store (and no thread) alive across fork()

  const auto start = std::chrono::steady_clock::now();
  Counts total;
  if (args.processes <= 1) {
    total = run_process(args, o, clock, allocations, 0);
  } else {
    std::vector<std::pair<pid_t, int>> children;  // pid, read end of its pipe
    for (int p = 0; p < args.processes; ++p) {
      int fds[2];
      if (pipe(fds) != 0) return 1;
      const pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        const Counts c = run_process(args, o, clock, allocations, p);
        const bool written = write(fds[1], &c, sizeof c) == static_cast<ssize_t>(sizeof c);
        _exit(written ? 0 : 1);
      }
      close(fds[1]);
      children.emplace_back(pid, fds[0]);
    }
    for (auto [pid, fd] : children) {
      Counts c;
      if (read(fd, &c, sizeof c) != static_cast<ssize_t>(sizeof c)) c.errors += 1;
      close(fd);
      int status = 0;
      waitpid(pid, &status, 0);
      total.ops += c.ops;
      total.errors += c.errors;
    }
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto checker = pg::PostgresStore::open(o, clock);
  auto audit = checker.ok() ? (*checker)->audit() : Result<AuditReport>(checker.error());
  const bool clean = audit.ok() && audit->violations.empty();
  std::printf(
      "processes=%d stores/process=%d threads/store=%d allocations=%d pool=%d: %.0f "
      "admit+settle/s (%lld in %.1f s, %lld errors), audit %s\n",
      args.processes, args.stores, args.threads, args.allocations, args.pool,
      static_cast<double>(total.ops) / secs, static_cast<long long>(total.ops), secs,
      static_cast<long long>(total.errors), clean ? "clean" : "VIOLATIONS");
  return clean && total.errors == 0 ? 0 : 1;
}
