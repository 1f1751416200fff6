// SQLite-specific behaviour: group commit, one process per file, recovery, failing writes.
#include "store/sqlite/sqlite_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include "base/ids.h"
#include "base/run_soon.h"
#include "store/open.h"
#include "store/sqlite/limits.h"
#include "store/sqlite/oplog.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/writes.h"

namespace cairva::store::sqlite {
namespace {

constexpr UnixMicros t0_us = 1'767'225'600LL * micros_per_second;

template <class T>
Result<T> await(const std::function<void(Callback<T>)>& start) {
  auto p = std::make_shared<std::promise<Result<T>>>();
  start([p](Result<T> r) { p->set_value(std::move(r)); });
  return p->get_future().get();
}

// This thread as an event loop (base/run_soon.h) while the object lives: what it is asked to
// run soon waits for run_ready().
class FakeLoop {
 public:
  FakeLoop() { set_run_soon_for_this_thread(&run_soon_); }
  ~FakeLoop() { set_run_soon_for_this_thread(nullptr); }
  FakeLoop(const FakeLoop&) = delete;
  FakeLoop& operator=(const FakeLoop&) = delete;
  size_t queued() const { return soon_.size(); }
  void run_ready() {
    while (!soon_.empty()) {
      auto f = std::move(soon_.front());
      soon_.pop_front();
      f();
    }
  }

