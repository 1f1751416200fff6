// PostgreSQL-specific behaviour: several PostgresStore objects (as several gateway
// processes would be) on one database, migrations at concurrent start-up, the sweep of a
// dead store's requests. Needs env CAIRVA_TEST_PG_URL (scripts/pg-test-cluster.sh url).
#include "store/postgres/postgres_store.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "base/ids.h"
#include "core/limits.h"
#include "store/postgres/schema.h"
#include "store/postgres/test_schema.h"

namespace cairva::store::pg {
namespace {

constexpr UnixMicros t0 = 1'800'000'000LL * micros_per_second;
constexpr int64_t day_us = 86'400LL * micros_per_second;

template <class T, class F>
Result<T> wait_for(F start) {
  std::promise<Result<T>> p;
  auto fut = p.get_future();
  start([&p](Result<T> r) { p.set_value(std::move(r)); });
  return fut.get();
}

constexpr int64_t hour_us = 3600 * micros_per_second;

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(schema_.ok()) << schema_.error(); }

  StoreOptions options(int pool_size = 4) const {
    StoreOptions o;
    o.url = schema_.url();
    o.pool_size = pool_size;
    o.use_database_clock = false;
    o.in_flight_timeout_s = 600;
    o.providers = {"mock"};
    return o;
  }

  std::unique_ptr<PostgresStore> open(int pool_size = 4) {
    auto s = PostgresStore::open(options(pool_size), clock_);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return s.ok() ? std::move(s).value() : nullptr;
  }

  CreatedAgreement agreement(Store& s, core::Limits limits, core::Tokens allowance) {
    NewAgreement a{"supplier", "buyer", "mock", {}, {}};
    a.terms.window = {t0 - micros_per_second, t0 + day_us};
    a.terms.limits = limits;
    a.terms.allowance = allowance;
    auto r = s.create_agreement(a);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    if (!r.ok()) return CreatedAgreement{};
    std::lock_guard lock(keys_mu_);
    key_of_.emplace(r->allocation.id, r->key_id);
    return r.value();
  }

  // An admission with the allocation's first key (agreement() made both).
  AdmitCommand command(const std::string& allocation_id, int64_t max_tokens = 100) {
    AdmitCommand cmd;
    cmd.request_id = new_id("req");
    cmd.allocation_id = allocation_id;
    std::lock_guard lock(keys_mu_);
    cmd.key_id = key_of_[allocation_id];
    cmd.model = "m";
    cmd.facts.input_estimate = 10;
    cmd.facts.max_tokens = max_tokens;
    return cmd;
  }

  static Result<AdmitResult> admit(Store& s, AdmitCommand cmd) {
    return wait_for<AdmitResult>([&](auto done) { s.admit(std::move(cmd), done); });
  }
  static Result<SettleResult> settle(Store& s, SettleCommand cmd) {
    return wait_for<SettleResult>([&](auto done) { s.settle(std::move(cmd), done); });
  }
  // An allocation with room for everything, and the ids of `n` requests admitted to it.
  std::pair<std::string, std::vector<std::string>> admitted(Store& s, int n) {
    const auto created = agreement(s, {100000, 100000000, 100}, {100000000, 100000000});
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      auto cmd = command(created.allocation.id);
      ids.push_back(cmd.request_id);
      auto r = admit(s, std::move(cmd));
      EXPECT_TRUE(r.ok() && r->decision.admitted()) << i;
    }
    return {created.allocation.id, ids};
  }

  // A column of the allocation's row, read by another session.
  int64_t allocation_value(const std::string& alloc, const char* column) const {
    return testing::query_i64(schema_.url(), std::string("SELECT ") + column +
                                                 " FROM allocations WHERE id = '" + alloc + "'");
  }

  testing::TestSchema schema_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(t0);
  std::mutex keys_mu_;                         // command() runs on the tests' threads too
  std::map<std::string, std::string> key_of_;  // GUARDED_BY(keys_mu_): allocation -> its first key
};

// The admissions of each transaction a store commits (StoreOptions::on_commit_batch).
class CommitLog {
 public:
  StoreOptions options(StoreOptions o) {
    o.on_commit_batch = [this](int64_t n) {
      std::lock_guard lock(mu_);
      transactions_.push_back(n);
    };
    return o;
  }
  // What was committed since the last call.
  std::vector<int64_t> taken() {
    std::lock_guard lock(mu_);
    return std::exchange(transactions_, {});
  }

 private:
  std::mutex mu_;
  std::vector<int64_t> transactions_;  // GUARDED_BY(mu_)
};

// Every invariant `cairva audit` checks holds.
void expect_audit_clean(Store& s) {
  auto audit = s.audit();
  ASSERT_TRUE(audit.ok()) << audit.error().message;
  EXPECT_TRUE(audit->violations.empty()) << audit->violations.front();
}

// Another session holding an allocation's row lock until released or destroyed: work the
// store sends meanwhile waits for it. Closed however a test ends (an open transaction
// would keep the lock, and the schema).
class RowLockHolder {
 public:
  RowLockHolder(const std::string& url, const std::string& allocation_id)
      : conn_(PQconnectdb(url.c_str()), &PQfinish) {
    held_ = PQstatus(conn_.get()) == CONNECTION_OK && run("BEGIN") &&
            run("SELECT 1 FROM allocations WHERE id = '" + allocation_id + "' FOR UPDATE");
  }
  bool held() const { return held_; }
  bool release() {
    const bool committed = run("COMMIT");
    conn_.reset();  // the lock goes with the session whatever COMMIT said
    return committed;
  }

 private:
  bool run(const std::string& sql) {
    PGresult* r = PQexec(conn_.get(), sql.c_str());
    const auto st = PQresultStatus(r);
    PQclear(r);
    return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
  }
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
  bool held_ = false;
};

