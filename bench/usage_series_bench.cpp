// usage_series_bench: how long a usage series takes on an allocation with a month of
// traffic (SPEC-CONSOLE §2), on either store. It creates one allocation through the Store,
// writes N requests spread evenly over 30 days straight into the tables (one in 100
// failed, one in 1000 usage_pending, the rest booked: ~0.99 N usage events, with the
// running totals and start numbers the store itself would write), reopens the store,
// checks the ledger with the store's audit, and times Store::usage_series:
//
//   build/bench/usage_series_bench --store sqlite:///tmp/series.db --requests 1000000
//   build/bench/usage_series_bench --store postgresql://postgres@127.0.0.1:PORT/db --requests
//   1000000
//
// Reported: the median and slowest of --repeat calls for a month of hours (720 buckets),
// 1000 minutes, and a month of days.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "store/open.h"
#include "store/postgres/pg.h"
#include "store/sqlite/db.h"

using namespace cairva;
using namespace cairva::store;

namespace {

constexpr int64_t minute_us = 60 * micros_per_second;
constexpr int64_t hour_us = 60 * minute_us;
constexpr int64_t day_us = 24 * hour_us;
constexpr int64_t month_us = 30 * day_us;
// 2026-01-01T00:00:00Z: the month measured starts here (UTC-aligned).
constexpr UnixMicros t0_us = 1'767'225'600LL * micros_per_second;

struct Args {
  std::string store;
  int64_t requests = 1'000'000;
  int repeat = 20;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--store" && i + 1 < argc) {
      a.store = argv[++i];
    } else if (k == "--requests" && i + 1 < argc) {
      a.requests = std::atoll(argv[++i]);
    } else if (k == "--repeat" && i + 1 < argc) {
      a.repeat = std::atoi(argv[++i]);
    } else {
      a.store.clear();
      break;
    }
  }
  if (a.store.empty() || a.requests < 1000 || a.repeat < 1) {
    std::fprintf(stderr,
                 "usage: usage_series_bench --store URL [--requests N (>= 1000)] [--repeat R]\n");
    std::exit(2);
  }
  return a;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "usage_series_bench: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T must(Result<T> r, const char* what) {
  if (!r.ok()) fail(std::string(what) + ": " + r.error().message);
  return std::move(r).value();
}

StoreOptions options_for(const std::string& url) {
  StoreOptions o;
  o.url = url;
  o.use_database_clock = false;
  o.providers = {"bench"};
  return o;
}

// The request i of N: its start, its state, and whether it booked an event. One in 100
// failed, one in 1000 usage_pending (the first of each thousand), the rest booked.
const char* state_sql(const char* i) {
  static thread_local std::string s;
  s = std::string("CASE WHEN ") + i + " % 100 = 0 THEN 'failed' WHEN " + i +
      " % 1000 = 1 THEN 'usage_pending' ELSE 'booked' END";
  return s.c_str();
}

void fill_sqlite(const std::string& path, const std::string& alloc, const std::string& key,
                 int64_t n, int64_t step) {
  auto db = must(sqlite::Db::open(path, false), "open");
  const std::string N = std::to_string(n), T = std::to_string(t0_us), S = std::to_string(step);
  const std::string sql =
      "BEGIN;"
      "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < " +
      N +
      ")"
      " INSERT INTO requests (id, allocation_id, key_id, state, started_at, finished_at, model, "
      "stream, hold_input,"
      " hold_output, provider_request_id, seq, start_ordinal)"
      " SELECT printf('req_bench%012d', i), '" +
      alloc + "', '" + key + "', " + state_sql("i") + ", " + T + " + i * " + S +
      ", CASE WHEN i % 1000 = 1 THEN NULL ELSE " + T + " + i * " + S +
      " + 500 END, 'm', 0, 10, 10,"
      " CASE WHEN i % 100 = 0 OR i % 1000 = 1 THEN '' ELSE 'prov' || i END, i + 1, i + 1 FROM k;"
      "INSERT INTO usage_events (id, allocation_id, request_id, provider_request_id, input_tokens, "
      "output_tokens,"
      " source, finality, evidence, booked_at, corrects, cum_input, cum_output)"
      " SELECT 'evt_b' || id, allocation_id, id, provider_request_id, 10, 7, 'provider', "
      "'reported', '', started_at + 500,"
      " NULL, 10 * row_number() OVER w, 7 * row_number() OVER w FROM requests WHERE state = "
      "'booked'"
      " WINDOW w AS (ORDER BY started_at);"
      "UPDATE allocations SET used_input = (SELECT COALESCE(SUM(input_tokens), 0) FROM "
      "usage_events),"
      " used_output = (SELECT COALESCE(SUM(output_tokens), 0) FROM usage_events) WHERE id = '" +
      alloc +
      "';"
      "COMMIT;";
  if (Status s = db.exec(sql); !s.ok()) fail("fill: " + s.error().message);
}