 private:
  std::deque<std::function<void()>> soon_;
  const RunSoon run_soon_ = [this](std::function<void()> f) { soon_.push_back(std::move(f)); };
};

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("cairva-sqlite-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "cairva.db").string();
    options_.providers = {"openai"};
    options_.on_commit_batch = [this](int64_t writes) { observed_rows_ += writes; };
    store_ = open_store_at();
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    if (store_) {
      auto report = store_->audit();
      ASSERT_TRUE(report.ok());
      for (const auto& v : report->violations) ADD_FAILURE() << "audit: " << v;
    }
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<SqliteStore> open_store_at() {
    auto s = SqliteStore::open(path_, options_, clock_);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return s.ok() ? std::move(s).value() : nullptr;
  }

  CreatedAgreement create(core::Limits limits, core::Tokens allowance) {
    NewAgreement a{
        "s", "b", "openai", {}, {{t0_us, t0_us + 86'400 * micros_per_second}, limits, allowance}};
    auto c = store_->create_agreement(a);
    EXPECT_TRUE(c.ok());
    return std::move(c).value();
  }

  AdmitCommand cmd(const CreatedAgreement& a) {
    AdmitCommand c;
    c.request_id = new_id("req");
    c.allocation_id = a.allocation.id;
    c.key_id = a.key_id;
    c.model = "m";
    c.facts.input_estimate = 1;
    c.facts.max_tokens = 1;
    return c;
  }

  Result<AdmitResult> admit(const AdmitCommand& c) {
    return await<AdmitResult>([&](Callback<AdmitResult> cb) { store_->admit(c, std::move(cb)); });
  }
  Result<SettleResult> settle(const SettleCommand& c) {
    return await<SettleResult>(
        [&](Callback<SettleResult> cb) { store_->settle(c, std::move(cb)); });
  }
  // Moves the clock to the writer's next retry and waits until that retry has cleared the
  // failure (the disk works again).
  void retry_and_wait() {
    clock_->advance_micros(writer_retry_ms * 1000);
    store_->wait_while_writer_failing_for_testing();
  }
  // Leaves nothing in flight for TearDown's audit (its stale check).
  void fail_in_flight(const CreatedAgreement& a) {
    store::RequestFilter f;
    f.state = core::RequestState::in_flight;
    f.limit = list_page_rows_max;
    auto open = store_->list_requests(f);
    ASSERT_TRUE(open.ok());
    for (const auto& row : open->data) {
      ASSERT_TRUE(settle({row.id, a.allocation.id, SettleKind::failed, "", {}}).ok());
    }
  }

  std::filesystem::path dir_;
  std::string path_;
  StoreOptions options_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(t0_us);
  std::atomic<int64_t> observed_rows_{0};
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(SqliteStoreTest, GroupCommitBatchesConcurrentAdmissions) {
  constexpr int threads = 8;
  constexpr int per_thread = 50;
  auto a = create({100000, 1000000, 100000}, {1000000, 1000000});
  const WriterStats before = store_->writer_stats();
  std::vector<std::thread> pool;
  pool.reserve(threads);
  std::atomic<int> admitted{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      // Each thread issues its admissions without waiting, then waits for all of them,
      // as a busy gateway's event loops do.
      std::vector<std::future<Result<AdmitResult>>> pending;
      for (int i = 0; i < per_thread; ++i) {
        auto p = std::make_shared<std::promise<Result<AdmitResult>>>();
        pending.push_back(p->get_future());
        store_->admit(cmd(a), [p](Result<AdmitResult> r) { p->set_value(std::move(r)); });
      }
      for (auto& f : pending) {
        auto r = f.get();
        if (r.ok() && r->decision.admitted()) ++admitted;
      }
    });
  }
  for (auto& t : pool) t.join();
  EXPECT_EQ(admitted.load(), threads * per_thread);
  const WriterStats after = store_->writer_stats();
  const int64_t rows = after.rows - before.rows;
  const int64_t commits = after.commits - before.commits;
  EXPECT_EQ(rows, threads * per_thread);
  EXPECT_EQ(observed_rows_.load(), after.rows);  // the metrics hook saw every commit
  EXPECT_LT(commits, rows) << "no batching: one commit per row";
  EXPECT_GT(after.max_batch, 1);
  std::printf("group commit: %lld rows in %lld commits, largest batch %lld\n",
              static_cast<long long>(rows), static_cast<long long>(commits),
              static_cast<long long>(after.max_batch));
  fail_in_flight(a);
}

TEST_F(SqliteStoreTest, SecondOpenOfTheSameFileIsRefusedWithTheOwnersPid) {
  auto second = SqliteStore::open(path_, options_, clock_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, ErrorCode::store_unavailable);
  EXPECT_NE(second.error().message.find("is in use by another cairva process (pid " +
                                        std::to_string(::getpid()) + ")"),
            std::string::npos)
      << second.error().message;
  store_.reset();  // the owner goes away: the file is free
  store_ = open_store_at();
  EXPECT_NE(store_, nullptr);
}

TEST_F(SqliteStoreTest, OpenStoreParsesTheUrl) {
  StoreOptions o = options_;
  o.url = "mysql://x";
  auto bad = open_store(o, clock_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_request);
  EXPECT_NE(bad.error().message.find("store.url"), std::string::npos);
  o.url = "sqlite://" + path_;  // held by store_: the lock proves it reached SQLite
  auto busy = open_store(o, clock_);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code, ErrorCode::store_unavailable);
  o.url = "sqlite://" + (dir_ / "other.db").string();
  auto other = open_store(o, clock_);
  ASSERT_TRUE(other.ok()) << other.error().message;
}

TEST_F(SqliteStoreTest, RecoveryMarksInFlightPendingAndKeepsTheirHolds) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  auto c = cmd(a);
  c.facts.input_estimate = 7;
  c.facts.max_tokens = 9;
  ASSERT_TRUE(admit(c)->decision.admitted());
  store_.reset();  // as after kill -9: nothing settles the request
  {
    // The file itself says in_flight until the next open.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT state FROM requests", -1, &s, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "in_flight");
    sqlite3_finalize(s);
    sqlite3_close(db);
  }
  store_ = open_store_at();
  ASSERT_NE(store_, nullptr);
  EXPECT_EQ(store_->get_request(c.request_id)->state, core::RequestState::usage_pending);
  auto st = store_->get_allocation(a.allocation.id);
  EXPECT_EQ(st->snapshot.held, (core::Tokens{7, 9}));
  EXPECT_EQ(st->snapshot.usage_pending, 1);
  EXPECT_EQ(st->snapshot.in_flight, 0);
}

// One number from a file's SQL, read as a separate connection would.
int64_t query_i64(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
  const int64_t v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

// Records in the oplog's segment files, applied or not.
int64_t log_records(const std::string& database_path) {
  int64_t n = 0;
  EXPECT_TRUE(oplog::read_log(database_path, [&n](int64_t, writes::Record&&) {
                ++n;
                return Status{};
              }).ok());
  return n;
}

// A request waits only for its record in the oplog; what the process acknowledged but had
// not yet copied into the tables when it stopped is applied, once, at the next open.
TEST_F(SqliteStoreTest, AcknowledgedWritesStillOnlyInTheOplogAreAppliedAtOpen) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  store_->flush();
  store_->pause_applier_for_testing(true);
  auto in_flight = cmd(a);
  auto booked = cmd(a);
  auto failed = cmd(a);
  for (const auto* c : {&in_flight, &booked, &failed}) ASSERT_TRUE(admit(*c)->decision.admitted());
  auto b = settle({booked.request_id, a.allocation.id, SettleKind::usage, "prov-1", {3, 4}});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->book, core::BookResult::booked);
  ASSERT_TRUE(settle({failed.request_id, a.allocation.id, SettleKind::failed, "", {}}).ok());
  store_.reset();  // the applier never ran: as if the process died here
  EXPECT_EQ(query_i64(path_, "SELECT COUNT(*) FROM requests"), 0);
  EXPECT_EQ(log_records(path_), 5);  // 3 starts, 1 booking, 1 failure
  // `cairva audit` on the stopped gateway's file says its tables are behind.
  auto behind = SqliteStore::audit_file(path_, options_, clock_);
  ASSERT_TRUE(behind.ok()) << behind.error().message;
  EXPECT_EQ(behind->unapplied_writes, 5);
  EXPECT_TRUE(behind->violations.empty());

