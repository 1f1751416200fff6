// AdminApi over the real embedded store: the flows of SPEC §7 end to end, without sockets.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <future>

#include "admin/admin_api.h"
#include "base/ids.h"
#include "store/open.h"

namespace cairva::admin {
namespace {

namespace json = boost::json;

constexpr UnixMicros t0 = 1'796'083'200 * micros_per_second;  // 2026-12-01T00:00:00Z

template <class T>
Result<T> wait(std::function<void(store::Callback<T>)> call) {
  std::promise<Result<T>> p;
  auto f = p.get_future();
  call([&p](Result<T> r) { p.set_value(std::move(r)); });
  return f.get();
}

class AdminSqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("cairva-admin-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    store::StoreOptions o;
    o.url = "sqlite://" + (dir_ / "cairva.db").string();
    o.use_database_clock = false;
    o.providers = {"mock"};
    auto s = store::open_store(o, clock_);
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
    api_ = std::make_unique<AdminApi>(*store_, "tok", clock_, [] { return std::string("m 1\n"); });
  }
  void TearDown() override {
    api_.reset();
    if (store_) {
      auto audit = store_->audit();
      ASSERT_TRUE(audit.ok());
      EXPECT_TRUE(audit->violations.empty());
    }
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::pair<int, json::value> call(const std::string& method, const std::string& target,
                                   const std::string& body = "") {
    AdminResponse r = api_->handle(AdminRequest{method, target, "Bearer tok", body});
    boost::system::error_code ec;
    json::value v = json::parse(r.body, ec);
    return {r.status, v};
  }

  json::object create(int64_t output_tokens = 1000) {
    json::object body{{"supplier", "s"},
                      {"buyer", "b"},
                      {"provider", "mock"},
                      {"input_tokens", 1000},
                      {"output_tokens", output_tokens},
                      {"ends_at", "2026-12-31T00:00:00Z"},
                      {"requests_per_minute", 100},
                      {"tokens_per_minute", 100000},
                      {"max_concurrency", 10}};
    auto [status, v] = call("POST", "/admin/v1/agreements", json::serialize(body));
    EXPECT_EQ(status, 201) << json::serialize(v);
    return v.as_object();
  }

  // Admits one request on `alloc` (key `key`) and settles it as usage missing.
  std::string pending_request(const std::string& alloc, const std::string& key) {
    store::AdmitCommand cmd;
    cmd.request_id = new_id("req");
    cmd.allocation_id = alloc;
    cmd.key_id = key;
    cmd.model = "m";
    cmd.facts.input_estimate = 10;
    cmd.facts.max_tokens = 20;
    auto admitted = wait<store::AdmitResult>([&](auto cb) { store_->admit(cmd, std::move(cb)); });
    EXPECT_TRUE(admitted.ok() && admitted->decision.admitted());
    store::SettleCommand settle{cmd.request_id, alloc, store::SettleKind::usage_missing, "", {}};
    auto settled =
        wait<store::SettleResult>([&](auto cb) { store_->settle(settle, std::move(cb)); });
    EXPECT_TRUE(settled.ok());
    return cmd.request_id;
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(t0);
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<AdminApi> api_;
};

TEST_F(AdminSqliteTest, CreatesListsAndShowsAnAgreementsAllocation) {
  json::object c = create();
  const std::string alloc(c.at("allocation").at("id").as_string());
  EXPECT_EQ(c.at("allocation").at("state"), "active");
  EXPECT_EQ(c.at("agreement").at("starts_at"), "2026-12-01T00:00:00Z");
  auto [ls, list] = call("GET", "/admin/v1/allocations");
  EXPECT_EQ(ls, 200);
  EXPECT_EQ(list.at("data").as_array().size(), 1u);
  auto [gs, one] = call("GET", "/admin/v1/allocations/" + alloc);
  EXPECT_EQ(gs, 200);
  EXPECT_EQ(one.at("allowance"), (json::object{{"input_tokens", 1000}, {"output_tokens", 1000}}));
  EXPECT_EQ(call("GET", "/admin/v1/allocations/alloc_nope").first, 404);
}

TEST_F(AdminSqliteTest, UnconfiguredProviderIs400) {
  json::object body{
      {"supplier", "s"},          {"buyer", "b"},           {"provider", "nope"},
      {"input_tokens", 1},        {"output_tokens", 1},     {"ends_at", "2026-12-31T00:00:00Z"},
      {"requests_per_minute", 1}, {"tokens_per_minute", 1}, {"max_concurrency", 1}};
  auto [status, v] = call("POST", "/admin/v1/agreements", json::serialize(body));
  EXPECT_EQ(status, 400);
  EXPECT_EQ(v.at("error").at("code"), "invalid_request");
}

TEST_F(AdminSqliteTest, ReconcilesAPendingRequestOnceAndListsItsEvent) {
  json::object c = create();
  const std::string alloc(c.at("allocation").at("id").as_string());
  const std::string key(c.at("api_key").at("id").as_string());
  const std::string req = pending_request(alloc, key);
  auto [ps, pending] = call("GET", "/admin/v1/requests?state=usage_pending&allocation_id=" + alloc);
  ASSERT_EQ(ps, 200);
  ASSERT_EQ(pending.at("data").as_array().size(), 1u);
  EXPECT_EQ(pending.at("data").at(0).at("id"), req.c_str());
  const std::string body = R"({"input_tokens":12,"output_tokens":9,"evidence":"export"})";
  EXPECT_EQ(call("POST", "/admin/v1/requests/req_nope/reconcile", body).first, 404);
  auto [rs, ev] = call("POST", "/admin/v1/requests/" + req + "/reconcile", body);
  ASSERT_EQ(rs, 200) << json::serialize(ev);
  EXPECT_EQ(ev.at("event").at("source"), "reconciliation");
  EXPECT_EQ(ev.at("event").at("finality"), "confirmed");
  auto [again, err] = call("POST", "/admin/v1/requests/" + req + "/reconcile", body);
  EXPECT_EQ(again, 409);
  EXPECT_EQ(err.at("error").at("code"), "not_pending");
  auto [as, a] = call("GET", "/admin/v1/allocations/" + alloc);
  EXPECT_EQ(a.at("used"), (json::object{{"input_tokens", 12}, {"output_tokens", 9}}));
  EXPECT_EQ(a.at("held"), (json::object{{"input_tokens", 0}, {"output_tokens", 0}}));
  auto [es, events] = call("GET", "/admin/v1/events?allocation_id=" + alloc);
  ASSERT_EQ(events.at("data").as_array().size(), 1u);
  EXPECT_EQ(events.at("data").at(0).at("request_id"), req.c_str());
}

TEST_F(AdminSqliteTest, SuspendResumeCancelAndKeys) {
  json::object c = create();
  const std::string alloc(c.at("allocation").at("id").as_string());
  const std::string agr(c.at("agreement").at("id").as_string());
  EXPECT_EQ(call("POST", "/admin/v1/allocations/" + alloc + "/suspend").second.at("state"),
            "suspended");
  EXPECT_EQ(call("POST", "/admin/v1/allocations/" + alloc + "/resume").second.at("state"),
            "active");
  auto [ks, k] = call("POST", "/admin/v1/allocations/" + alloc + "/keys");
  EXPECT_EQ(ks, 201);
  const std::string key_id(k.at("api_key").at("id").as_string());
  auto [rs, r] = call("DELETE", "/admin/v1/keys/" + key_id);
  EXPECT_EQ(rs, 200);
  EXPECT_EQ(r.at("api_key").at("revoked"), true);
  auto [cs, cancelled] = call("POST", "/admin/v1/agreements/" + agr + "/cancel");
  EXPECT_EQ(cs, 200);
  EXPECT_EQ(cancelled.at("agreement").at("state"), "cancelled");
}

TEST_F(AdminSqliteTest, SuspendingADepletedAllocationIs409) {
  json::object c = create(5);
  const std::string alloc(c.at("allocation").at("id").as_string());
  const std::string key(c.at("api_key").at("id").as_string());
  const std::string req = pending_request(alloc, key);
  ASSERT_EQ(call("POST", "/admin/v1/requests/" + req + "/reconcile",
                 R"({"input_tokens":1,"output_tokens":5,"evidence":"e"})")
                .first,
            200);
  EXPECT_EQ(call("GET", "/admin/v1/allocations/" + alloc).second.at("state"), "depleted");
  EXPECT_EQ(call("POST", "/admin/v1/allocations/" + alloc + "/suspend").first, 409);
}

TEST_F(AdminSqliteTest, AgreementWhoseWindowEndedUnusedShowsExpired) {
  json::object created = create();
  const std::string id(created["agreement"].as_object()["id"].as_string());
  auto [before_status, before] = call("GET", "/admin/v1/agreements/" + id);
  ASSERT_EQ(before_status, 200);
  EXPECT_EQ(before.as_object().at("state").as_string(), "in_force");
  clock_->set(*parse_rfc3339("2026-12-31T00:00:00Z"));  // the window's end: [starts_at, ends_at)
  auto [after_status, after] = call("GET", "/admin/v1/agreements/" + id);
  ASSERT_EQ(after_status, 200);
  EXPECT_EQ(after.as_object().at("state").as_string(), "expired");
}

TEST_F(AdminSqliteTest, BackupWritesACopyAndRefusesToReplaceIt) {
  create();
  const std::string target = (dir_ / "copy.db").string();
  const std::string body = json::serialize(json::object{{"path", target}});
  auto [status, v] = call("POST", "/admin/v1/backup", body);
  ASSERT_EQ(status, 200) << json::serialize(v);
  const auto& b = v.at("backup");
  EXPECT_EQ(b.at("object"), "backup");
  EXPECT_EQ(b.at("path").as_string(), target);
  EXPECT_EQ(b.at("allocations"), 1);
  EXPECT_EQ(b.at("usage_events"), 0);
  EXPECT_EQ(b.at("bytes").as_int64(), static_cast<int64_t>(std::filesystem::file_size(target)));
  EXPECT_EQ(b.at("started_at"), "2026-12-01T00:00:00Z");
  auto [again, err] = call("POST", "/admin/v1/backup", body);
  EXPECT_EQ(again, 409);
  EXPECT_EQ(err.at("error").at("code"), "conflict");
  auto [relative, rel_err] = call("POST", "/admin/v1/backup", R"({"path":"copy2.db"})");
  EXPECT_EQ(relative, 400);
  EXPECT_EQ(rel_err.at("error").at("code"), "invalid_request");
}

}  // namespace
}  // namespace cairva::admin