void fill_postgres(const std::string& url, const std::string& alloc, const std::string& key,
                   int64_t n, int64_t step) {
  auto c = must(pg::Connection::open(url), "connect");
  const std::string N = std::to_string(n - 1), T = std::to_string(t0_us), S = std::to_string(step);
  const std::string sql =
      "BEGIN;"
      "INSERT INTO requests (id, allocation_id, key_id, state, started_at, finished_at, model, "
      "stream, hold_input,"
      " hold_output, provider_request_id, start_ordinal)"
      " SELECT 'req_bench' || lpad(i::text, 12, '0'), '" +
      alloc + "', '" + key + "', " + state_sql("i") + ", " + T + " + i * " + S +
      ", CASE WHEN i % 1000 = 1 THEN NULL ELSE " + T + " + i * " + S +
      " + 500 END, 'm', false, 10, 10,"
      " CASE WHEN i % 100 = 0 OR i % 1000 = 1 THEN '' ELSE 'prov' || i END, i + 1 FROM "
      "generate_series(0::bigint, " +
      N +
      ") i;"
      "INSERT INTO usage_events (id, allocation_id, seq, request_id, provider_request_id, "
      "input_tokens, output_tokens,"
      " source, finality, evidence, booked_at, cum_tokens, cum_input, cum_output)"
      " SELECT 'evt_b' || id, allocation_id, row_number() OVER w, id, provider_request_id, 10, 7, "
      "'provider', 'reported', '',"
      " started_at + 500, 17 * row_number() OVER w, 10 * row_number() OVER w, 7 * row_number() "
      "OVER w"
      " FROM requests WHERE allocation_id = '" +
      alloc +
      "' AND state = 'booked' WINDOW w AS (ORDER BY started_at);"
      "UPDATE allocations SET booked_input = e.i, booked_output = e.o, event_seq = e.n,"
      " held_input = 10 * p.n, held_output = 10 * p.n"
      " FROM (SELECT COALESCE(sum(input_tokens), 0) i, COALESCE(sum(output_tokens), 0) o, count(*) "
      "n FROM usage_events"
      "   WHERE allocation_id = '" +
      alloc +
      "') e,"
      " (SELECT count(*) n FROM requests WHERE allocation_id = '" +
      alloc +
      "' AND state = 'usage_pending') p"
      " WHERE id = '" +
      alloc +
      "';"
      "COMMIT;";
  if (auto r = c->exec(sql); !r.ok()) fail("fill: " + r.error().message);
  // What autovacuum does after a load: statistics, and the visibility map that lets the
  // series' probes read their indexes alone.
  for (const char* table : {"requests", "usage_events"}) {
    if (auto r = c->exec(std::string("VACUUM ANALYZE ") + table); !r.ok())
      fail("vacuum: " + r.error().message);
  }
}

double millis_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

Result<UsageSeries> series(Store& s, const UsageQuery& q) {
  std::promise<Result<UsageSeries>> p;
  auto f = p.get_future();
  s.usage_series(q, [&p](Result<UsageSeries> r) { p.set_value(std::move(r)); });
  return f.get();
}

void measure(Store& s, const std::string& alloc, const char* name, UnixMicros from, UnixMicros to,
             int64_t bucket, int repeat) {
  std::vector<double> ms;
  int64_t requests = 0;
  size_t buckets = 0;
  for (int i = 0; i < repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto r = must(series(s, UsageQuery{alloc, from, to, bucket}), name);
    ms.push_back(millis_since(start));
    buckets = r.buckets.size();
    requests = 0;
    for (const auto& b : r.buckets) requests += b.requests;
  }
  std::sort(ms.begin(), ms.end());
  std::printf(
      "%-22s %5zu buckets  %8lld requests counted  median %7.2f ms  slowest %7.2f ms  (%d calls)\n",
      name, buckets, static_cast<long long>(requests), ms[ms.size() / 2], ms.back(), repeat);
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  const bool sqlite = args.store.starts_with("sqlite://");
  if (sqlite) {
    const std::string path = args.store.substr(std::string("sqlite://").size());
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
    for (const auto& e :
         std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
      if (e.path().filename().string().starts_with(std::filesystem::path(path).filename().string() +
                                                   "-oplog")) {
        std::filesystem::remove(e.path());
      }
    }
  }
  auto clock = std::make_shared<ManualClock>(t0_us);
  std::string alloc, key;
  {
    auto s = must(open_store(options_for(args.store), clock), "open");
    NewAgreement a;
    a.supplier = "bench";
    a.buyer = "bench";
    a.provider = "bench";
    a.terms.window = {t0_us, t0_us + 40 * day_us};
    a.terms.limits = {1'000'000, 1'000'000'000, 1000};
    a.terms.allowance = {int64_t{1} << 50, int64_t{1} << 50};
    auto created = must(s->create_agreement(a), "create agreement");
    alloc = created.allocation.id;
    key = created.key_id;
  }
  const int64_t step = month_us / args.requests;
  auto start = std::chrono::steady_clock::now();
  if (sqlite) {
    fill_sqlite(args.store.substr(std::string("sqlite://").size()), alloc, key, args.requests,
                step);
  } else {
    fill_postgres(args.store, alloc, key, args.requests, step);
  }
  std::printf("filled %lld requests over 30 days in %.1f s\n",
              static_cast<long long>(args.requests), millis_since(start) / 1000);
  // The gateway's clock from here: the writer's timers (its linger, its retries) run on the
  // store's clock, and a series read waits for the writer as an admin read does.
  auto s = must(open_store(options_for(args.store), std::make_shared<SystemClock>()), "reopen");
  start = std::chrono::steady_clock::now();
  auto report = must(s->audit(), "audit");
  std::printf("audit: %lld requests, %lld events, %zu violation(s) (%.1f s)\n",
              static_cast<long long>(report.requests), static_cast<long long>(report.events),
              report.violations.size(), millis_since(start) / 1000);
  for (const auto& v : report.violations) std::printf("  violation: %s\n", v.c_str());
  measure(*s, alloc, "month of hours", t0_us, t0_us + month_us, hour_us, args.repeat);
  measure(*s, alloc, "1000 minutes", t0_us + 10 * day_us, t0_us + 10 * day_us + 1000 * minute_us,
          minute_us, args.repeat);
  measure(*s, alloc, "month of days", t0_us, t0_us + month_us, day_us, args.repeat);
  return report.violations.empty() ? 0 : 1;
}