  store_ = open_store_at();
  ASSERT_NE(store_, nullptr);
  EXPECT_EQ(store_->get_request(in_flight.request_id)->state, core::RequestState::usage_pending);
  EXPECT_EQ(store_->get_request(booked.request_id)->state, core::RequestState::booked);
  EXPECT_EQ(store_->get_request(failed.request_id)->state, core::RequestState::failed);
  auto events = store_->list_events(
      store::EventFilter{.allocation_id = a.allocation.id, .after = std::nullopt, .limit = 100});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->data.size(), 1u);
  EXPECT_EQ(events->data[0].provider_request_id, "prov-1");
  auto st = store_->get_allocation(a.allocation.id);
  EXPECT_EQ(st->snapshot.booked, (core::Tokens{3, 4}));
  EXPECT_EQ(st->snapshot.usage_pending, 1);
  // The ledger restored from the replayed tables still books that provider id only once:
  // another request reporting it is left pending (three records: state, counts, conflict).
  auto again = cmd(a);
  ASSERT_TRUE(admit(again)->decision.admitted());
  EXPECT_EQ(settle({again.request_id, a.allocation.id, SettleKind::usage, "prov-1", {3, 4}})->book,
            core::BookResult::reused_id);
  store_.reset();
  // Applied exactly once: a second open finds nothing left to replay.
  EXPECT_EQ(query_i64(path_, "SELECT COUNT(*) FROM usage_events"), 1);
  EXPECT_EQ(query_i64(path_, "SELECT COUNT(*) FROM requests"), 4);
  EXPECT_EQ(query_i64(path_, "SELECT seq FROM oplog_applied"), 9);
  // The replayed segment was deleted at that open; the four records since are in the new one.
  EXPECT_EQ(log_records(path_), 4);
  store_ = open_store_at();
  ASSERT_NE(store_, nullptr);
  EXPECT_EQ(store_->get_allocation(a.allocation.id)->snapshot.booked, (core::Tokens{3, 4}));
}

// The operation log of the builds before segment files, as they wrote it: one SQLite file
// `<db>-oplog`, table records(seq, kind, t0..t6, n0..n4), holding `records`.
void write_v1_log(const std::string& database_path,
                  const std::vector<std::pair<int64_t, writes::Record>>& records) {
  auto db = Db::open(oplog::v1_log_path(database_path), false);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(
      db->exec("PRAGMA journal_mode=WAL; CREATE TABLE records (seq INTEGER PRIMARY KEY,"
               " kind INTEGER NOT NULL, t0 TEXT NOT NULL, t1 TEXT NOT NULL, t2 TEXT NOT NULL,"
               " t3 TEXT NOT NULL, t4 TEXT NOT NULL, t5 TEXT NOT NULL, t6 TEXT NOT NULL,"
               " n0 INTEGER NOT NULL, n1 INTEGER NOT NULL, n2 INTEGER NOT NULL,"
               " n3 INTEGER NOT NULL, n4 INTEGER NOT NULL)")
          .ok());
  for (const auto& [seq, r] : records) {
    auto st = db->prepare("INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    ASSERT_TRUE(st.ok());
    st->i64(seq).i64(static_cast<int64_t>(r.kind));
    for (size_t i = 0; i < writes::Record::texts; ++i) st->text(r.text_slot(i));
    for (const int64_t n : r.num_slots) st->i64(n);
    ASSERT_TRUE(st->run().ok());
  }
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// An upgrade from a build whose log was one SQLite file goes through the last build that
// replays it (oplog::v1_log_reader_build): this one refuses such a log while it holds writes
// the tables lack, names that build, and changes nothing, so no acknowledged write is lost.
TEST_F(SqliteStoreTest, AnEarlierBuildsLogWithUnappliedWritesIsRefusedAndLeftAsItWas) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  store_->flush();
  store_->pause_applier_for_testing(true);
  auto booked = cmd(a);
  ASSERT_TRUE(admit(booked)->decision.admitted());
  ASSERT_TRUE(
      settle({booked.request_id, a.allocation.id, SettleKind::usage, "prov-v1", {5, 6}}).ok());
  store_.reset();
  // Move the two unapplied records into a log of the earlier format, as that build wrote it.
  std::vector<std::pair<int64_t, writes::Record>> records;
  ASSERT_TRUE(oplog::read_log(path_, [&](int64_t seq, writes::Record&& r) {
                records.emplace_back(seq, std::move(r));
                return Status{};
              }).ok());
  ASSERT_EQ(records.size(), 2u);
  write_v1_log(path_, records);
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    if (e.path().filename().string().starts_with("cairva.db-oplog."))
      std::filesystem::remove(e.path());
  }
  const std::string v1 = oplog::v1_log_path(path_);
  const std::string log_before = file_bytes(v1);
  const std::string database_before = file_bytes(path_);
  ASSERT_FALSE(log_before.empty());

  auto opened = SqliteStore::open(path_, options_, clock_);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().code, ErrorCode::conflict);
  EXPECT_NE(opened.error().message.find("holding 2 writes not yet in the tables"),
            std::string::npos)
      << opened.error().message;
  EXPECT_NE(opened.error().message.find(std::string(oplog::v1_log_reader_build)), std::string::npos)
      << opened.error().message;
  // `cairva audit` refuses it the same way rather than report a ledger that lacks them.
  auto audited = SqliteStore::audit_file(path_, options_, clock_);
  ASSERT_FALSE(audited.ok());
  EXPECT_EQ(audited.error().code, ErrorCode::conflict);
  // Nothing changed: the log and the database are as they were, no new segment was started.
  EXPECT_EQ(file_bytes(v1), log_before);
  EXPECT_EQ(file_bytes(path_), database_before);
  EXPECT_EQ(query_i64(path_, "SELECT COUNT(*) FROM usage_events"), 0);
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    EXPECT_FALSE(e.path().filename().string().starts_with("cairva.db-oplog.")) << e.path();
  }
  // Once that build applied the log and removed it, this one opens the store.
  std::filesystem::remove(v1);
  store_ = open_store_at();
  ASSERT_NE(store_, nullptr);
}

