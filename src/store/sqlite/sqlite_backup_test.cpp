// SqliteStore::backup: an online copy that holds every acknowledged write, stands alone
// (no operation log), opens as a store with the same ledger, and never replaces a file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "base/ids.h"
#include "store/sqlite/limits.h"
#include "store/sqlite/sqlite_store.h"

namespace cairva::store::sqlite {
namespace {

namespace fs = std::filesystem;

constexpr UnixMicros t0_us = 1'767'225'600LL * micros_per_second;

template <class T>
Result<T> await(const std::function<void(Callback<T>)>& start) {
  auto p = std::make_shared<std::promise<Result<T>>>();
  start([p](Result<T> r) { p->set_value(std::move(r)); });
  return p->get_future().get();
}

class SqliteBackupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cairva-backup-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "live");
    fs::create_directories(dir_ / "backups");
    fs::create_directories(dir_ / "restored");
    options_.providers = {"openai"};
    store_ = open(live_path());
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }

  std::string live_path() const { return (dir_ / "live" / "cairva.db").string(); }
  std::string backup_path(const std::string& name = "copy.db") const {
    return (dir_ / "backups" / name).string();
  }

  std::unique_ptr<SqliteStore> open(const std::string& path) {
    auto s = SqliteStore::open(path, options_, clock_);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return s.ok() ? std::move(s).value() : nullptr;
  }

  CreatedAgreement create() {
    NewAgreement a{
        "s",
        "b",
        "openai",
        {},
        {{t0_us, t0_us + 86'400 * micros_per_second}, {100, 100000, 10}, {10000, 10000}}};
    auto c = store_->create_agreement(a);
    EXPECT_TRUE(c.ok());
    return std::move(c).value();
  }

  AdmitCommand admit(const CreatedAgreement& a) {
    AdmitCommand c;
    c.request_id = new_id("req");
    c.allocation_id = a.allocation.id;
    c.key_id = a.key_id;
    c.model = "m";
    c.facts.input_estimate = 1;
    c.facts.max_tokens = 1;
    auto r = await<AdmitResult>([&](Callback<AdmitResult> cb) { store_->admit(c, std::move(cb)); });
    EXPECT_TRUE(r.ok() && r->decision.admitted());
    return c;
  }

  void book(const AdmitCommand& c, const std::string& provider_id, core::Tokens usage) {
    auto r = await<SettleResult>([&](Callback<SettleResult> cb) {
      store_->settle({c.request_id, c.allocation_id, SettleKind::usage, provider_id, usage},
                     std::move(cb));
    });
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->book, core::BookResult::booked);
  }

  // Puts the copy in place of a stopped gateway's store, as docs/operations.md says.
  std::unique_ptr<SqliteStore> restore(const std::string& copy) {
    const fs::path restored = dir_ / "restored" / "cairva.db";
    fs::copy_file(copy, restored);
    return open(restored.string());
  }

  fs::path dir_;
  StoreOptions options_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(t0_us);
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(SqliteBackupTest, CopyHoldsWritesAcknowledgedButStillOnlyInTheOperationLog) {
  auto a = create();
  store_->flush();
  store_->pause_applier_for_testing(true);  // acknowledged writes stay in the oplog only
  const auto in_flight = admit(a);
  const auto first = admit(a);
  const auto second = admit(a);
  book(first, "prov-1", {3, 4});
  book(second, "prov-2", {5, 6});
  const int64_t backlog = store_->writer_stats().apply_backlog;
  ASSERT_GT(backlog, 0);

  auto copy = std::async(std::launch::async, [&] { return store_->backup(backup_path()); });
  // The backup waits behind those writes (its flush is queued after them) until the
  // applier runs again: nothing is copied before they are in the tables.
  // (A backup that did not wait would be done here already: the loop ends either way.)
  while (store_->writer_stats().apply_backlog == backlog &&
         copy.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    std::this_thread::yield();
  }
  EXPECT_NE(copy.wait_for(std::chrono::seconds(0)), std::future_status::ready)
      << "the backup did not wait";
  EXPECT_FALSE(fs::exists(backup_path()));
  store_->pause_applier_for_testing(false);
  auto report = copy.get();
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->path, backup_path());
  EXPECT_EQ(report->allocations, 1);
  EXPECT_EQ(report->requests, 3);
  EXPECT_EQ(report->events, 2);
  EXPECT_EQ(report->bytes, static_cast<int64_t>(fs::file_size(backup_path())));
  EXPECT_EQ(report->started_at, t0_us);

  // The copy stands alone: no -wal, no log beside it.
  for (const auto& e : fs::directory_iterator(dir_ / "backups"))
    EXPECT_EQ(e.path().filename(), "copy.db");
  auto audit = SqliteStore::audit_file(backup_path(), options_, clock_);
  ASSERT_TRUE(audit.ok()) << audit.error().message;
  EXPECT_TRUE(audit->violations.empty()) << audit->violations.front();
  EXPECT_EQ(audit->events, 2);
  EXPECT_EQ(audit->unapplied_writes, 0);

  // Restored, it is the same ledger; the live store still has its request in flight.
  auto restored = restore(backup_path());
  ASSERT_NE(restored, nullptr);
  store::EventFilter only_a;
  only_a.allocation_id = a.allocation.id;
  auto events = restored->list_events(only_a);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->data.size(), 2u);
  EXPECT_EQ(events->data[0].provider_request_id, "prov-1");
  EXPECT_EQ(events->data[0].tokens.input, 3);
  EXPECT_EQ(events->data[1].tokens.output, 6);
  auto status = restored->get_allocation(a.allocation.id);
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->snapshot.booked.input, 8);
  EXPECT_EQ(status->snapshot.booked.output, 10);
  EXPECT_EQ(restored->get_request(in_flight.request_id)->state, core::RequestState::usage_pending);
  EXPECT_EQ(store_->get_request(in_flight.request_id)->state, core::RequestState::in_flight);
  auto restored_audit = restored->audit();
  ASSERT_TRUE(restored_audit.ok());
  EXPECT_TRUE(restored_audit->violations.empty());
}