// Whether a session of this test's database waits for a lock within a few seconds (the
// store's first transaction, queued behind a RowLockHolder).
bool some_session_waits_for_a_lock(const std::string& url) {
  for (int i = 0; i < 1000; ++i) {
    if (testing::query_i64(
            url,
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock'") > 0) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

struct Answers {
  std::vector<Result<SettleResult>> settled;
  std::vector<Result<AdmitResult>> admitted;
};

// Sends every settlement, then every admission, to `store` while another session holds
// `allocation_id`'s row lock, then releases it. With `first_alone`, the first settlement
// goes first and the rest only once its transaction waits for the lock: the rest then
// all wait in the store, for the next job. The answers in order, each after every
// callback has run (none may be pending when an assertion returns); nullopt when the
// lock could not be held or released, or the first settlement never waited for it.
std::optional<Answers> behind_lock(Store& store, const std::string& url,
                                   const std::string& allocation_id,
                                   std::vector<SettleCommand> settle,
                                   std::vector<AdmitCommand> admit = {}, bool first_alone = false) {
  RowLockHolder holder(url, allocation_id);
  if (!holder.held()) return std::nullopt;
  std::vector<std::promise<Result<SettleResult>>> settled(settle.size());
  std::vector<std::promise<Result<AdmitResult>>> admitted(admit.size());
  bool waited = true;
  for (size_t i = 0; i < settle.size(); ++i) {
    store.settle(std::move(settle[i]),
                 [&settled, i](Result<SettleResult> r) { settled[i].set_value(std::move(r)); });
    if (i == 0 && first_alone) waited = some_session_waits_for_a_lock(url);
  }
  for (size_t i = 0; i < admit.size(); ++i) {
    store.admit(std::move(admit[i]),
                [&admitted, i](Result<AdmitResult> r) { admitted[i].set_value(std::move(r)); });
  }
  const bool released = holder.release();
  Answers got;
  for (auto& p : settled) got.settled.push_back(p.get_future().get());
  for (auto& p : admitted) got.admitted.push_back(p.get_future().get());
  if (!released || !waited) return std::nullopt;
  return got;
}

TEST_F(PostgresStoreTest, TwoStoresManyThreadsNeverExceedMaxConcurrency) {
  auto a = open(), b = open();
  ASSERT_TRUE(a && b);
  const auto created = agreement(*a, {100000, 100000000, 4}, {100000000, 100000000});
  std::atomic<int> running{0}, peak{0}, admitted{0}, refused{0};
  auto worker = [&](Store& s) {
    for (int i = 0; i < 25; ++i) {
      auto cmd = command(created.allocation.id);
      const std::string id = cmd.request_id;
      auto r = admit(s, std::move(cmd));
      ASSERT_TRUE(r.ok()) << r.error().message;
      if (!r->decision.admitted()) {
        ++refused;
        continue;
      }
      ++admitted;
      const int now_running = ++running;
      int prev = peak.load();
      while (now_running > prev && !peak.compare_exchange_weak(prev, now_running)) {
      }
      --running;  // before the settlement starts: the store still counts it in flight
      auto st = settle(s, SettleCommand{id, created.allocation.id, SettleKind::failed, "", {}});
      ASSERT_TRUE(st.ok()) << st.error().message;
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) threads.emplace_back(worker, std::ref(t % 2 ? *a : *b));
  for (auto& t : threads) t.join();
  EXPECT_LE(peak.load(), 4);
  EXPECT_EQ(admitted + refused, 200);
  EXPECT_GT(admitted.load(), 0);
  expect_audit_clean(*a);
}

TEST_F(PostgresStoreTest, AdmissionsWaitingForTheRowLockAreDecidedTogetherInOrder) {
  CommitLog commits;
  auto opened = PostgresStore::open(commits.options(options()), clock_);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  PostgresStore& store = **opened;
  // Ten at once; output for nine holds of 100 and half of a tenth.
  const auto created = agreement(store, {100000, 100000000, 10}, {100000000, 950});
  const std::string alloc = created.allocation.id;

  // Another session holds the allocation's row lock until every admission has been sent:
  // the first transaction waits for it, the others wait in the store behind it.
  RowLockHolder holder(schema_.url(), alloc);
  ASSERT_TRUE(holder.held());
  constexpr int n = 30;
  std::vector<std::promise<Result<AdmitResult>>> answers(n);
  std::vector<std::future<Result<AdmitResult>>> results;
  results.reserve(answers.size());
  for (auto& a : answers) results.push_back(a.get_future());
  for (int i = 0; i < n; ++i) {
    store.admit(command(alloc),
                [&answers, i](Result<AdmitResult> r) { answers[i].set_value(std::move(r)); });
  }
  const bool committed = holder.release();
  // Every answer first: no callback may still be pending when an assertion below returns.
  std::vector<Result<AdmitResult>> got;
  got.reserve(results.size());
  for (auto& f : results) got.push_back(f.get());
  ASSERT_TRUE(committed);
  for (int i = 0; i < n; ++i) {
    const auto& r = got[static_cast<size_t>(i)];
    ASSERT_TRUE(r.ok()) << r.error().message;
    if (i < 10) {
      ASSERT_TRUE(r->decision.admitted()) << i;
      const auto& a = std::get<core::Admitted>(r->decision.outcome);
      EXPECT_EQ(a.hold.output, i < 9 ? 100 : 50) << i;
      EXPECT_EQ(a.lowered_to, i < 9 ? std::nullopt : std::optional<int64_t>(50)) << i;
      EXPECT_EQ(r->after.in_flight, i + 1);
    } else {
      ASSERT_FALSE(r->decision.admitted()) << i;
      EXPECT_EQ(std::get<core::Refused>(r->decision.outcome).reason, core::Refusal::max_concurrency)
          << i;
    }
  }
  {
    const std::vector<int64_t> transactions = commits.taken();
    int64_t total = 0;
    for (int64_t t : transactions) total += t;
    EXPECT_EQ(total, n);
    EXPECT_LE(transactions.size(), 2u);  // the one that waited for the lock, and the rest
  }
  const std::string where = " FROM requests WHERE allocation_id = '" + alloc + "'";
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT count(*)" + where), 10);
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT count(DISTINCT start_ordinal)" + where), 10);
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT sum(hold_output)" + where), 950);
  EXPECT_EQ(allocation_value(alloc, "held_output"), 950);
  expect_audit_clean(store);
}

// The batch reads the window's oldest start only when its admissions could fill the
// window: here they do, and each answer tells when the window has room again.
TEST_F(PostgresStoreTest, ABatchThatFillsTheRequestsWindowSaysWhenItsOldestStartLeaves) {
  auto opened = PostgresStore::open(options(), clock_);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  PostgresStore& store = **opened;
  const auto created = agreement(store, {4, 100000000, 10}, {100000000, 100000000});
  const std::string alloc = created.allocation.id;
  std::promise<Result<AdmitResult>> first;
  store.admit(command(alloc), [&first](Result<AdmitResult> r) { first.set_value(std::move(r)); });
  ASSERT_TRUE(first.get_future().get().ok());
  clock_->advance_seconds(10);

  RowLockHolder holder(schema_.url(), alloc);
  ASSERT_TRUE(holder.held());
  constexpr int n = 5;
  std::vector<std::promise<Result<AdmitResult>>> answers(n);
  std::vector<std::future<Result<AdmitResult>>> results;
  results.reserve(answers.size());
  for (auto& a : answers) results.push_back(a.get_future());
  for (int i = 0; i < n; ++i) {
    store.admit(command(alloc),
                [&answers, i](Result<AdmitResult> r) { answers[i].set_value(std::move(r)); });
  }
  const bool committed = holder.release();
  std::vector<Result<AdmitResult>> got;
  got.reserve(results.size());
  for (auto& f : results) got.push_back(f.get());
  ASSERT_TRUE(committed);
  for (int i = 0; i < n; ++i) {
    const auto& r = got[static_cast<size_t>(i)];
    ASSERT_TRUE(r.ok()) << r.error().message;
    const core::RateResets resets = core::rate_resets(r->after, r->after.as_of);
    EXPECT_EQ(r->after.as_of, t0 + 10 * micros_per_second) << i;
    if (i < 3) {
      ASSERT_TRUE(r->decision.admitted()) << i;
      // Room until the third fills the window; then the first start, at t0, frees it.
      EXPECT_EQ(resets.requests_us, i < 2 ? 0 : 50 * micros_per_second) << i;
    } else {
      ASSERT_FALSE(r->decision.admitted()) << i;
      const auto& refused = std::get<core::Refused>(r->decision.outcome);
      EXPECT_EQ(refused.reason, core::Refusal::requests_per_minute) << i;
      EXPECT_EQ(refused.retry_after_ms, 50'000) << i;
      EXPECT_EQ(resets.requests_us, 50 * micros_per_second) << i;
    }
  }
  clock_->advance_seconds(600);
  ASSERT_TRUE(store.sweep_stale().ok());
  expect_audit_clean(store);
}

TEST_F(PostgresStoreTest, SettlementsWaitingForTheRowLockAreSettledTogetherInOrder) {
  auto store = open();
  ASSERT_TRUE(store);
  constexpr int n = 30;
  // Named, not a structured binding: the lambdas below capture them (clang 14 cannot).
  const auto admitted_requests = admitted(*store, n);
  const std::string& alloc = admitted_requests.first;
  const std::vector<std::string>& ids = admitted_requests.second;
  auto usage = [&](int i, const std::string& provider_id, core::Tokens counts = {10, 20}) {
    return SettleCommand{ids[static_cast<size_t>(i)], alloc, SettleKind::usage, provider_id,
                         counts};
  };
  // The first waits for the lock in its own transaction; the rest wait in the store and
  // go together in the next one, in this order.
  std::vector<SettleCommand> cmds;
  cmds.push_back(usage(0, "p-0"));
  for (int i = 1; i < n; ++i) cmds.push_back(usage(i, "p-" + std::to_string(i)));
  cmds[5] = {ids[5], alloc, SettleKind::failed, "", {}};
  cmds[6] = {ids[6], alloc, SettleKind::usage_missing, "p-6", {}};
  cmds[7] = usage(7, "p-3");            // 3's id reused: pending, a conflict
  cmds[8] = usage(8, "p-4", {10, 21});  // 4's id reused with other counts: the same
  cmds.push_back(usage(1, "p-1"));      // 1 again: a duplicate of its own event
  cmds.push_back({"req_\"quoted\\", alloc, SettleKind::usage, "p-x", {1, 1}});  // no such request
  cmds.push_back({ids[5], alloc, SettleKind::usage, "p-5", {1, 1}});  // failed before: settled

  const auto answers = behind_lock(*store, schema_.url(), alloc, std::move(cmds));
  ASSERT_TRUE(answers);
  const auto& got = answers->settled;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(got[i].ok()) << i << ": " << got[i].error().message;
  for (int i = 0; i < n; ++i) {
    const SettleResult& r = *got[static_cast<size_t>(i)];
    if (i == 5) {
      EXPECT_EQ(r.request_state, core::RequestState::failed);
    } else if (i == 6 || i == 7 || i == 8) {
      EXPECT_EQ(r.book, i == 6 ? core::BookResult::pending : core::BookResult::reused_id) << i;
      EXPECT_EQ(r.request_state, core::RequestState::usage_pending);
    } else {
      EXPECT_EQ(r.book, core::BookResult::booked) << i;
      EXPECT_EQ(r.request_state, core::RequestState::booked) << i;
    }
  }
  EXPECT_EQ(got[n]->book, core::BookResult::duplicate);
  EXPECT_EQ(got[n]->request_state, core::RequestState::booked);
  EXPECT_EQ(got[n + 1]->book, core::BookResult::unknown_request);
  EXPECT_EQ(got[n + 2]->book, core::BookResult::already_settled);
  EXPECT_EQ(got[n + 2]->request_state, core::RequestState::failed);

  const std::string events = " FROM usage_events WHERE allocation_id = '" + alloc + "'";
  constexpr int booked = n - 4;  // 5 failed, 6, 7 and 8 pending
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT count(*)" + events), booked);
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT max(seq)" + events), booked);
  // The transactions that wrote the events: the one that waited for the lock, and the rest.
  EXPECT_LE(testing::query_i64(schema_.url(), "SELECT count(DISTINCT xmin::text)" + events), 2);
  EXPECT_EQ(allocation_value(alloc, "booked_output"), 20 * booked);
  EXPECT_EQ(allocation_value(alloc, "held_output"), 300);  // 6's, 7's and 8's holds, pending
  EXPECT_EQ(
      testing::query_i64(schema_.url(),
                         "SELECT count(*) FROM conflicts WHERE allocation_id = '" + alloc + "'"),
      2);
  expect_audit_clean(*store);
}

TEST_F(PostgresStoreTest, ABatchMeetingAnEventBookedBeforeItPlansAgainstIt) {
  auto store = open();
  ASSERT_TRUE(store);
  const auto [alloc, ids] = admitted(*store, 4);
  auto first = settle(*store, {ids[0], alloc, SettleKind::usage, "p-seen", {10, 20}});
  ASSERT_TRUE(first.ok() && first->book == core::BookResult::booked);

  // Whichever batch holds 1's settlement reads the event 0 booked with its row: 1 is left
  // pending, the others settle in the same transaction.
  const auto answers = behind_lock(*store, schema_.url(), alloc,
                                   {{ids[3], alloc, SettleKind::failed, "", {}},
                                    {ids[1], alloc, SettleKind::usage, "p-seen", {10, 20}},
                                    {ids[2], alloc, SettleKind::usage, "p-new", {10, 20}}});
  ASSERT_TRUE(answers);
  const auto& got = answers->settled;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(got[i].ok()) << i << ": " << got[i].error().message;
  EXPECT_EQ(got[0]->request_state, core::RequestState::failed);
  EXPECT_EQ(got[1]->book, core::BookResult::reused_id);
  EXPECT_EQ(got[2]->book, core::BookResult::booked);
  EXPECT_EQ(
      testing::query_i64(schema_.url(),
                         "SELECT count(*) FROM usage_events WHERE allocation_id = '" + alloc + "'"),
      2);
  EXPECT_EQ(allocation_value(alloc, "booked_output"), 40);
  EXPECT_EQ(allocation_value(alloc, "held_output"), 100);  // 1's
  expect_audit_clean(*store);
}

TEST_F(PostgresStoreTest, ASettlementTheDatabaseRefusesFailsAlone) {
  auto store = open();
  ASSERT_TRUE(store);
  const auto [alloc, ids] = admitted(*store, 5);
  // Not UTF-8: the database refuses the id, and so the transaction that carries it. A NUL
  // byte: libpq would cut the id there (and "p-" could then take another's booking), so
  // the store refuses to send it.
  using namespace std::string_literals;
  const auto answers = behind_lock(*store, schema_.url(), alloc,
                                   {{ids[0], alloc, SettleKind::usage, "p-0", {10, 20}},
                                    {ids[1], alloc, SettleKind::usage, "p-\xff", {10, 20}},
                                    {ids[2], alloc, SettleKind::usage, "p-\0x"s, {10, 20}},
                                    {ids[3], alloc, SettleKind::usage, "p-3", {10, 20}},
                                    {ids[4], alloc, SettleKind::usage, "p-", {10, 20}}});
  ASSERT_TRUE(answers);
  const auto& got = answers->settled;
  for (size_t i : {0u, 3u, 4u}) {
    ASSERT_TRUE(got[i].ok()) << i << ": " << got[i].error().message;
    EXPECT_EQ(got[i]->book, core::BookResult::booked) << i;
  }
  ASSERT_FALSE(got[1].ok());
  EXPECT_EQ(got[1].error().code, ErrorCode::store_unavailable);
  ASSERT_FALSE(got[2].ok());
  EXPECT_EQ(got[2].error().code, ErrorCode::invalid_request);
  EXPECT_NE(got[2].error().message.find("NUL"), std::string::npos) << got[2].error().message;
  EXPECT_EQ(
      testing::query_i64(schema_.url(),
                         "SELECT count(*) FROM usage_events WHERE allocation_id = '" + alloc + "'"),
      3);
  // The two refused requests are still in flight, their holds kept for the sweep.
  EXPECT_EQ(allocation_value(alloc, "held_output"), 200);
  expect_audit_clean(*store);
}

TEST_F(PostgresStoreTest, SettlementsAndAdmissionsWaitingTogetherShareOneTransaction) {
  CommitLog commits;
  auto opened = PostgresStore::open(commits.options(options()), clock_);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  PostgresStore& store = **opened;
  const auto created =
      agreement(store, {100000, 100000000, 4}, {100000000, 100000000});  // 4 at once
  const std::string alloc = created.allocation.id;
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    auto cmd = command(alloc);
    ids.push_back(cmd.request_id);
    ASSERT_TRUE(admit(store, std::move(cmd))->decision.admitted()) << i;
  }
  commits.taken();  // the set-up's
  // 0 settles alone (its transaction waits for the lock); the other settlements and five
  // admissions wait in the store and go in the next transaction, the settlements first:
  // the four places they free admit four, the fifth is refused.
  std::vector<AdmitCommand> admissions;
  admissions.reserve(5);
  for (int i = 0; i < 5; ++i) admissions.push_back(command(alloc));
  const auto answers = behind_lock(store, schema_.url(), alloc,
                                   {{ids[0], alloc, SettleKind::usage, "p-0", {10, 20}},
                                    {ids[1], alloc, SettleKind::usage, "p-1", {10, 20}},
                                    {ids[2], alloc, SettleKind::usage, "p-2", {10, 20}},
                                    {ids[3], alloc, SettleKind::failed, "", {}}},
                                   std::move(admissions), /*first_alone=*/true);
  ASSERT_TRUE(answers);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(answers->settled[i].ok()) << i << ": " << answers->settled[i].error().message;
    EXPECT_EQ(answers->settled[i]->book, core::BookResult::booked) << i;
  }
  ASSERT_TRUE(answers->settled[3].ok()) << answers->settled[3].error().message;
  EXPECT_EQ(answers->settled[3]->request_state, core::RequestState::failed);
  for (int i = 0; i < 5; ++i) {
    const auto& r = answers->admitted[static_cast<size_t>(i)];
    ASSERT_TRUE(r.ok()) << i << ": " << r.error().message;
    if (i < 4) {
      EXPECT_TRUE(r->decision.admitted()) << i;
      EXPECT_EQ(r->after.in_flight, i + 1) << i;
    } else {
      ASSERT_FALSE(r->decision.admitted());
      EXPECT_EQ(std::get<core::Refused>(r->decision.outcome).reason,
                core::Refusal::max_concurrency);
    }
  }
  EXPECT_EQ(commits.taken(), std::vector<int64_t>{5});
  // 1's and 2's events and the four new requests: written by one transaction.
  const std::string settled_later = "'" + ids[1] + "','" + ids[2] + "'";
  const std::string before = "'" + ids[0] + "','" + ids[1] + "','" + ids[2] + "','" + ids[3] + "'";
  EXPECT_EQ(
      testing::query_i64(schema_.url(),
                         "SELECT count(DISTINCT x) FROM (SELECT xmin::text AS x FROM usage_events "
                         "WHERE request_id IN (" +
                             settled_later +
                             ") UNION ALL SELECT xmin::text FROM requests WHERE allocation_id = '" +
                             alloc + "' AND id NOT IN (" + before + ")) t"),
      1);
  EXPECT_EQ(allocation_value(alloc, "booked_output"), 60);
  EXPECT_EQ(allocation_value(alloc, "held_output"), 400);
  expect_audit_clean(store);
}

TEST_F(PostgresStoreTest, ASharedTransactionMeetingAnEventBookedBeforePlansAgainstIt) {
  auto store = open();
  ASSERT_TRUE(store);
  const auto [alloc, ids] = admitted(*store, 3);
  auto first = settle(*store, {ids[0], alloc, SettleKind::usage, "p-seen", {10, 20}});
  ASSERT_TRUE(first.ok() && first->book == core::BookResult::booked);
  // 2 fails alone, waiting for the lock; 1's report then reads 0's event inside the
  // transaction it shares with two admissions, which are decided after it.
  const auto answers = behind_lock(*store, schema_.url(), alloc,
                                   {{ids[2], alloc, SettleKind::failed, "", {}},
                                    {ids[1], alloc, SettleKind::usage, "p-seen", {10, 20}}},
                                   {command(alloc), command(alloc)}, /*first_alone=*/true);
  ASSERT_TRUE(answers);
  for (const auto& r : answers->settled) ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(answers->settled[0]->request_state, core::RequestState::failed);
  EXPECT_EQ(answers->settled[1]->book, core::BookResult::reused_id);
  for (const auto& r : answers->admitted) {
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r->decision.admitted());
  }
  EXPECT_EQ(
      testing::query_i64(schema_.url(),
                         "SELECT count(*) FROM usage_events WHERE allocation_id = '" + alloc + "'"),
      1);
  EXPECT_EQ(
      testing::query_i64(schema_.url(),
                         "SELECT count(*) FROM requests WHERE allocation_id = '" + alloc + "'"),
      5);
  EXPECT_EQ(allocation_value(alloc, "booked_output"), 20);
  EXPECT_EQ(allocation_value(alloc, "held_output"), 300);  // 1's and the two new holds
  expect_audit_clean(*store);
}

TEST_F(PostgresStoreTest, AGrantCachedBeforeItsKeyWasRevokedAdmitsNothing) {
  auto a = open(), b = open();
  ASSERT_TRUE(a && b);
  const auto created = agreement(*a, {100000, 100000000, 100}, {100000000, 100000000});
  const std::string alloc = created.allocation.id;
  const auto other = a->create_key(alloc);
  ASSERT_TRUE(other.ok());
  const std::string hash = hash_secret(created.key_secret);
  auto grant_for_admission = [&](Store& s) {
    return wait_for<KeyGrant>([&](auto done) { s.authenticate_for_admission(hash, done); });
  };
  auto first = grant_for_admission(*a);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_FALSE(first->provisional);  // from the database
  auto cached = grant_for_admission(*a);
  ASSERT_TRUE(cached.ok());
  EXPECT_TRUE(cached->provisional);
  EXPECT_EQ(cached->key_id, created.key_id);
  EXPECT_EQ(cached->allocation_id, alloc);

  // Revoked through another process: a's cache still holds the grant; a's admissions read
  // the key under the row lock and refuse it, in a batch with another key's, which goes on.
  ASSERT_TRUE(b->revoke_key(created.key_id).ok());
  auto revoked_cmd = command(alloc);
  revoked_cmd.key_id = created.key_id;
  auto other_cmd = command(alloc);
  other_cmd.key_id = other->key_id;
  const std::string admitted_id = other_cmd.request_id;
  const auto answers =
      behind_lock(*a, schema_.url(), alloc, {}, {std::move(revoked_cmd), std::move(other_cmd)});
  ASSERT_TRUE(answers);
  ASSERT_FALSE(answers->admitted[0].ok());
  EXPECT_EQ(answers->admitted[0].error().code, ErrorCode::invalid_api_key);
  ASSERT_TRUE(answers->admitted[1].ok()) << answers->admitted[1].error().message;
  EXPECT_TRUE(answers->admitted[1]->decision.admitted());
  EXPECT_EQ(answers->admitted[1]->after.in_flight, 1);
  EXPECT_EQ(
      testing::query_i64(schema_.url(), "SELECT count(*) FROM requests WHERE allocation_id = '" +
                                            alloc + "' AND id <> '" + admitted_id + "'"),
      0);
  // The refusal dropped the grant from a's cache: the key is refused at authentication.
  auto after = grant_for_admission(*a);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code, ErrorCode::invalid_api_key);
  expect_audit_clean(*a);
}

TEST_F(PostgresStoreTest, TwoStoresAdmitExactlyRequestsPerMinute) {
  auto a = open(), b = open();
  ASSERT_TRUE(a && b);
  const auto created = agreement(*a, {20, 100000000, 1000}, {100000000, 100000000});
  std::atomic<int> admitted{0}, rate_limited{0};
  auto worker = [&](Store& s) {
    for (int i = 0; i < 8; ++i) {
      auto r = admit(s, command(created.allocation.id));
      ASSERT_TRUE(r.ok()) << r.error().message;
      if (r->decision.admitted()) {
        ++admitted;
      } else if (std::get<core::Refused>(r->decision.outcome).reason ==
                 core::Refusal::requests_per_minute) {
        ++rate_limited;
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(6);
  for (int t = 0; t < 6; ++t) threads.emplace_back(worker, std::ref(t % 2 ? *a : *b));
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 20);
  EXPECT_EQ(rate_limited.load(), 48 - 20);
  // 60 s later the window has slid past every start.
  clock_->advance_seconds(core::rate_window_s + 1);
  auto r = admit(*b, command(created.allocation.id));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->decision.admitted());
}

TEST_F(PostgresStoreTest, AuditFindsAWindowWithMoreStartsThanRequestsPerMinute) {
  auto s = open();
  ASSERT_TRUE(s);
  const auto created = agreement(*s, {3, 100000000, 1000}, {100000000, 100000000});
  auto start_two = [&] {
    for (int i = 0; i < 2; ++i) {
      auto r = admit(*s, command(created.allocation.id));
      ASSERT_TRUE(r.ok()) << r.error().message;
      ASSERT_TRUE(r->decision.admitted());
    }
  };
  start_two();
  clock_->advance_seconds(core::rate_window_s);  // a start exactly one window ago is out of it
  start_two();
  auto audit_now = [&] {
    auto a = s->audit();
    EXPECT_TRUE(a.ok()) << a.error().message;
    return a.ok() ? a->violations : std::vector<std::string>{"audit failed"};
  };
  EXPECT_TRUE(audit_now().empty());
  // Two starts per window: a limit of 2 holds, a limit of 1 does not.
  ASSERT_EQ(testing::exec_sql(schema_.url(), "UPDATE agreements SET requests_per_minute = 2"), "");
  EXPECT_TRUE(audit_now().empty());
  ASSERT_EQ(testing::exec_sql(schema_.url(), "UPDATE agreements SET requests_per_minute = 1"), "");
  const auto found = audit_now();
  ASSERT_EQ(found.size(), 4u);  // every start: it and its tie share a window
  EXPECT_NE(found[0].find("no 60 s window holds more starts than requests_per_minute: " +
                          created.allocation.id + ": 2 starts in the 60 s up to "),
            std::string::npos)
      << found[0];
}

TEST_F(PostgresStoreTest, TwoStoresNeverHoldMoreThanTheOutputAllowance) {
  auto a = open(), b = open();
  ASSERT_TRUE(a && b);
  const auto created = agreement(*a, {1000, 100000000, 1000}, {100000000, 1000});
  std::atomic<int> admitted{0}, exhausted{0};
  std::atomic<int64_t> held{0};
  auto worker = [&](Store& s) {
    for (int i = 0; i < 5; ++i) {
      auto r = admit(s, command(created.allocation.id, 100));
      ASSERT_TRUE(r.ok()) << r.error().message;
      if (r->decision.admitted()) {
        ++admitted;
        held += std::get<core::Admitted>(r->decision.outcome).hold.output;
      } else {
        EXPECT_EQ(std::get<core::Refused>(r->decision.outcome).reason,
                  core::Refusal::allowance_exhausted);
        ++exhausted;
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(6);
  for (int t = 0; t < 6; ++t) threads.emplace_back(worker, std::ref(t % 2 ? *a : *b));
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 10);
  EXPECT_EQ(held.load(), 1000);
  auto status = b->get_allocation(created.allocation.id);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->snapshot.held.output, 1000);
  EXPECT_EQ(status->snapshot.remaining().output, 0);
}

TEST_F(PostgresStoreTest, SameProviderResponseThroughTwoStoresIsBookedOnce) {
  auto a = open(), b = open();
  ASSERT_TRUE(a && b);
  const auto created = agreement(*a, {100, 100000000, 10}, {100000, 100000});
  auto c1 = command(created.allocation.id), c2 = command(created.allocation.id);
  const std::string r1 = c1.request_id, r2 = c2.request_id;
  ASSERT_TRUE(admit(*a, std::move(c1))->decision.admitted());
  ASSERT_TRUE(admit(*b, std::move(c2))->decision.admitted());
  auto s1 = settle(*a, {r1, created.allocation.id, SettleKind::usage, "chatcmpl-1", {7, 9}});
  auto s2 = settle(*b, {r2, created.allocation.id, SettleKind::usage, "chatcmpl-1", {7, 9}});
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_EQ(s1->book, core::BookResult::booked);
  EXPECT_EQ(s2->book, core::BookResult::reused_id);
  EXPECT_EQ(s2->request_state, core::RequestState::usage_pending);
  auto status = a->get_allocation(created.allocation.id);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->snapshot.booked, (core::Tokens{7, 9}));
  EXPECT_EQ(status->snapshot.held, b->get_request(r2)->hold);
  auto events = b->list_events(store::EventFilter{
      .allocation_id = created.allocation.id, .after = std::nullopt, .limit = 100});
  ASSERT_TRUE(events.ok());
  EXPECT_EQ(events->data.size(), 1u);
}

TEST_F(PostgresStoreTest, FourStoresOpeningAtOnceApplyEachMigrationOnce) {
  std::vector<std::future<Result<std::unique_ptr<PostgresStore>>>> opening;
  opening.reserve(4);
  for (int i = 0; i < 4; ++i) {
    opening.push_back(
        std::async(std::launch::async, [&] { return PostgresStore::open(options(2), clock_); }));
  }
  for (auto& f : opening) {
    auto s = f.get();
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  }
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT count(*) FROM schema_migrations"),
            schema_version_latest());
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT max(version) FROM schema_migrations"),
            schema_version_latest());
}

// `cairva audit` opens the store with migrate = false: a schema behind this build's is
// reported, never migrated under the older gateways that may still be serving it.
TEST_F(PostgresStoreTest, AnOpenThatMustNotMigrateRefusesAnOlderSchemaAndChangesNothing) {
  {
    auto c = Connection::open(schema_.url());
    ASSERT_TRUE(c.ok()) << c.error().message;
    ASSERT_TRUE(migrate(**c, 1).ok());
  }
  StoreOptions o = options(2);
  o.migrate = false;
  auto refused = PostgresStore::open(o, clock_);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("schema is at version 1"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT max(version) FROM schema_migrations"), 1);
  auto s = open();  // migrates
  ASSERT_NE(s, nullptr);
  auto audited = PostgresStore::open(o, clock_);
  ASSERT_TRUE(audited.ok()) << audited.error().message;
  auto report = (*audited)->audit();
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->violations.empty());
}

// Rolling upgrades (schema.h): a schema newer than the build is served only when every
// version above the build's was recorded compatible with it; otherwise serve and audit refuse
// and change nothing.
TEST_F(PostgresStoreTest, ASchemaNewerThanTheBuildIsServedOnlyWhenRecordedCompatible) {
  ASSERT_NE(open(), nullptr);
  const int latest = schema_version_latest();
  const std::string next = std::to_string(latest + 1);
  const std::string count_rows =
      "SELECT (SELECT count(*) FROM schema_migrations) * 1000 + (SELECT count(*) FROM "
      "schema_compatibility)";
  {
    auto c = Connection::open(schema_.url());
    ASSERT_TRUE(c.ok()) << c.error().message;
    ASSERT_TRUE((*c)->exec("INSERT INTO schema_migrations (version) VALUES (" + next +
                           ");"
                           "INSERT INTO schema_compatibility VALUES (" +
                           next + ", " + next + ")")
                    .ok());
  }
  const int64_t before = testing::query_i64(schema_.url(), count_rows);
  auto refused = PostgresStore::open(options(2), clock_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "postgres: the schema is at version " + next + ", newer than this cairva's (" +
                std::to_string(latest) + "), and gateways older than schema version " + next +
                " cannot use it: run a cairva of that version or newer (nothing was changed)");
  StoreOptions audit = options(2);
  audit.migrate = false;
  auto audit_refused = PostgresStore::open(audit, clock_);
  ASSERT_FALSE(audit_refused.ok());
  EXPECT_NE(audit_refused.error().message.find("newer than this cairva audits"), std::string::npos)
      << audit_refused.error().message;
  EXPECT_EQ(testing::query_i64(schema_.url(), count_rows), before);
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT max(version) FROM schema_migrations"),
            latest + 1);

  // The same version recorded as one older gateways keep working on (an additive migration).
  {
    auto c = Connection::open(schema_.url());
    ASSERT_TRUE(c.ok()) << c.error().message;
    ASSERT_TRUE((*c)->exec("UPDATE schema_compatibility SET oldest_compatible = " +
                           std::to_string(latest) + " WHERE version = " + next)
                    .ok());
  }
  auto served = PostgresStore::open(options(2), clock_);
  EXPECT_TRUE(served.ok()) << served.error().message;
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT max(version) FROM schema_migrations"),
            latest + 1);
}