// A log of that format whose every write is already in the tables holds nothing to lose: it
// is deleted at open and the store starts.
TEST_F(SqliteStoreTest, AnEarlierBuildsLogWithNothingUnappliedIsDeletedAtOpen) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  auto booked = cmd(a);
  ASSERT_TRUE(admit(booked)->decision.admitted());
  ASSERT_TRUE(
      settle({booked.request_id, a.allocation.id, SettleKind::usage, "prov-v1", {5, 6}}).ok());
  store_->flush();
  store_.reset();
  const int64_t applied = query_i64(path_, "SELECT seq FROM oplog_applied");
  ASSERT_GT(applied, 0);
  writes::Record old;
  write_v1_log(path_, {{applied, old}});
  const std::string v1 = oplog::v1_log_path(path_);
  ASSERT_TRUE(std::filesystem::exists(v1));
  auto audited = SqliteStore::audit_file(path_, options_, clock_);
  ASSERT_TRUE(audited.ok()) << audited.error().message;
  EXPECT_TRUE(std::filesystem::exists(v1));  // audit reads only

  store_ = open_store_at();
  ASSERT_NE(store_, nullptr);
  EXPECT_FALSE(std::filesystem::exists(v1));
  EXPECT_FALSE(std::filesystem::exists(v1 + "-wal"));
  EXPECT_EQ(store_->get_allocation(a.allocation.id)->snapshot.booked, (core::Tokens{5, 6}));
}

// The oplog holds what the tables lack, not the store's history: applied segments go.
TEST_F(SqliteStoreTest, OplogSegmentsAreDeletedAsTheApplierAdvances) {
  auto a = create({1000000, 100000000, 100000}, {100000000, 100000000});
  const auto segments = [this] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (name.starts_with("cairva.db-oplog.")) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  const auto first = segments();
  ASSERT_EQ(first.size(), 1u);
  // Until the log has moved past its first segment and that one is applied and deleted;
  // bounded: ~14,000 requests fill a segment (two records each).
  constexpr int requests_max = 60'000;
  int requests = 0;
  size_t most = 0;
  for (auto now = segments(); requests < requests_max && now.front() == first.front();
       now = segments()) {
    most = std::max(most, now.size());
    for (int i = 0; i < 500; ++i, ++requests) {
      auto c = cmd(a);
      ASSERT_TRUE(admit(c)->decision.admitted());
      ASSERT_TRUE(settle({c.request_id,
                          a.allocation.id,
                          SettleKind::usage,
                          "p" + std::to_string(requests),
                          {1, 1}})
                      .ok());
    }
    store_->flush();  // applied...
    ASSERT_TRUE(
        admit(cmd(a)).ok());  // ...so the journal thread deletes applied segments after this commit
    ++requests;
  }
  EXPECT_NE(segments().front(), first.front())
      << "the applied first segment is still there after " << requests << " requests";
  EXPECT_LE(most, 2u) << "applied segments piled up";
  // The journal thread makes the next segment ahead after each move (before it answers the
  // commit that moved), so that a move is a rename on whichever thread commits.
  EXPECT_TRUE(std::filesystem::exists(dir_ / "cairva.db-oplog-spare"));
  store_.reset();
  EXPECT_FALSE(std::filesystem::exists(dir_ / "cairva.db-oplog-spare"));
  store_ = open_store_at();
  EXPECT_EQ(store_->get_allocation(a.allocation.id)->snapshot.booked.input,
            requests - requests / 501);
}

// An admission refused because the disk failed left nothing in the log: a restart (which
// replays the log) does not bring it back.
TEST_F(SqliteStoreTest, AnAdmissionRefusedByAFailingDiskIsNotReplayed) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  store_->flush();
  store_->pause_applier_for_testing(true);  // whatever is acknowledged stays in the log only
  store_->set_write_fault_for_testing(true);
  auto refused = cmd(a);
  ASSERT_FALSE(admit(refused).ok());
  store_->set_write_fault_for_testing(false);
  // The writer probes the disk writer_retry_ms later and admits again once it works.
  EXPECT_TRUE(store_->writer_failing());
  retry_and_wait();
  auto later = cmd(a);
  auto r = admit(later);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->decision.admitted());
  store_.reset();
  store_ = open_store_at();
  ASSERT_NE(store_, nullptr);
  EXPECT_FALSE(store_->get_request(refused.request_id).ok())
      << "a refused admission came back at replay";
  EXPECT_EQ(store_->get_request(later.request_id)->state, core::RequestState::usage_pending);
}

