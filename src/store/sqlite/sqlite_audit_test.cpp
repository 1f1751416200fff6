// `cairva audit` on the embedded store: read-only beside a running store, and each ledger
// invariant broken on purpose in the file is named (and only that one).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <future>

#include "base/ids.h"
#include "store/sqlite/sqlite_store.h"

namespace cairva::store::sqlite {
namespace {

constexpr UnixMicros t0_us = 1'767'225'600LL * micros_per_second;

template <class T>
Result<T> await(const std::function<void(Callback<T>)>& start) {
  auto p = std::make_shared<std::promise<Result<T>>>();
  start([p](Result<T> r) { p->set_value(std::move(r)); });
  return p->get_future().get();
}

// A file with one allocation (rpm 10, concurrency 1, allowance 1000/1000) and three
// requests: `booked_` (usage 10/7 under provider id "prov-1"), `failed_a_`, `failed_b_`.
class SqliteAuditTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("cairva-audit-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "cairva.db").string();
    options_.providers = {"openai"};
    auto s = SqliteStore::open(path_, options_, clock_);
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(s).value();
    NewAgreement a{"s",
                   "b",
                   "openai",
                   {},
                   {{t0_us, t0_us + 86'400 * micros_per_second}, {10, 100000, 1}, {1000, 1000}}};
    auto c = store_->create_agreement(a);
    ASSERT_TRUE(c.ok());
    created_ = std::move(c).value();
    booked_ = run_request(SettleKind::usage);
    failed_a_ = run_request(SettleKind::failed);
    failed_b_ = run_request(SettleKind::failed);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string run_request(SettleKind kind) {
    AdmitCommand c;
    c.request_id = new_id("req");
    c.allocation_id = created_.allocation.id;
    c.key_id = created_.key_id;
    c.model = "m";
    c.facts.input_estimate = 1;
    c.facts.max_tokens = 10;
    auto admitted =
        await<AdmitResult>([&](Callback<AdmitResult> cb) { store_->admit(c, std::move(cb)); });
    EXPECT_TRUE(admitted.ok() && admitted->decision.admitted());
    clock_->advance_seconds(1);
    SettleCommand s{c.request_id, c.allocation_id, kind, "prov-1", {10, 7}};
    auto settled =
        await<SettleResult>([&](Callback<SettleResult> cb) { store_->settle(s, std::move(cb)); });
    EXPECT_TRUE(settled.ok());
    clock_->advance_seconds(1);
    return c.request_id;
  }

  Result<AuditReport> audit_file() { return SqliteStore::audit_file(path_, options_, clock_); }

  // Closes the store and runs `sql` on the file with its CHECK constraints off.
  void tamper(const std::string& sql) {
    store_.reset();
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    const std::string all = "PRAGMA ignore_check_constraints=ON;" + sql;
    ASSERT_EQ(sqlite3_exec(db, all.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_close(db);
  }

  // Drops usage_events' UNIQUE constraints (a copy of the table without them) so that a
  // double booking can be written at all.
  static std::string without_unique_events() {
    return "CREATE TABLE ue AS SELECT * FROM usage_events; DROP TABLE usage_events;"
           " ALTER TABLE ue RENAME TO usage_events;";
  }

  std::filesystem::path dir_;
  std::string path_;
  StoreOptions options_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(t0_us);
  std::unique_ptr<SqliteStore> store_;
  CreatedAgreement created_;
  std::string booked_, failed_a_, failed_b_;
};

TEST_F(SqliteAuditTest, AuditsReadOnlyWhileTheStoreOwnsTheFile) {
  store_->flush();
  auto report = audit_file();
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->violations.empty()) << report->violations.front();
  EXPECT_EQ(report->allocations, 1);
  EXPECT_EQ(report->requests, 3);
  EXPECT_EQ(report->events, 1);
  // The store still owns the file and keeps writing after the audit.
  run_request(SettleKind::usage);
  store_->flush();
  auto again = audit_file();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->requests, 4);
}

TEST_F(SqliteAuditTest, AuditOfAMissingFileIsAnErrorAndCreatesNothing) {
  const std::string missing = (dir_ / "nope.db").string();
  auto report = SqliteStore::audit_file(missing, options_, clock_);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.error().code, ErrorCode::store_unavailable);
  EXPECT_FALSE(std::filesystem::exists(missing));
}

struct Breakage {
  const char* name;
  // SQL with placeholders: $A = allocation id, $G = agreement id, $B = booked request,
  // $F = first failed request, $H = second failed request.
  std::string sql;
  std::string expected_prefix;
  int64_t audit_at_s = 10;  // audit "now", seconds after t0
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

TEST_F(SqliteAuditTest, EachBrokenInvariantIsNamedAlone) {
  const std::vector<Breakage> cases = {
      {"used differs from the events", "UPDATE allocations SET used_input = used_input + 5;",
       "conservation: allocation $A"},
      {"depleted below the allowance", "UPDATE allocations SET state = 'depleted';",
       "state: allocation $A"},
      {"allowance reached but active", "UPDATE agreements SET input_tokens = 10;",
       "state: allocation $A"},
      {"completed agreement of a live allocation", "UPDATE agreements SET state = 'completed';",
       "state: agreement $G"},
      {"two events under one provider request id",
       without_unique_events() +
           "INSERT INTO usage_events SELECT seq + 1, 'evt_dup', allocation_id, '$F',"
           " provider_request_id, input_tokens, output_tokens, source, finality, evidence, "
           "booked_at,"
           " NULL, 2 * cum_input, 2 * cum_output FROM usage_events; UPDATE requests SET state = "
           "'booked' WHERE id = '$F';"
           " UPDATE allocations SET used_input = 2 * used_input, used_output = 2 * used_output;",
       "double booking: provider request id $A/prov-1"},
      {"two events for one request",
       without_unique_events() +
           "INSERT INTO usage_events SELECT seq + 1, 'evt_dup', allocation_id, request_id,"
           " 'prov-2', input_tokens, output_tokens, source, finality, evidence, booked_at,"
           " NULL, 2 * cum_input, 2 * cum_output FROM usage_events;"
           " UPDATE allocations SET used_input = 2 * used_input, used_output = 2 * used_output;",
       "double booking: request $B"},
      {"booked without an event (of its own or under its provider id)",
       "UPDATE requests SET state = 'booked', provider_request_id = 'prov-none' WHERE id = '$F';",
       "booking: request $F"},
      {"event of a request that is not booked",
       "UPDATE requests SET state = 'failed' WHERE id = '$B';", "booking: event"},
      {"negative hold", "UPDATE requests SET hold_input = -1 WHERE id = '$F';", "counts: $F"},
      // Foreign keys are not enforced on writes (schema.cpp): the audit checks them.
      {"request of a missing allocation",
       "UPDATE requests SET allocation_id = 'alloc_gone' WHERE id = '$F';",
       "reference: request $F belongs to allocation alloc_gone which is missing"},
      {"key of a missing allocation", "UPDATE api_keys SET allocation_id = 'alloc_gone';",
       "reference: api_keys row 1 refers to a missing row of allocations"},
      {"conflict recorded against other counts",
       "INSERT INTO conflicts (id, allocation_id, request_id, provider_request_id, reported_input,"
       " reported_output, booked_input, booked_output, recorded_at)"
       " VALUES ('cfl_x', '$A', '$F', 'prov-1', 99, 99, 3, 3, 0);",
       "conflict: cfl_x"},
      {"conflict under a provider id nothing was booked under",
       "INSERT INTO conflicts (id, allocation_id, request_id, provider_request_id, reported_input,"
       " reported_output, booked_input, booked_output, recorded_at)"
       " VALUES ('cfl_y', '$A', '$F', 'prov-none', 99, 99, 10, 7, 0);",
       "conflict: cfl_y"},
      {"finished request without a finish time",
       "UPDATE requests SET finished_at = NULL WHERE id = '$F';", "state: request $F"},
      {"started outside the window",
       "UPDATE requests SET started_at = (SELECT starts_at - 1 FROM agreements) WHERE id = '$F';",
       "window: request $F"},
      {"in flight past the timeout",
       "UPDATE requests SET state = 'in_flight', finished_at = NULL WHERE id = '$F';",
       "stale: request $F", 700},
      {"more in flight than max_concurrency",
       "UPDATE requests SET state = 'in_flight', finished_at = NULL WHERE id IN ('$F', '$H');",
       "concurrency: allocation $A"},
      {"more starts in 60 s than requests_per_minute",
       "UPDATE agreements SET requests_per_minute = 2;", "rate: allocation $A"},
  };
  options_.in_flight_timeout_s = 600;
  store_->flush();
  tamper("PRAGMA wal_checkpoint(TRUNCATE);");  // closes the store; everything into the main file
  const std::string pristine = path_ + ".pristine";
  std::filesystem::copy_file(path_, pristine);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    for (const char* side : {"-wal", "-shm"})
      std::filesystem::remove(path_ + side);  // the last case's
    std::filesystem::copy_file(pristine, path_, std::filesystem::copy_options::overwrite_existing);
    auto fill = [&](std::string s) {
      s = replace_all(s, "$A", created_.allocation.id);
      s = replace_all(s, "$G", created_.agreement.id);
      s = replace_all(s, "$B", booked_);
      s = replace_all(s, "$F", failed_a_);
      return replace_all(s, "$H", failed_b_);
    };
    tamper(fill(c.sql));
    clock_->set(t0_us + c.audit_at_s * micros_per_second);
    auto report = audit_file();
    ASSERT_TRUE(report.ok()) << report.error().message;
    ASSERT_EQ(report->violations.size(), 1u)
        << (report->violations.empty() ? "none" : report->violations[0])
        << (report->violations.size() > 1 ? " / " + report->violations[1] : "");
    EXPECT_EQ(report->violations[0].rfind(fill(c.expected_prefix), 0), 0u) << report->violations[0];
  }
}

}  // namespace
}  // namespace cairva::store::sqlite