// A gateway never applies a migration that a gateway still serving the database cannot use;
// an additive one goes ahead under it.
TEST_F(PostgresStoreTest, AMigrationOlderRunningGatewaysCannotUseWaitsUntilTheyStop) {
  auto setup = Connection::open(schema_.url());
  ASSERT_TRUE(setup.ok()) << setup.error().message;
  ASSERT_TRUE(migrate(**setup, 1).ok());
  // A schema-1 gateway serving: the lock a gateway of that build would hold.
  auto old_gateway = Connection::open(schema_.url());
  ASSERT_TRUE(old_gateway.ok()) << old_gateway.error().message;
  ASSERT_TRUE(
      (*old_gateway)
          ->exec(
              "SELECT pg_advisory_lock_shared(hashtext(current_schema() || ':cairva-gateway'), 1)")
          .ok());
  auto refused = PostgresStore::open(options(2), clock_);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message,
            "postgres: migrating the schema to version 2 would break the gateways of schema "
            "version 1 still"
            " serving this database (they cannot use it): stop them, then start this cairva "
            "(nothing was changed)");
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT max(version) FROM schema_migrations"), 1);
  // The old gateway stops. Its lock is released in its session before it disconnects: a
  // closed connection's backend frees the lock when it exits, after PQfinish returns.
  ASSERT_TRUE((*old_gateway)
                  ->exec("SELECT pg_advisory_unlock_shared(hashtext(current_schema() || "
                         "':cairva-gateway'), 1)")
                  .ok());
  old_gateway->reset();

  ASSERT_TRUE(migrate(**setup, 4).ok());
  auto schema4_gateway = Connection::open(schema_.url());
  ASSERT_TRUE(schema4_gateway.ok()) << schema4_gateway.error().message;
  ASSERT_TRUE(
      (*schema4_gateway)
          ->exec(
              "SELECT pg_advisory_lock_shared(hashtext(current_schema() || ':cairva-gateway'), 4)")
          .ok());
  auto upgraded =
      PostgresStore::open(options(2), clock_);  // 5 only adds: schema-4 gateways keep working
  ASSERT_TRUE(upgraded.ok()) << upgraded.error().message;
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT max(version) FROM schema_migrations"),
            schema_version_latest());
  EXPECT_EQ(testing::query_i64(schema_.url(), "SELECT count(*) FROM schema_compatibility"),
            schema_version_latest());
}