TEST_F(SqliteStoreTest, WriteFailureFailsClosedAndRecoversByItself) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  auto first = cmd(a);
  ASSERT_TRUE(admit(first)->decision.admitted());

  store_->set_write_fault_for_testing(true);
  // A settlement whose write fails is answered store_unavailable at once, not after the
  // writer's ack wait: the gateway keeps the report and settles again. Its write stays
  // queued and commits once the disk works again.
  auto settled = std::make_shared<std::promise<Result<SettleResult>>>();
  store_->settle({first.request_id, a.allocation.id, SettleKind::usage, "p1", {1, 1}},
                 [settled](Result<SettleResult> r) { settled->set_value(std::move(r)); });
  auto fut = settled->get_future();
  ASSERT_EQ(fut.wait_for(std::chrono::milliseconds(durable_ack_wait_ms_max / 2)),
            std::future_status::ready);
  auto r = fut.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::store_unavailable);
  auto refused = admit(cmd(a));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::store_unavailable);
  // The undone admission holds nothing, is not in flight and does not count for the
  // rate: it was never forwarded (as a PostgreSQL commit that fails leaves nothing).
  auto st = store_->get_allocation(a.allocation.id);
  EXPECT_EQ(st->snapshot.in_flight, 0);
  EXPECT_EQ(st->snapshot.booked, (core::Tokens{1, 1}));
  EXPECT_EQ(st->snapshot.requests_last_minute, 1);
  // While failing, new admissions, settlements and creations are refused at once.
  auto again = admit(cmd(a));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::store_unavailable);
  EXPECT_EQ(store_->get_allocation(a.allocation.id)->snapshot.requests_last_minute, 1);
  EXPECT_EQ(
      settle({first.request_id, a.allocation.id, SettleKind::usage, "p1", {1, 1}}).error().code,
      ErrorCode::store_unavailable);
  auto key = store_->create_key(a.allocation.id);
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.error().code, ErrorCode::store_unavailable);
  store_->set_write_fault_for_testing(false);
  clock_->advance_micros(writer_retry_ms * 1000);  // the retry, writer_retry_ms later
  store_->flush();  // behind the kept settlement: returns once it is committed
  EXPECT_FALSE(store_->writer_stats().failed_batches == 0);
  // Recovered: the settlement repeated writes nothing more, admissions work again and the
  // booking is in the file.
  auto repeated = settle({first.request_id, a.allocation.id, SettleKind::usage, "p1", {1, 1}});
  ASSERT_TRUE(repeated.ok()) << repeated.error().message;
  EXPECT_EQ(repeated->book, core::BookResult::duplicate);
  auto ok = admit(cmd(a));
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  ASSERT_TRUE(ok->decision.admitted());
  EXPECT_EQ(store_->get_request(first.request_id)->state, core::RequestState::booked);
  EXPECT_EQ(store_
                ->list_events(store::EventFilter{
                    .allocation_id = a.allocation.id, .after = std::nullopt, .limit = 100})
                ->data.size(),
            1u);
  auto later_key = store_->create_key(a.allocation.id);
  ASSERT_TRUE(later_key.ok()) << later_key.error().message;
  fail_in_flight(a);
}

// On an event-loop thread (base/run_soon.h) the request path's writes are committed by that
// thread, after its ready handlers, with no other thread involved; a failed commit there
// still hands the retries and the disk probe to the journal thread.
TEST_F(SqliteStoreTest, EventLoopThreadCommitsItsOwnWritesAndRecoversFromAFailure) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  store_->flush();
  // Paused, the journal thread never takes what the loop queued, so only the loop's turn
  // commits and every answer arrives on this thread; a failing journal still retries.
  store_->pause_journal_for_testing(true);
  auto loop = std::make_optional<FakeLoop>();
  std::optional<Result<AdmitResult>> answer;
  auto admit_here = [&] {
    answer.reset();
    store_->admit(cmd(a), [&](Result<AdmitResult> r) { answer = std::move(r); });
  };
  admit_here();
  admit_here();  // two in one round: one commit
  EXPECT_FALSE(answer.has_value()) << "committed before the loop's round ended";
  EXPECT_EQ(loop->queued(), 1u) << "each write queued its own journal run";
  const int64_t commits = store_->writer_stats().commits;
  loop->run_ready();
  ASSERT_TRUE(answer.has_value()) << "the loop's own turn did not commit";
  ASSERT_TRUE(answer->ok());
  EXPECT_TRUE((*answer)->decision.admitted());
  EXPECT_EQ(store_->writer_stats().commits, commits + 1);

  store_->set_write_fault_for_testing(true);
  admit_here();
  loop->run_ready();
  ASSERT_TRUE(answer.has_value());
  ASSERT_FALSE(answer->ok());
  EXPECT_EQ(answer->error().code, ErrorCode::store_unavailable);
  store_->set_write_fault_for_testing(false);
  // The loop's failed turn handed the retries to the journal thread: refused until it has
  // retried, admitted after.
  admit_here();
  ASSERT_TRUE(answer.has_value() && !answer->ok()) << "admitted while the writer was failing";
  // The applier's retries go through the journal thread: let it run until both recovered.
  store_->pause_journal_for_testing(false);
  retry_and_wait();
  store_->flush();
  store_->pause_journal_for_testing(true);
  admit_here();
  loop->run_ready();
  loop.reset();
  ASSERT_TRUE(answer.has_value());
  EXPECT_TRUE(answer->ok()) << "admissions never resumed after the disk recovered: "
                            << answer->error().message;
  store_->pause_journal_for_testing(false);
  fail_in_flight(a);
}