TEST_F(SqliteBackupTest, CopyIsPrivateWhateverTheUmask) {
  create();
  const mode_t before = ::umask(0);
  auto report = store_->backup(backup_path());
  ::umask(before);
  ASSERT_TRUE(report.ok()) << report.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(backup_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(SqliteBackupTest, RefusesBadTargetsAndNeverReplacesAFile) {
  create();
  { std::ofstream(backup_path("taken.db")) << "precious"; }
  struct Case {
    std::string path;
    ErrorCode code;
    const char* says;
  };
  const Case cases[] = {
      {"relative.db", ErrorCode::invalid_request, "absolute file path"},
      {"", ErrorCode::invalid_request, "absolute file path"},
      {(dir_ / "backups" / "").string(), ErrorCode::invalid_request, "absolute file path"},
      {(dir_ / "missing" / "copy.db").string(), ErrorCode::invalid_request, "does not exist"},
      {backup_path("taken.db"), ErrorCode::conflict, "never replaces"},
      {live_path(), ErrorCode::conflict, "never replaces"},
      {live_path() + "-oplog.99", ErrorCode::invalid_request, "store's own files"},
  };
  for (const auto& c : cases) {
    auto r = store_->backup(c.path);
    ASSERT_FALSE(r.ok()) << c.path;
    EXPECT_EQ(r.error().code, c.code) << c.path;
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
  }
  std::ifstream in(backup_path("taken.db"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "precious");
  EXPECT_FALSE(fs::exists(live_path() + "-oplog.99"));
}

TEST_F(SqliteBackupTest, APartialCopyLeftByACutBackupIsReportedAndKept) {
  create();
  { std::ofstream(backup_path() + ".partial") << "cut"; }
  auto r = store_->backup(backup_path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::conflict);
  EXPECT_NE(r.error().message.find("under way, or one was cut"), std::string::npos)
      << r.error().message;
  EXPECT_TRUE(fs::exists(backup_path() + ".partial"));
  EXPECT_FALSE(fs::exists(backup_path()));
  fs::remove(backup_path() + ".partial");
  EXPECT_TRUE(store_->backup(backup_path()).ok());
}

TEST_F(SqliteBackupTest, RefusesWhenTheTablesLackAcknowledgedWritesAndLeavesNothing) {
  auto a = create();
  store_->flush();
  store_->pause_applier_for_testing(true);
  book(admit(a), "prov-1", {3, 4});           // acknowledged: in the oplog only
  store_->set_write_fault_for_testing(true);  // the applier's disk fails from now on
  store_->pause_applier_for_testing(false);
  auto r = store_->backup(backup_path());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::store_unavailable);
  EXPECT_NE(r.error().message.find("behind its operation log"), std::string::npos)
      << r.error().message;
  for (const auto& e : fs::directory_iterator(dir_ / "backups"))
    ADD_FAILURE() << "left behind: " << e.path();

  store_->set_write_fault_for_testing(false);
  clock_->advance_micros(writer_retry_ms * 1000);
  store_->wait_while_writer_failing_for_testing();
  auto again = store_->backup(backup_path());
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->events, 1);
}

}  // namespace
}  // namespace cairva::store::sqlite