TEST_F(PostgresStoreTest, DeadStoresInFlightRequestBecomesUsagePendingThroughAnotherStoresSweep) {
  auto survivor = open();
  ASSERT_TRUE(survivor);
  const auto created = agreement(*survivor, {100, 100000000, 10}, {100000, 100000});
  std::string request_id;
  {
    auto dead = open();
    ASSERT_TRUE(dead);
    auto cmd = command(created.allocation.id);
    request_id = cmd.request_id;
    ASSERT_TRUE(admit(*dead, std::move(cmd))->decision.admitted());
  }  // the "dead" gateway is gone without settling
  clock_->advance_seconds(600 - 1);
  auto early = survivor->sweep_stale();
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(*early, 0);
  clock_->advance_seconds(1);
  auto swept = survivor->sweep_stale();
  ASSERT_TRUE(swept.ok());
  EXPECT_EQ(*swept, 1);
  auto req = survivor->get_request(request_id);
  ASSERT_TRUE(req.ok());
  EXPECT_EQ(req->state, core::RequestState::usage_pending);
  auto status = survivor->get_allocation(created.allocation.id);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->snapshot.in_flight, 0);
  EXPECT_EQ(status->snapshot.usage_pending, 1);
  EXPECT_EQ(status->snapshot.held.output, 100);  // the hold stays
  // A late usage report for it is still booked.
  auto late =
      settle(*survivor, {request_id, created.allocation.id, SettleKind::usage, "p-late", {3, 4}});
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->book, core::BookResult::booked);
}