// The journal's queue holds at most writer_queue_ops_max writes (an event loop queues them
// and commits after its round): an admission beyond that is refused with store_unavailable
// and leaves no trace — no hold, not in flight, no start counted. The queued ones commit.
TEST_F(SqliteStoreTest, AnAdmissionBeyondAFullWriteQueueIsRefusedWithoutATrace) {
  auto a = create({1000000, 100000000, 100000}, {100000000, 100000000});
  store_->flush();
  // The journal thread would take what the loop queued (it may still be finishing the
  // flush's turn, or wake for upkeep); paused, only the loop's turn commits.
  store_->pause_journal_for_testing(true);
  auto loop = std::make_optional<FakeLoop>();
  std::atomic<size_t> admitted{0};
  for (size_t i = 0; i < writer_queue_ops_max; ++i) {
    store_->admit(cmd(a), [&](Result<AdmitResult> r) {
      if (r.ok() && r->decision.admitted()) ++admitted;
    });
  }
  const auto before = store_->get_allocation(a.allocation.id);
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->snapshot.in_flight, static_cast<int64_t>(writer_queue_ops_max));
  std::optional<Result<AdmitResult>> refused;
  store_->admit(cmd(a), [&](Result<AdmitResult> r) { refused = std::move(r); });
  ASSERT_TRUE(refused.has_value()) << "a refusal is answered at once";
  ASSERT_FALSE(refused->ok());
  EXPECT_EQ(refused->error().code, ErrorCode::store_unavailable);
  const auto after = store_->get_allocation(a.allocation.id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->snapshot.in_flight, before->snapshot.in_flight);
  EXPECT_EQ(after->snapshot.requests_last_minute, before->snapshot.requests_last_minute);
  EXPECT_EQ(after->snapshot.held, before->snapshot.held);
  // The loop's turn commits a batch and hands the rest to the journal thread.
  loop->run_ready();
  loop.reset();
  store_->pause_journal_for_testing(false);
  store_->flush();
  EXPECT_EQ(admitted.load(), writer_queue_ops_max);
}

// With sync = "full" the log's commit waits for an fsync: an event loop never runs it (it
// would stall every connection the loop serves); the journal thread does.
TEST_F(SqliteStoreTest, EventLoopLeavesFsyncingCommitsToTheJournalThread) {
  store_.reset();
  options_.sync_full = true;
  store_ = open_store_at();
  ASSERT_NE(store_, nullptr);
  auto a = create({100, 100000, 10}, {1000, 1000});
  auto c = cmd(a);
  auto answer = std::make_shared<std::promise<Result<AdmitResult>>>();
  {
    FakeLoop loop;
    store_->admit(c, [answer](Result<AdmitResult> r) { answer->set_value(std::move(r)); });
    EXPECT_EQ(loop.queued(), 0u) << "the loop was asked to run an fsyncing commit";
  }
  auto f = answer->get_future();
  // Committed by the journal thread meanwhile; the bound only keeps a regression from hanging.
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "nobody committed it";
  auto r = f.get();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->decision.admitted());
  fail_in_flight(a);
}

TEST_F(SqliteStoreTest, SchemaIsVersionedAndReopenDoesNotMigrateAgain) {
  store_.reset();
  store_ = open_store_at();
  ASSERT_NE(store_, nullptr);
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), schema_version_latest());
  sqlite3_finalize(s);
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "wal");
  sqlite3_finalize(s);
  sqlite3_close(db);
  store_ = open_store_at();
}

// The store's files hold key hashes and the ledger: every one is created 0600 even under a
// umask that would let others read it (regression: the database, its -wal and -shm, the
// operation log and the lock file were 0644 less the umask).
TEST_F(SqliteStoreTest, EveryFileIsCreatedReadableByTheOwnerOnly) {
  store_.reset();
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  const mode_t previous = ::umask(0);
  store_ = open_store_at();
  ::umask(previous);
  ASSERT_NE(store_, nullptr);
  auto a = create({100, 100000, 10}, {1000, 1000});
  auto c = cmd(a);
  ASSERT_TRUE(admit(c)->decision.admitted());
  ASSERT_TRUE(settle({c.request_id, a.allocation.id, SettleKind::usage, "p1", {1, 1}}).ok());
  store_->flush();
  std::vector<std::string> seen;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    struct stat st {};
    ASSERT_EQ(::stat(e.path().c_str(), &st), 0) << e.path();
    const std::string name = e.path().filename().string();
    seen.push_back(name);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << name;
  }
  std::sort(seen.begin(), seen.end());
  for (const char* expected :
       {"cairva.db", "cairva.db-wal", "cairva.db-shm", "cairva.db.lock", "cairva.db-oplog-spare"}) {
    EXPECT_TRUE(std::binary_search(seen.begin(), seen.end(), std::string(expected)))
        << expected << " missing";
  }
  EXPECT_TRUE(std::any_of(seen.begin(), seen.end(),
                          [](const std::string& n) { return n.starts_with("cairva.db-oplog."); }));
}