TEST_F(PostgresStoreTest, StaleInFlightStopsCountingTowardConcurrencyBeforeAnySweep) {
  auto s = open();
  ASSERT_TRUE(s);
  const auto created = agreement(*s, {100, 100000000, 1}, {100000, 100000});
  ASSERT_TRUE(admit(*s, command(created.allocation.id))->decision.admitted());
  auto refused = admit(*s, command(created.allocation.id));
  ASSERT_TRUE(refused.ok());
  EXPECT_FALSE(refused->decision.admitted());
  clock_->advance_seconds(600);
  EXPECT_TRUE(admit(*s, command(created.allocation.id))->decision.admitted());
}

TEST_F(PostgresStoreTest, EventsListInBookingOrderPerAllocationWithAfterExclusive) {
  auto s = open();
  ASSERT_TRUE(s);
  const auto created = agreement(*s, {100, 100000000, 10}, {100000, 100000});
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto cmd = command(created.allocation.id);
    const std::string id = cmd.request_id;
    ASSERT_TRUE(admit(*s, std::move(cmd))->decision.admitted());
    ASSERT_TRUE(
        settle(*s, {id, created.allocation.id, SettleKind::usage, "p" + std::to_string(i), {1, 1}})
            .ok());
    ids.push_back(id);
  }
  auto all = s->list_events(store::EventFilter{
      .allocation_id = created.allocation.id, .after = std::nullopt, .limit = 100});
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->data.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(all->data[i].request_id, ids[i]);
  auto page = s->list_events(store::EventFilter{
      .allocation_id = created.allocation.id, .after = all->data[1].id, .limit = 2});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->data.size(), 2u);
  EXPECT_EQ(page->data[0].id, all->data[2].id);
  EXPECT_EQ(page->data[1].id, all->data[3].id);
}

// The trailing windows are differences of running figures (schema.cpp, migration 2). These
// compare them with a plain count and sum over the rows, at cutoffs between rows.
class WindowsTest : public PostgresStoreTest {
 protected:
  long long count_starts_after(const std::string& alloc, UnixMicros cutoff) {
    return testing::query_i64(schema_.url(),
                              "SELECT count(*) FROM requests WHERE allocation_id = '" + alloc +
                                  "' AND started_at > " + std::to_string(cutoff));
  }
  long long sum_booked_after(const std::string& alloc, UnixMicros cutoff) {
    return testing::query_i64(
        schema_.url(),
        "SELECT COALESCE(sum(input_tokens + output_tokens), 0) FROM usage_events"
        " WHERE allocation_id = '" +
            alloc + "' AND booked_at > " + std::to_string(cutoff));
  }
  // At each time in `at` (seconds after t0): the store's windows equal the rows'.
  void expect_windows_exact(Store& s, const std::string& alloc, std::initializer_list<int64_t> at) {
    for (const int64_t sec : at) {
      clock_->set(t0 + sec * micros_per_second);
      auto st = s.get_allocation(alloc);
      ASSERT_TRUE(st.ok()) << st.error().message;
      const UnixMicros cutoff = clock_->now() - core::rate_window_us;
      EXPECT_EQ(st->snapshot.requests_last_minute, count_starts_after(alloc, cutoff))
          << "at t0 + " << sec << " s";
      EXPECT_EQ(st->snapshot.tokens_last_minute, sum_booked_after(alloc, cutoff))
          << "at t0 + " << sec << " s";
    }
  }
};