// Every request writes a requests row: its statements must not build a temporary table
// (SQLite builds one per execution for `IN` over more than two values, migration 5) and
// the state check must still hold.
TEST_F(SqliteStoreTest, RequestWritesBuildNoTemporaryTableAndStillCheckTheState) {
  store_.reset();
  store_ = open_store_at();
  ASSERT_NE(store_, nullptr);
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA foreign_keys=ON", nullptr, nullptr, nullptr), SQLITE_OK);
  const char* insert =
      "INSERT INTO requests (id, allocation_id, key_id, state, started_at, model, stream,"
      " hold_input, hold_output, finished_at, provider_request_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)";
  const char* update =
      "UPDATE requests SET state = 'booked', finished_at = ?, provider_request_id = ? WHERE id = ?";
  for (const char* sql : {insert, update}) {
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, (std::string("EXPLAIN ") + sql).c_str(), -1, &s, nullptr),
              SQLITE_OK);
    int ops = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
      ++ops;
      EXPECT_STRNE(reinterpret_cast<const char*>(sqlite3_column_text(s, 1)), "OpenEphemeral")
          << sql;
    }
    EXPECT_GT(ops, 0);
    sqlite3_finalize(s);
  }
  const std::string bad_state =
      "INSERT INTO requests (id, allocation_id, key_id, state, started_at, model, stream, "
      "hold_input,"
      " hold_output) SELECT 'req_bad', id, 'k', 'bogus', 1, 'm', 0, 0, 0 FROM allocations LIMIT 1";
  EXPECT_EQ(
      sqlite3_exec(
          db,
          "BEGIN; INSERT INTO agreements VALUES ('agr_x','s','b','p',0,10,1,1,1,1,1,'in_force',0);"
          "INSERT INTO allocations (id, agreement_id, state) VALUES ('alloc_x','agr_x','ready')",
          nullptr, nullptr, nullptr),
      SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, bad_state.c_str(), nullptr, nullptr, nullptr), SQLITE_CONSTRAINT);
  EXPECT_EQ(sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr),
            SQLITE_OK);  // the audit at TearDown sees none of it
  sqlite3_close(db);
  store_ = open_store_at();
}

// `store.sync = "full"` reaches the write a request waits for, the oplog's: one fdatasync
// per commit; "normal" none (the tables always sync: oplog.h says why).
TEST_F(SqliteStoreTest, SyncSettingIsTheOplogs) {
  for (const bool full : {false, true}) {
    const std::string db = (dir_ / (full ? "full.db" : "normal.db")).string();
    auto log = oplog::Log::start(db, 1, full);
    ASSERT_TRUE(log.ok()) << log.error().message;
    const int64_t at_start = (*log)->syncs();  // a new segment's own, with full
    writes::Record r;
    for (int64_t seq = 1; seq <= 3; ++seq) {
      (*log)->add(seq, r);
      ASSERT_TRUE((*log)->commit().ok());
    }
    EXPECT_EQ((*log)->syncs() - at_start, full ? 3 : 0);
  }
}