// Rows written before the migration, their times out of insertion order, keep exact windows.
TEST_F(WindowsTest, RowsFromBeforeTheMigrationKeepExactWindows) {
  {
    auto c = Connection::open(schema_.url());
    ASSERT_TRUE(c.ok()) << c.error().message;
    ASSERT_TRUE(migrate(**c, 1).ok());
    const auto at = [](int64_t sec) { return std::to_string(t0 + sec * micros_per_second); };
    std::string sql =
        "INSERT INTO agreements (id, supplier, buyer, provider, input_tokens, output_tokens, "
        "starts_at,"
        " ends_at, requests_per_minute, tokens_per_minute, max_concurrency, state, created_at) "
        "VALUES"
        " ('agr_w', 's', 'b', 'mock', 1000000, 1000000, " +
        at(-1) + ", " + std::to_string(t0 + day_us) + ", 1000, 1000000, 100, 'in_force', " +
        at(-1) +
        ");"
        "INSERT INTO allocations (id, agreement_id, state, created_at) VALUES ('alloc_w', 'agr_w', "
        "'active', " +
        at(-1) +
        ");"
        "INSERT INTO api_keys (id, allocation_id, secret_hash, created_at) VALUES ('key', "
        "'alloc_w', 'h', " +
        at(-1) + ");";
    // Start (s), and booking (s) with tokens for the booked ones; inserted in this order.
    struct Row {
      int64_t start;
      int64_t booked;
      int64_t tokens;
    };
    const Row rows[] = {{5, 6, 30}, {1, -1, 0}, {30, 31, 7}, {20, 2, 11}, {61, 62, 5}, {45, -1, 0}};
    int64_t booked_in = 0, booked_out = 0, seq = 0;
    for (size_t i = 0; i < std::size(rows); ++i) {
      const std::string id = "req_w" + std::to_string(i);
      const bool booked = rows[i].booked >= 0;
      sql +=
          "INSERT INTO requests (id, allocation_id, key_id, state, started_at, model, stream, "
          "hold_input,"
          " hold_output) VALUES ('" +
          id + "', 'alloc_w', 'key', '" + (booked ? "booked" : "in_flight") + "', " +
          at(rows[i].start) + ", 'm', false, 0, 0);";
      if (!booked) continue;
      sql +=
          "INSERT INTO usage_events (id, allocation_id, seq, request_id, provider_request_id, "
          "input_tokens,"
          " output_tokens, source, finality, booked_at) VALUES ('evt_w" +
          std::to_string(i) + "', 'alloc_w', " + std::to_string(++seq) + ", '" + id + "', 'p" +
          std::to_string(i) + "', 1, " + std::to_string(rows[i].tokens - 1) +
          ", 'provider', 'reported', " + at(rows[i].booked) + ");";
      booked_in += 1;
      booked_out += rows[i].tokens - 1;
    }
    sql += "UPDATE allocations SET booked_input = " + std::to_string(booked_in) +
           ", booked_output = " + std::to_string(booked_out) +
           ", event_seq = " + std::to_string(seq) + " WHERE id = 'alloc_w';";
    auto w = (*c)->exec(sql);
    ASSERT_TRUE(w.ok()) << w.error().message;
  }
  auto s = open();  // migrates
  ASSERT_NE(s, nullptr);
  expect_windows_exact(*s, "alloc_w", {0, 3, 40, 61, 62, 65, 80, 91, 106, 121, 122, 200});
  // A new start and booking follow the migrated ones.
  clock_->set(t0 + 70 * micros_per_second);
  auto cmd = command("alloc_w");
  cmd.key_id = "key";  // the key of the rows above
  const std::string id = cmd.request_id;
  ASSERT_TRUE(admit(*s, std::move(cmd))->decision.admitted());
  ASSERT_EQ(settle(*s, SettleCommand{id, "alloc_w", SettleKind::usage, "p_new", {3, 4}})->book,
            core::BookResult::booked);
  EXPECT_EQ(testing::query_i64(schema_.url(),
                               "SELECT start_ordinal FROM requests WHERE id = '" + id + "'"),
            7);
  expect_windows_exact(*s, "alloc_w", {70, 90, 121, 129, 130, 131});
  expect_audit_clean(*s);
}

// A clock stepping back (the database's, after a correction) never stamps a start or a
// booking before the allocation's last one: the windows' order holds, and they stay exact.
TEST_F(WindowsTest, AClockSteppingBackNeverStampsBeforeTheLastStartOrBooking) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  auto created = agreement(*s, {1000, 1000000, 100}, {1000000, 1000000});
  const std::string alloc = created.allocation.id;
  std::vector<std::string> ids;
  for (const int64_t sec : {10, 4, 12, 2}) {  // starts
    clock_->set(t0 + sec * micros_per_second);
    auto cmd = command(alloc);
    ids.push_back(cmd.request_id);
    ASSERT_TRUE(admit(*s, std::move(cmd))->decision.admitted());
  }
  EXPECT_EQ(s->get_request(ids[1])->started_at, t0 + 10 * micros_per_second);
  EXPECT_EQ(s->get_request(ids[3])->started_at, t0 + 12 * micros_per_second);
  for (size_t i = 0; i < ids.size(); ++i) {  // bookings at 20, 15, 25, 18
    clock_->set(t0 + std::array<int64_t, 4>{20, 15, 25, 18}[i] * micros_per_second);
    auto r = settle(*s, SettleCommand{ids[i],
                                      alloc,
                                      SettleKind::usage,
                                      "p" + std::to_string(i),
                                      {1, static_cast<int64_t>(i + 1)}});
    ASSERT_EQ(r->book, core::BookResult::booked);
  }
  EXPECT_EQ(
      testing::query_i64(schema_.url(),
                         "SELECT booked_at FROM usage_events WHERE request_id = '" + ids[1] + "'"),
      t0 + 20 * micros_per_second);
  expect_windows_exact(*s, alloc, {25, 69, 70, 71, 72, 79, 80, 84, 85, 86});
  // The audit checks the running figures the windows are read from.
  const auto violations = [&] {
    auto a = s->audit();
    EXPECT_TRUE(a.ok());
    std::string all;
    for (const auto& v : a->violations) all += v + "\n";
    return all;
  };
  EXPECT_EQ(violations(), "");
  ASSERT_EQ(testing::exec_sql(schema_.url(),
                              "UPDATE requests SET start_ordinal = 7 WHERE id = '" + ids[2] + "'"),
            "");
  ASSERT_EQ(
      testing::exec_sql(schema_.url(),
                        "UPDATE usage_events SET cum_tokens = cum_tokens + 1 WHERE request_id = '" +
                            ids[3] + "'"),
      "");
  const std::string found = violations();
  EXPECT_NE(found.find(ids[2] + ": start number 7, 4 in start order"), std::string::npos) << found;
  EXPECT_NE(found.find("running total"), std::string::npos) << found;
}

TEST_F(PostgresStoreTest, DatabaseClockStampsStartsWithTheServersTime) {
  StoreOptions o = options();
  o.use_database_clock = true;
  auto s = PostgresStore::open(o, clock_);
  ASSERT_TRUE(s.ok()) << s.error().message;
  NewAgreement a{"supplier", "buyer", "mock", {}, {}};
  const UnixMicros wall = SystemClock().now();
  a.terms.window = {wall - day_us, wall + day_us};
  a.terms.limits = {100, 100000, 10};
  a.terms.allowance = {100000, 100000};
  auto created = (*s)->create_agreement(a);
  ASSERT_TRUE(created.ok());
  auto cmd = command(created->allocation.id);
  cmd.key_id = created->key_id;
  const std::string id = cmd.request_id;
  ASSERT_TRUE(admit(**s, std::move(cmd))->decision.admitted());
  auto req = (*s)->get_request(id);
  ASSERT_TRUE(req.ok());
  // The database's clock, not the manual one (which sits at t0, years away).
  EXPECT_LT(std::llabs(req->started_at - wall), 60 * micros_per_second);
}

TEST_F(PostgresStoreTest, UnreachableDatabaseIsStoreUnavailable) {
  StoreOptions o = options();
  o.url = "postgresql://postgres@127.0.0.1:1/nowhere?connect_timeout=2";
  auto s = PostgresStore::open(o, clock_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::store_unavailable);
}