// Version 1 files (written before the leaner indexes) migrate with every row kept, events
// in their booking order, and keep booking after the last old event, each provider id once.
TEST_F(SqliteStoreTest, MigratesAVersionOneFileKeepingEveryRow) {
  store_.reset();
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  const std::string alloc = "alloc_old";
  {
    auto db = Db::open(path_, false);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(prepare_database(*db, false, 1).ok());
    AgreementRow agr{"agr_old",
                     "s",
                     "b",
                     "openai",
                     {},
                     {{t0_us, t0_us + 86'400 * micros_per_second}, {100, 100000, 10}, {1000, 1000}},
                     core::AgreementState::in_force,
                     t0_us};
    ASSERT_TRUE(writes::insert_agreement(agr, alloc, core::AllocationState::active, "key_old",
                                         "hash_old")(*db)
                    .ok());
    // Rows as a version-1 build wrote them (its columns; today's writes know later ones).
    for (int i = 0; i < 3; ++i) {
      const std::string req = "req_old" + std::to_string(i);
      const std::string t = std::to_string(t0_us + i);
      const bool booked = i < 2;  // the third stays in flight: the restart makes it usage_pending
      std::string sql =
          "INSERT INTO requests (id, allocation_id, key_id, state, started_at, finished_at, model,"
          " stream, hold_input, hold_output, provider_request_id) VALUES ('" +
          req + "', '" + alloc + "', 'key_old', '" + (booked ? "booked" : "in_flight") + "', " + t +
          ", " + (booked ? t : "NULL") + ", 'm', 0, 10, 10, '" +
          (booked ? "prov" + std::to_string(i) : "") + "');";
      if (booked) {
        sql +=
            "INSERT INTO usage_events (id, allocation_id, request_id, provider_request_id, "
            "input_tokens,"
            " output_tokens, source, finality, evidence, booked_at) VALUES ('evt_old" +
            std::to_string(i) + "', '" + alloc + "', '" + req + "', 'prov" + std::to_string(i) +
            "', 5, 7, 'provider', 'reported', '', " + t +
            ");"
            "UPDATE allocations SET used_input = used_input + 5, used_output = used_output + 7 "
            "WHERE id = '" +
            alloc + "';";
      }
      ASSERT_TRUE(db->exec(sql).ok());
    }
  }
  store_ = open_store_at();
  ASSERT_NE(store_, nullptr);
  auto events = store_->list_events(
      store::EventFilter{.allocation_id = alloc, .after = std::nullopt, .limit = 100});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->data.size(), 2u);
  EXPECT_EQ(events->data[0].id, "evt_old0");
  EXPECT_EQ(events->data[1].id, "evt_old1");
  auto after = store_->list_events(
      store::EventFilter{.allocation_id = alloc, .after = std::string("evt_old0"), .limit = 100});
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->data.size(), 1u);
  EXPECT_EQ(after->data[0].id, "evt_old1");
  auto pending = store_->get_request("req_old2");
  ASSERT_TRUE(pending.ok());
  EXPECT_EQ(pending->state, core::RequestState::usage_pending);
  auto status = store_->get_allocation(alloc);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->snapshot.booked.input, 10);
  EXPECT_EQ(status->snapshot.booked.output, 14);
  // A new booking lands after the migrated ones; a migrated provider id is still booked
  // only once (the booking key's uniqueness moved from an index to the ledger, migration 3).
  auto book_new = [&](const std::string& provider_id, core::Tokens usage) {
    AdmitCommand c;
    c.request_id = new_time_ordered_id("req");
    c.allocation_id = alloc;
    c.key_id = "key_old";
    c.model = "m";
    c.facts.input_estimate = 1;
    c.facts.max_tokens = 1;
    auto admitted = admit(c);
    EXPECT_TRUE(admitted.ok() && admitted->decision.admitted());
    auto settled = settle({c.request_id, alloc, SettleKind::usage, provider_id, usage});
    EXPECT_TRUE(settled.ok());
    return std::pair{c.request_id,
                     settled.ok() ? settled->book : core::BookResult::unknown_request};
  };
  const auto [new_request, new_result] = book_new("prov_new", {1, 1});
  EXPECT_EQ(new_result, core::BookResult::booked);
  EXPECT_EQ(book_new("prov0", {5, 7}).second, core::BookResult::reused_id);
  EXPECT_EQ(book_new("prov1", {6, 7}).second, core::BookResult::reused_id);
  events = store_->list_events(
      store::EventFilter{.allocation_id = alloc, .after = std::nullopt, .limit = 100});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->data.size(), 3u);
  EXPECT_EQ(events->data[2].request_id, new_request);
  status = store_->get_allocation(alloc);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->snapshot.booked.input, 11);
  EXPECT_EQ(status->snapshot.booked.output, 15);
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(db,
                         "SELECT (SELECT COUNT(*) FROM sqlite_master WHERE name IN"
                         " ('requests_state', 'usage_events_booked_at', 'usage_events_v2',"
                         " 'usage_events_v3', 'sqlite_autoindex_usage_events_3', 'requests_v5'))"
                         " + (SELECT COUNT(*) FROM pragma_table_info('requests')"
                         " WHERE name = 'booked_event_id')",
                         -1, &s, nullptr),
      SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  store_ = open_store_at();  // TearDown audits the migrated file
}

TEST_F(SqliteStoreTest, NoSecretIsStoredOnlyItsHash) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  store_->flush();
  store_.reset();
  std::string bytes;
  for (const auto& f : std::filesystem::directory_iterator(dir_)) {
    std::ifstream in(f.path(), std::ios::binary);
    bytes.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EXPECT_EQ(bytes.find(a.key_secret), std::string::npos);
  EXPECT_NE(bytes.find(hash_secret(a.key_secret)), std::string::npos);
  store_ = open_store_at();
}

TEST_F(SqliteStoreTest, AuditNamesEachBrokenInvariant) {
  auto a = create({1, 100000, 10}, {1000, 1000});
  auto c = cmd(a);
  ASSERT_TRUE(admit(c)->decision.admitted());
  ASSERT_TRUE(settle({c.request_id, a.allocation.id, SettleKind::failed, "", {}}).ok());
  auto clean = store_->audit();
  ASSERT_TRUE(clean.ok());
  EXPECT_TRUE(clean->violations.empty());
  EXPECT_EQ(clean->requests, 1);
  store_.reset();
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    const std::string tamper =
        "UPDATE allocations SET used_input = 5;"
        "UPDATE requests SET state = 'booked';"
        "INSERT INTO requests (id, allocation_id, key_id, state, started_at, finished_at, model,"
        " stream, hold_input, hold_output) SELECT 'req_extra', allocation_id, key_id, 'failed',"
        " started_at + 1, started_at + 2, model, 0, 0, 0 FROM requests;";
    ASSERT_EQ(sqlite3_exec(db, tamper.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  store_ = open_store_at();
  ASSERT_NE(store_, nullptr);
  auto report = store_->audit();
  ASSERT_TRUE(report.ok());
  auto has = [&](const std::string& prefix) {
    for (const auto& v : report->violations) {
      if (v.rfind(prefix, 0) == 0) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("conservation: allocation " + a.allocation.id));
  EXPECT_TRUE(has("booking: request " + c.request_id));
  EXPECT_TRUE(has("rate: allocation " + a.allocation.id));
  // The rows inserted by hand have no start numbers (a usage series would miscount them).
  EXPECT_TRUE(has("series: requests of allocation " + a.allocation.id));
  EXPECT_EQ(report->violations.size(), 4u);
  store_.reset();  // the file is broken on purpose: no audit in TearDown
}

}  // namespace
}  // namespace cairva::store::sqlite