TEST_F(PostgresStoreTest, BookingThroughOneStoreDepletesForTheOther) {
  auto a = open(), b = open();
  ASSERT_TRUE(a && b);
  const auto created = agreement(*a, {100, 100000000, 10}, {100000, 100});
  auto cmd = command(created.allocation.id, 100);
  const std::string id = cmd.request_id;
  ASSERT_TRUE(admit(*a, std::move(cmd))->decision.admitted());
  auto booked = settle(*a, {id, created.allocation.id, SettleKind::usage, "p-1", {5, 100}});
  ASSERT_TRUE(booked.ok());
  EXPECT_EQ(booked->book, core::BookResult::booked);
  auto refused = admit(*b, command(created.allocation.id, 1));
  ASSERT_TRUE(refused.ok());
  ASSERT_FALSE(refused->decision.admitted());
  EXPECT_EQ(std::get<core::Refused>(refused->decision.outcome).reason, core::Refusal::depleted);
  auto agreement_row = b->get_agreement(created.agreement.id);
  ASSERT_TRUE(agreement_row.ok());
  EXPECT_EQ(agreement_row->state, core::AgreementState::completed);
}

TEST_F(PostgresStoreTest, ProviderIdReusedThroughAnotherStoreIsRecordedAsConflictNotBooked) {
  auto a = open(), b = open();
  ASSERT_TRUE(a && b);
  const auto created = agreement(*a, {100, 100000000, 10}, {100000, 100000});
  auto c1 = command(created.allocation.id), c2 = command(created.allocation.id);
  const std::string r1 = c1.request_id, r2 = c2.request_id;
  ASSERT_TRUE(admit(*a, std::move(c1))->decision.admitted());
  ASSERT_TRUE(admit(*b, std::move(c2))->decision.admitted());
  ASSERT_EQ(settle(*a, {r1, created.allocation.id, SettleKind::usage, "same", {7, 9}})->book,
            core::BookResult::booked);
  ASSERT_EQ(settle(*b, {r2, created.allocation.id, SettleKind::usage, "same", {8, 9}})->book,
            core::BookResult::reused_id);
  auto conflicts = a->list_conflicts(store::ConflictFilter{.allocation_id = created.allocation.id});
  ASSERT_TRUE(conflicts.ok());
  ASSERT_EQ(conflicts->data.size(), 1u);
  EXPECT_EQ(conflicts->data[0].request_id, r2);
  EXPECT_EQ(conflicts->data[0].reported, (core::Tokens{8, 9}));
  EXPECT_EQ(conflicts->data[0].booked, (core::Tokens{7, 9}));
  auto status = b->get_allocation(created.allocation.id);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->snapshot.booked, (core::Tokens{7, 9}));
  EXPECT_EQ(status->snapshot.held, b->get_request(r2)->hold);
}

// Another session with an open transaction that holds a transaction id (a psql session
// left open, a row lock held, another database of the server). `writer`: one that marks
// itself as this store's writers do (sql::mark_row_writer) before it has its id.
class OpenTransaction {
 public:
  OpenTransaction(const std::string& url, bool writer)
      : conn_(PQconnectdb(url.c_str()), &PQfinish) {
    open_ = PQstatus(conn_.get()) == CONNECTION_OK && run("BEGIN") &&
            (!writer || run("LOCK TABLE row_writers IN ROW EXCLUSIVE MODE")) &&
            run("SELECT pg_current_xact_id()");
  }
  bool open() const { return open_; }
  void end() {
    run("ROLLBACK");
    conn_.reset();
  }

 private:
  bool run(const std::string& sql) {
    PGresult* r = PQexec(conn_.get(), sql.c_str());
    const auto st = PQresultStatus(r);
    PQclear(r);
    return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
  }
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
  bool open_ = false;
};

size_t listed_requests(Store& s) {
  RequestFilter f;
  f.limit = list_page_rows_max;
  auto page = s.list_requests(f);
  EXPECT_TRUE(page.ok()) << (page.ok() ? "" : page.error().message);
  return page.ok() ? page->data.size() : 0;
}

// The listings across allocations show a row once every writer older than it has ended
// (schema.cpp, migration 5): a writer still running holds newer rows back (it may yet add
// a row before them), and a transaction that is no writer of this store holds nothing back.
TEST_F(PostgresStoreTest, OnlyAnOlderWriterStillRunningHoldsBackTheListingsAcrossAllocations) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  auto [alloc, ids] = admitted(*s, 2);
  EXPECT_EQ(listed_requests(*s), 2u);
  OpenTransaction other(schema_.url(), false);
  ASSERT_TRUE(other.open());
  ASSERT_TRUE(admit(*s, command(alloc)).ok());
  EXPECT_EQ(listed_requests(*s), 3u) << "a session that writes no listed rows holds nothing back";
  OpenTransaction writer(schema_.url(), true);
  ASSERT_TRUE(writer.open());
  ASSERT_TRUE(admit(*s, command(alloc)).ok());
  EXPECT_EQ(listed_requests(*s), 3u) << "the newest row waits for the older writer";
  RequestFilter one;
  one.allocation_id = alloc;
  one.limit = 100;
  EXPECT_EQ(s->list_requests(one)->data.size(), 4u) << "one allocation's listing never waits";
  writer.end();
  EXPECT_EQ(listed_requests(*s), 4u);
  other.end();
  auto rows = s->list_requests(one);
  ASSERT_TRUE(rows.ok());
  for (const auto& row : rows->data) {
    ASSERT_TRUE(settle(*s, {row.id, alloc, SettleKind::failed, "", {}}).ok());
  }
  expect_audit_clean(*s);
}

// A gateway of schema 4 still serving during a rolling upgrade books with its own
// statement, which knows no running totals: the trigger of migration 5 fills them, so usage
// series and the audit stay right.
TEST_F(PostgresStoreTest, ABookingWithoutRunningTotalsGetsThemFromTheTrigger) {
  auto s = open();
  ASSERT_NE(s, nullptr);
  // Named, not a structured binding: the lambdas below capture them (clang 14 cannot).
  auto admitted_requests = admitted(*s, 2);
  std::string& alloc = admitted_requests.first;
  std::vector<std::string>& ids = admitted_requests.second;
  ASSERT_TRUE(settle(*s, {ids[0], alloc, SettleKind::usage, "p-new", {3, 4}}).ok());
  // Schema 4's booking (statements.cpp before migration 5): no cum_input, no cum_output.
  const std::string old_booking =
      "WITH ev AS (INSERT INTO usage_events (id, allocation_id, seq, request_id, "
      "provider_request_id,"
      " input_tokens, output_tokens, source, finality, evidence, booked_at, cum_tokens)"
      " VALUES ('evt_schema4', '" +
      alloc + "', 2, '" + ids[1] + "', 'p-old', 5, 7, 'provider', 'reported', '', " +
      std::to_string(t0 + 1) +
      ", 19) RETURNING cum_input, cum_output),"
      " rq AS (UPDATE requests SET state = 'booked', finished_at = " +
      std::to_string(t0 + 1) + ", provider_request_id = 'p-old' WHERE id = '" + ids[1] +
      "'),"
      " al AS (UPDATE allocations SET booked_input = booked_input + 5, booked_output = "
      "booked_output + 7,"
      " held_input = held_input - 10, held_output = held_output - 100, event_seq = 2 WHERE id = '" +
      alloc +
      "')"
      " SELECT cum_input * 1000 + cum_output FROM ev";
  EXPECT_EQ(testing::query_i64(schema_.url(), old_booking), 8 * 1000 + 11)
      << "the totals before it plus its counts";
  expect_audit_clean(*s);
  auto series = wait_for<UsageSeries>([&](auto done) {
    s->usage_series(UsageQuery{alloc, t0 - hour_us, t0 + hour_us, hour_us}, done);
  });
  ASSERT_TRUE(series.ok()) << series.error().message;
  core::Tokens total;
  for (const auto& b : series->buckets)
    total = {total.input + b.tokens.input, total.output + b.tokens.output};
  EXPECT_EQ(total, (core::Tokens{8, 11}));
}

}  // namespace
}  // namespace cairva::store::pg
