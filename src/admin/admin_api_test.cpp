#include "admin/admin_api.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "store/fake_store.h"

namespace cairva::admin {
namespace {

namespace json = boost::json;

// 2026-12-01T00:00:00Z
constexpr UnixMicros t0 = 1'796'083'200 * micros_per_second;

struct Reply {
  int status = 0;
  json::value body;
  std::string text;
  std::string content_type;
  std::string code() const {
    const auto* e = body.is_object() ? body.as_object().if_contains("error") : nullptr;
    return e ? std::string(e->at("code").as_string()) : "";
  }
  std::string message() const { return std::string(body.at("error").at("message").as_string()); }
};

class AdminApiTest : public ::testing::Test {
 protected:
  AdminApiTest()
      : clock_(std::make_shared<ManualClock>(t0)),
        store_({"openai", "mock"}),
        api_(store_, "admin-token", clock_, [] { return std::string("cairva_up 1\n"); }) {}

  Reply call(const std::string& method, const std::string& target, const std::string& body = "",
             const std::string& auth = "Bearer admin-token") {
    AdminResponse r = api_.handle(AdminRequest{method, target, auth, body});
    Reply out{r.status, {}, r.body, r.content_type};
    boost::system::error_code ec;
    out.body = json::parse(r.body, ec);
    return out;
  }

  static json::object agreement_body() {
    return json::object{{"supplier", "acme"},
                        {"buyer", "bob"},
                        {"provider", "openai"},
                        {"models", json::array{"gpt-a", "gpt-b"}},
                        {"input_tokens", 1000},
                        {"output_tokens", 500},
                        {"starts_at", "2026-12-01T00:00:00Z"},
                        {"ends_at", "2026-12-31T00:00:00Z"},
                        {"requests_per_minute", 60},
                        {"tokens_per_minute", 10000},
                        {"max_concurrency", 4}};
  }

  // Creates an agreement; returns the 201 body.
  json::object create() {
    Reply r = call("POST", "/admin/v1/agreements", json::serialize(agreement_body()));
    EXPECT_EQ(r.status, 201) << r.text;
    return r.body.as_object();
  }

  void expect_invalid(const json::object& body, const std::string& message_part) {
    Reply r = call("POST", "/admin/v1/agreements", json::serialize(body));
    EXPECT_EQ(r.status, 400) << json::serialize(body);
    EXPECT_EQ(r.code(), "invalid_request");
    EXPECT_NE(r.text.find(message_part), std::string::npos) << r.text;
  }

  store::RequestRow add_request(const std::string& id, core::RequestState state,
                                const std::string& alloc = "alloc_1") {
    store::RequestRow r;
    r.id = id;
    r.allocation_id = alloc;
    r.state = state;
    r.started_at = t0;
    r.model = "gpt-a";
    r.hold = {10, 20};
    store_.add_request(r);
    return r;
  }

  std::shared_ptr<ManualClock> clock_;
  store::testing::FakeStore store_;
  AdminApi api_;
};

TEST_F(AdminApiTest, RefusesMissingWrongOrMalformedToken) {
  for (const std::string auth : {"", "Bearer", "Bearer ", "Bearer wrong", "Basic admin-token",
                                 "admin-token", "Bearer admin-token2", "Bearer admin-toke"}) {
    Reply r = call("GET", "/admin/v1/allocations", "", auth);
    EXPECT_EQ(r.status, 401) << auth;
    EXPECT_EQ(r.code(), "invalid_admin_token");
    EXPECT_EQ(r.body.at("error").at("type").as_string(), "invalid_admin_token");
  }
  EXPECT_EQ(call("GET", "/admin/v1/allocations", "", "bearer admin-token").status, 200);
}

TEST_F(AdminApiTest, EmptyConfiguredTokenRefusesEverything) {
  AdminApi locked(store_, "", clock_, [] { return std::string(); });
  AdminResponse r = locked.handle(AdminRequest{"GET", "/admin/v1/allocations", "Bearer ", ""});
  EXPECT_EQ(r.status, 401);
  r = locked.handle(AdminRequest{"GET", "/admin/v1/allocations", "Bearer  ", ""});
  EXPECT_EQ(r.status, 401);
}

TEST_F(AdminApiTest, UnknownPathIs404BeforeAuthentication) {
  for (const std::string path :
       {"/", "/admin", "/admin/v1", "/admin/v2/allocations", "/admin/v1/things",
        "/admin/v1/allocations/a/b/c", "/admin/v1/allocations/x/explode", "/admin/v1/keys",
        "/admin/v1/events/evt_1", "/metrics/x"}) {
    Reply r = call("GET", path, "", "");
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.code(), "not_found") << path;
  }
}

TEST_F(AdminApiTest, WrongMethodIs405BeforeAuthentication) {
  const std::pair<std::string, std::string> cases[] = {{"PUT", "/admin/v1/agreements"},
                                                       {"DELETE", "/admin/v1/allocations"},
                                                       {"POST", "/admin/v1/allocations/alloc_1"},
                                                       {"PUT", "/admin/v1/allocations/a/keys"},
                                                       {"POST", "/admin/v1/keys/key_1"},
                                                       {"GET", "/admin/v1/requests/r/reconcile"},
                                                       {"POST", "/admin/v1/events"},
                                                       {"PUT", "/admin/v1/conflicts"},
                                                       {"POST", "/metrics"}};
  for (const auto& [method, path] : cases) {
    Reply r = call(method, path, "", "");
    EXPECT_EQ(r.status, 405) << method << " " << path;
    EXPECT_EQ(r.code(), "method_not_allowed");
  }
}

TEST_F(AdminApiTest, MetricsServedAsPrometheusTextWithToken) {
  Reply r = call("GET", "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.text, "cairva_up 1\n");
  EXPECT_EQ(r.content_type, metrics_content_type);
  EXPECT_EQ(call("GET", "/metrics", "", "").status, 401);
}

TEST_F(AdminApiTest, CreateAgreementAnswers201WithAgreementAllocationAndKey) {
  json::object b = create();
  const auto& agr = b.at("agreement").as_object();
  EXPECT_TRUE(agr.at("id").as_string().starts_with("agr_"));
  EXPECT_EQ(agr.at("object"), "agreement");
  EXPECT_EQ(agr.at("supplier"), "acme");
  EXPECT_EQ(agr.at("buyer"), "bob");
  EXPECT_EQ(agr.at("provider"), "openai");
  EXPECT_EQ(agr.at("models"), (json::array{"gpt-a", "gpt-b"}));
  EXPECT_EQ(agr.at("input_tokens"), 1000);
  EXPECT_EQ(agr.at("output_tokens"), 500);
  EXPECT_EQ(agr.at("starts_at"), "2026-12-01T00:00:00Z");
  EXPECT_EQ(agr.at("ends_at"), "2026-12-31T00:00:00Z");
  EXPECT_EQ(agr.at("requests_per_minute"), 60);
  EXPECT_EQ(agr.at("tokens_per_minute"), 10000);
  EXPECT_EQ(agr.at("max_concurrency"), 4);
  EXPECT_EQ(agr.at("state"), "in_force");
  const auto& alloc = b.at("allocation").as_object();
  EXPECT_TRUE(alloc.at("id").as_string().starts_with("alloc_"));
  EXPECT_EQ(alloc.at("agreement_id"), agr.at("id"));
  EXPECT_EQ(alloc.at("object"), "allocation");
  const auto& key = b.at("api_key").as_object();
  EXPECT_TRUE(key.at("id").as_string().starts_with("key_"));
  EXPECT_TRUE(key.at("secret").as_string().starts_with("cv_"));
}

TEST_F(AdminApiTest, CreateAgreementStartsNowWhenStartsAtOmitted) {
  clock_->set(t0 + 5 * micros_per_second);
  json::object body = agreement_body();
  body.erase("starts_at");
  body.erase("models");
  Reply r = call("POST", "/admin/v1/agreements", json::serialize(body));
  ASSERT_EQ(r.status, 201) << r.text;
  EXPECT_EQ(r.body.at("agreement").at("starts_at"), "2026-12-01T00:00:05Z");
  EXPECT_EQ(r.body.at("agreement").at("models"), json::array{});
}

TEST_F(AdminApiTest, CreateAgreementTakesAndShowsServiceTiers) {
  json::object body = agreement_body();
  body["service_tiers"] = json::array{"priority", "flex"};
  Reply r = call("POST", "/admin/v1/agreements", json::serialize(body));
  ASSERT_EQ(r.status, 201) << r.text;
  EXPECT_EQ(r.body.at("agreement").at("service_tiers"), (json::array{"priority", "flex"}));
  Reply none = call("POST", "/admin/v1/agreements", json::serialize(agreement_body()));
  ASSERT_EQ(none.status, 201) << none.text;
  EXPECT_EQ(none.body.at("agreement").at("service_tiers"), json::array{});
  for (const json::value& bad :
       {json::value("priority"), json::value(json::array{"a", 3}), json::value(json::array{""}),
        json::value(json::array{json::string("a\0b", 3)})}) {
    body["service_tiers"] = bad;
    expect_invalid(body, "service_tiers: must be an array");
  }
}

TEST_F(AdminApiTest, CreateAgreementAcceptsNumericOffsetTimes) {
  json::object body = agreement_body();
  body["ends_at"] = "2026-12-31T01:00:00+01:00";
  Reply r = call("POST", "/admin/v1/agreements", json::serialize(body));
  ASSERT_EQ(r.status, 201) << r.text;
  EXPECT_EQ(r.body.at("agreement").at("ends_at"), "2026-12-31T00:00:00Z");
}

TEST_F(AdminApiTest, CreateAgreementRefusesUnknownFieldsNamingThem) {
  json::object body = agreement_body();
  body["surprise"] = true;
  body["duration"] = "30d";
  expect_invalid(body, "unknown field(s): ");
  Reply r = call("POST", "/admin/v1/agreements", json::serialize(body));
  EXPECT_NE(r.message().find("surprise"), std::string::npos);
  EXPECT_NE(r.message().find("duration"), std::string::npos);
}

TEST_F(AdminApiTest, CreateAgreementRefusesMissingRequiredFields) {
  for (const char* field :
       {"supplier", "buyer", "provider", "input_tokens", "output_tokens", "ends_at",
        "requests_per_minute", "tokens_per_minute", "max_concurrency"}) {
    json::object body = agreement_body();
    body.erase(field);
    expect_invalid(body, std::string(field) + ": required");
  }
}

TEST_F(AdminApiTest, CreateAgreementRefusesNonPositiveOrIllTypedNumbers) {
  for (const char* field : {"input_tokens", "output_tokens", "requests_per_minute",
                            "tokens_per_minute", "max_concurrency"}) {
    for (const json::value& bad :
         {json::value(0), json::value(-1), json::value(1.5), json::value("many"),
          json::value(nullptr), json::value(true), json::value(18446744073709551615ull)}) {
      json::object body = agreement_body();
      body[field] = bad;
      expect_invalid(body, std::string(field) + ": must be an integer between 1 and");
    }
  }
}

TEST_F(AdminApiTest, CreateAgreementRefusesBadStrings) {
  for (const char* field : {"supplier", "buyer", "provider"}) {
    json::object body = agreement_body();
    body[field] = "";
    expect_invalid(body, std::string(field) + ": must be a non-empty string");
    body[field] = 7;
    expect_invalid(body, std::string(field) + ": must be a string, got an integer");
    body[field] = json::string("a\0b", 3);
    expect_invalid(body, std::string(field) + ": must not contain a NUL character");
  }
  json::object body = agreement_body();
  body["models"] = json::array{"a", 3};
  expect_invalid(body, "models: must be an array");
  body["models"] = "gpt-a";
  expect_invalid(body, "models: must be an array");
  body["models"] = json::array{json::string("a\0b", 3)};
  expect_invalid(body, "models: must be an array");
}

TEST_F(AdminApiTest, CreateAgreementRefusesBadTimesAndEmptyWindow) {
  json::object body = agreement_body();
  body["ends_at"] = "next tuesday";
  expect_invalid(body, "ends_at: must be an RFC 3339 time");
  body = agreement_body();
  body["starts_at"] = 12345;
  expect_invalid(body, "starts_at: must be an RFC 3339 time");
  body = agreement_body();
  body["ends_at"] = body["starts_at"];
  expect_invalid(body, "ends_at must be later than starts_at");
  body = agreement_body();
  body["starts_at"] = "2027-01-01T00:00:00Z";
  expect_invalid(body, "ends_at must be later than starts_at");
}

TEST_F(AdminApiTest, CreateAgreementRefusesUnconfiguredProvider) {
  json::object body = agreement_body();
  body["provider"] = "nope";
  expect_invalid(body, "provider nope is not configured");
}

TEST_F(AdminApiTest, CreateAgreementRefusesBodyThatIsNotAJsonObject) {
  for (const std::string body : {"", "[]", "{", "\"x\"", "{\"supplier\":\"a\",}"}) {
    Reply r = call("POST", "/admin/v1/agreements", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(r.code(), "invalid_request");
  }
}

TEST_F(AdminApiTest, ListsAndShowsAllocationsInTheStatusShape) {
  json::object created = create();
  const std::string id(created.at("allocation").at("id").as_string());
  Reply list = call("GET", "/admin/v1/allocations");
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.body.at("data").as_array().size(), 1u);
  EXPECT_EQ(list.body.at("data").at(0).at("id"), id.c_str());
  EXPECT_EQ(list.text.find("cv_"), std::string::npos) << "the secret is never shown again";
  Reply one = call("GET", "/admin/v1/allocations/" + id);
  ASSERT_EQ(one.status, 200);
  const auto& o = one.body.as_object();
  for (const char* k : {"object", "id", "agreement_id", "state", "window", "limits", "allowance",
                        "used", "held", "remaining", "current"}) {
    EXPECT_TRUE(o.contains(k)) << k;
  }
  EXPECT_EQ(o.at("limits").at("max_concurrency"), 4);
  EXPECT_EQ(o.at("remaining"), (json::object{{"input_tokens", 1000}, {"output_tokens", 500}}));
  Reply missing = call("GET", "/admin/v1/allocations/alloc_nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.code(), "not_found");
}

TEST_F(AdminApiTest, GetsAndCancelsAgreement) {
  json::object created = create();
  const std::string id(created.at("agreement").at("id").as_string());
  EXPECT_EQ(call("GET", "/admin/v1/agreements/" + id).body.at("state"), "in_force");
  Reply c = call("POST", "/admin/v1/agreements/" + id + "/cancel");
  ASSERT_EQ(c.status, 200);
  EXPECT_EQ(c.body.at("agreement").at("state"), "cancelled");
  EXPECT_EQ(call("POST", "/admin/v1/agreements/agr_nope/cancel").status, 404);
  EXPECT_EQ(call("POST", "/admin/v1/agreements/" + id + "/cancel", "{\"why\":1}").status, 400);
}

TEST_F(AdminApiTest, CreatesAndRevokesKeys) {
  json::object created = create();
  const std::string alloc(created.at("allocation").at("id").as_string());
  Reply k = call("POST", "/admin/v1/allocations/" + alloc + "/keys");
  ASSERT_EQ(k.status, 201);
  const std::string key_id(k.body.at("api_key").at("id").as_string());
  EXPECT_TRUE(k.body.at("api_key").at("secret").as_string().starts_with("cv_"));
  EXPECT_NE(k.body.at("api_key").at("secret"), created.at("api_key").at("secret"));
  Reply rv = call("DELETE", "/admin/v1/keys/" + key_id);
  ASSERT_EQ(rv.status, 200);
  EXPECT_EQ(
      rv.body,
      (json::object{{"api_key", {{"id", key_id}, {"allocation_id", alloc}, {"revoked", true}}}}));
  EXPECT_EQ(call("DELETE", "/admin/v1/keys/key_nope").status, 404);
  EXPECT_EQ(call("POST", "/admin/v1/allocations/alloc_nope/keys").status, 404);
}

TEST_F(AdminApiTest, SuspendsAndResumesAndRefusesSuspendingDepleted) {
  json::object created = create();
  const std::string alloc(created.at("allocation").at("id").as_string());
  Reply s = call("POST", "/admin/v1/allocations/" + alloc + "/suspend");
  ASSERT_EQ(s.status, 200);
  EXPECT_EQ(s.body.at("state"), "suspended");
  EXPECT_EQ(s.body.at("object"), "allocation");
  Reply r = call("POST", "/admin/v1/allocations/" + alloc + "/resume", "{}");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body.at("state"), "active");
  store_.set_depleted(alloc);
  Reply d = call("POST", "/admin/v1/allocations/" + alloc + "/suspend");
  EXPECT_EQ(d.status, 409);
  EXPECT_EQ(d.code(), "conflict");
}

TEST_F(AdminApiTest, ListsRequestsWithFilters) {
  add_request("req_a", core::RequestState::usage_pending, "alloc_1");
  add_request("req_b", core::RequestState::booked, "alloc_1");
  add_request("req_c", core::RequestState::usage_pending, "alloc_2");
  Reply all = call("GET", "/admin/v1/requests");
  ASSERT_EQ(all.status, 200);
  EXPECT_EQ(all.body.at("data").as_array().size(), 3u);
  Reply f = call("GET", "/admin/v1/requests?allocation_id=alloc_1&state=usage_pending&limit=5");
  ASSERT_EQ(f.status, 200);
  ASSERT_EQ(f.body.at("data").as_array().size(), 1u);
  const auto& r = f.body.at("data").at(0).as_object();
  EXPECT_EQ(r.at("id"), "req_a");
  EXPECT_EQ(r.at("state"), "usage_pending");
  EXPECT_EQ(r.at("hold"), (json::object{{"input_tokens", 10}, {"output_tokens", 20}}));
  EXPECT_EQ(r.at("finished_at"), nullptr);
  EXPECT_EQ(r.at("provider_request_id"), nullptr);
  EXPECT_EQ(store_.last_request_filter.limit, 5u);
  EXPECT_EQ(
      call("GET", "/admin/v1/requests?allocation_id=&state=").body.at("data").as_array().size(),
      3u);
  EXPECT_EQ(call("GET", "/admin/v1/requests/req_b").body.at("state"), "booked");
  EXPECT_EQ(call("GET", "/admin/v1/requests/req_nope").status, 404);
}

TEST_F(AdminApiTest, ListsAllocationsFilteredByStateSupplierAndBuyer) {
  Reply f =
      call("GET", "/admin/v1/allocations?state=suspended&supplier=Acme%20Corp&buyer=b%26c&limit=7");
  ASSERT_EQ(f.status, 200) << f.text;
  const store::AllocationFilter& asked = store_.last_allocation_filter;
  EXPECT_EQ(asked.state, core::AllocationState::suspended);
  EXPECT_EQ(asked.supplier, "Acme Corp");
  EXPECT_EQ(asked.buyer, "b&c");
  EXPECT_EQ(asked.limit, 7u);
  ASSERT_EQ(call("GET", "/admin/v1/allocations?state=&supplier=").status, 200);
  EXPECT_FALSE(store_.last_allocation_filter.state) << "an empty filter is no filter";
  EXPECT_FALSE(store_.last_allocation_filter.supplier);
  Reply bad = call("GET", "/admin/v1/allocations?state=sleeping");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(
      bad.text.find("state: must be ready, active, suspended, depleted, expired or cancelled"),
      std::string::npos)
      << bad.text;
  EXPECT_EQ(call("GET", "/admin/v1/allocations?provider=x").status, 400) << "an unknown filter";
}

TEST_F(AdminApiTest, RefusesBadQueryParameters) {
  for (const std::string q :
       {"/admin/v1/requests?state=done", "/admin/v1/requests?allocation=a",
        "/admin/v1/requests?limit=0", "/admin/v1/events?limit=1001", "/admin/v1/events?limit=x",
        "/admin/v1/events?state=booked", "/admin/v1/conflicts?state=x"}) {
    Reply r = call("GET", q);
    EXPECT_EQ(r.status, 400) << q;
    EXPECT_EQ(r.code(), "invalid_request") << q;
  }
}

TEST_F(AdminApiTest, ReconcileChecksBodyThenExistenceThenState) {
  add_request("req_p", core::RequestState::usage_pending);
  add_request("req_b", core::RequestState::booked);
  const std::string good = R"({"input_tokens":12,"output_tokens":9,"evidence":"dashboard export"})";
  for (const std::string bad : {R"({"input_tokens":1,"output_tokens":2})",
                                R"({"input_tokens":-1,"output_tokens":2,"evidence":"x"})",
                                R"({"input_tokens":1,"output_tokens":2.5,"evidence":"x"})",
                                R"({"input_tokens":1,"output_tokens":2,"evidence":""})",
                                R"({"input_tokens":1,"output_tokens":2,"evidence":"x","extra":1})",
                                R"({"input_tokens":"1","output_tokens":2,"evidence":"x"})", ""}) {
    for (const std::string id : {"req_p", "req_nope", "req_b"}) {
      Reply r = call("POST", "/admin/v1/requests/" + id + "/reconcile", bad);
      EXPECT_EQ(r.status, 400) << id << " " << bad;
      EXPECT_EQ(r.code(), "invalid_request");
    }
  }
  Reply nf = call("POST", "/admin/v1/requests/req_nope/reconcile", good);
  EXPECT_EQ(nf.status, 404);
  EXPECT_EQ(nf.code(), "not_found");
  Reply np = call("POST", "/admin/v1/requests/req_b/reconcile", good);
  EXPECT_EQ(np.status, 409);
  EXPECT_EQ(np.code(), "not_pending");
  Reply ok = call("POST", "/admin/v1/requests/req_p/reconcile", good);
  ASSERT_EQ(ok.status, 200) << ok.text;
  const auto& e = ok.body.at("event").as_object();
  EXPECT_TRUE(e.at("id").as_string().starts_with("evt_"));
  EXPECT_EQ(e.at("request_id"), "req_p");
  EXPECT_EQ(e.at("input_tokens"), 12);
  EXPECT_EQ(e.at("output_tokens"), 9);
  EXPECT_EQ(e.at("source"), "reconciliation");
  EXPECT_EQ(e.at("finality"), "confirmed");
  EXPECT_EQ(e.at("evidence"), "dashboard export");
  EXPECT_EQ(call("POST", "/admin/v1/requests/req_p/reconcile", good).code(), "not_pending");
  Reply zero = call("POST", "/admin/v1/requests/req_nope/reconcile",
                    R"({"input_tokens":0,"output_tokens":0,"evidence":"x"})");
  EXPECT_EQ(zero.status, 404) << "zero counts are valid";
}

TEST_F(AdminApiTest, ReconcileCanBookTheCountsKeptOnTheRequest) {
  store::RequestRow kept = add_request("req_k", core::RequestState::usage_pending);
  kept.reported_usage = core::ReportedUsage{{30, 40}, "chatcmpl-k"};
  store_.add_request(kept);
  add_request("req_n", core::RequestState::usage_pending);
  Reply listed = call("GET", "/admin/v1/requests?state=usage_pending");
  ASSERT_EQ(listed.status, 200) << listed.text;
  for (const auto& row : listed.body.at("data").as_array()) {
    const auto& o = row.as_object();
    if (o.at("id") == "req_k") {
      EXPECT_EQ(
          o.at("reported_usage"),
          boost::json::parse(
              R"({"input_tokens":30,"output_tokens":40,"provider_request_id":"chatcmpl-k"})"));
    } else {
      EXPECT_TRUE(o.at("reported_usage").is_null());
    }
  }
  for (const std::string bad :
       {R"({"use_reported":true,"input_tokens":1,"output_tokens":2,"evidence":"x"})",
        R"({"use_reported":"yes","evidence":"x"})", R"({"use_reported":true})",
        R"({"use_reported":false,"evidence":"x"})"}) {
    Reply r = call("POST", "/admin/v1/requests/req_k/reconcile", bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(r.code(), "invalid_request") << bad;
  }
  EXPECT_EQ(
      call("POST", "/admin/v1/requests/req_n/reconcile", R"({"use_reported":true,"evidence":"x"})")
          .status,
      400);
  Reply ok = call("POST", "/admin/v1/requests/req_k/reconcile",
                  R"({"use_reported":true,"evidence":"gateway's report"})");
  ASSERT_EQ(ok.status, 200) << ok.text;
  EXPECT_EQ(ok.body.at("event").at("input_tokens"), 30);
  EXPECT_EQ(ok.body.at("event").at("output_tokens"), 40);
}

TEST_F(AdminApiTest, ListsEventsAfterAnExclusiveId) {
  for (const char* id : {"req_1", "req_2", "req_3"}) {
    add_request(id, core::RequestState::usage_pending);
    ASSERT_EQ(call("POST", std::string("/admin/v1/requests/") + id + "/reconcile",
                   R"({"input_tokens":1,"output_tokens":1,"evidence":"e"})")
                  .status,
              200);
  }
  Reply all = call("GET", "/admin/v1/events?allocation_id=alloc_1");
  ASSERT_EQ(all.status, 200);
  const auto& data = all.body.at("data").as_array();
  ASSERT_EQ(data.size(), 3u);
  const std::string first(data.at(0).at("id").as_string());
  Reply rest = call("GET", "/admin/v1/events?allocation_id=alloc_1&after=" + first + "&limit=1");
  ASSERT_EQ(rest.body.at("data").as_array().size(), 1u);
  EXPECT_EQ(rest.body.at("data").at(0).at("id"), data.at(1).at("id"));
  EXPECT_EQ(store_.last_event_filter.after, first);
  EXPECT_EQ(store_.last_event_filter.limit, 1u);
}

TEST_F(AdminApiTest, ListsConflictsByAllocation) {
  store_.add_conflict(
      store::ConflictRow{"cfl_1", "alloc_1", "req_1", "chatcmpl-1", {99, 99}, {10, 5}, t0});
  store_.add_conflict(
      store::ConflictRow{"cfl_2", "alloc_2", "req_2", "chatcmpl-2", {1, 1}, {2, 2}, t0});
  Reply r = call("GET", "/admin/v1/conflicts?allocation_id=alloc_1");
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(r.body.at("data").as_array().size(), 1u);
  const auto& c = r.body.at("data").at(0).as_object();
  EXPECT_EQ(c.at("provider_request_id"), "chatcmpl-1");
  EXPECT_EQ(c.at("reported"), (json::object{{"input_tokens", 99}, {"output_tokens", 99}}));
  EXPECT_EQ(c.at("booked"), (json::object{{"input_tokens", 10}, {"output_tokens", 5}}));
  EXPECT_EQ(call("GET", "/admin/v1/conflicts").body.at("data").as_array().size(), 2u);
}

TEST_F(AdminApiTest, StoreDownIs503StoreUnavailable) {
  store_.fail_everything = true;
  Reply r = call("GET", "/admin/v1/allocations");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.code(), "store_unavailable");
  EXPECT_EQ(call("POST", "/admin/v1/agreements", json::serialize(agreement_body())).status, 503);
}

TEST_F(AdminApiTest, BackupOfAStoreThatCannotCopyItselfNamesPgDump) {
  auto r = call("POST", "/admin/v1/backup", R"({"path":"/tmp/x.db"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.code(), "invalid_request");
  EXPECT_NE(r.message().find("pg_dump"), std::string::npos) << r.text;
  EXPECT_EQ(call("GET", "/admin/v1/backup").status, 405);
  EXPECT_EQ(call("POST", "/admin/v1/backup", R"({"path":"/tmp/x.db"})", "Bearer nope").status, 401);
}

TEST_F(AdminApiTest, BackupBodyIsCheckedFirst) {
  for (const char* body : {"", "{}", R"({"path":7})", R"({"path":"/x","mode":"fast"})", "[]"}) {
    auto r = call("POST", "/admin/v1/backup", body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(r.code(), "invalid_request") << body;
    EXPECT_EQ(r.message().find("pg_dump"), std::string::npos) << body << ": " << r.text;
  }
}

// ---------------------------------------------------------------- SPEC-CONSOLE routes

TEST_F(AdminApiTest, TheNewListsAnswerPagesBesideTheirCreationRoutes) {
  auto created = create();
  const std::string alloc = std::string(created.at("allocation").at("id").as_string());
  Reply agreements = call("GET", "/admin/v1/agreements?limit=5");
  ASSERT_EQ(agreements.status, 200) << agreements.text;
  EXPECT_EQ(agreements.body.at("object"), "list");
  EXPECT_EQ(agreements.body.at("has_more"), false);
  EXPECT_EQ(agreements.body.at("data").as_array().size(), 1u);
  Reply keys = call("GET", "/admin/v1/allocations/" + alloc + "/keys");
  ASSERT_EQ(keys.status, 200) << keys.text;
  const auto& key = keys.body.at("data").at(0).as_object();
  EXPECT_EQ(key.at("object"), "api_key");
  EXPECT_FALSE(key.contains("secret"));
  EXPECT_TRUE(key.contains("created_at"));
  EXPECT_EQ(call("POST", "/admin/v1/allocations/" + alloc + "/keys").status, 201)
      << "POST still creates";
  EXPECT_EQ(call("GET", "/admin/v1/allocations/alloc_nope/keys").status, 404);
  EXPECT_EQ(call("GET", "/admin/v1/agreements?limit=0").status, 400);
  EXPECT_EQ(call("GET", "/admin/v1/agreements?state=x").status, 400);
  EXPECT_EQ(call("GET", "/admin/v1/agreements", "", "Bearer wrong").status, 401);
}

TEST_F(AdminApiTest, ListsPassPageAndTimeFiltersToTheStore) {
  Reply r = call("GET",
                 "/admin/v1/requests?allocation_id=a&state=failed&from=2026-12-01T00:00:00Z"
                 "&to=2026-12-02T00:00:00Z&after=req_1&limit=7");
  ASSERT_EQ(r.status, 200) << r.text;
  const auto& f = store_.last_request_filter;
  EXPECT_EQ(f.allocation_id, "a");
  EXPECT_EQ(f.after, "req_1");
  EXPECT_EQ(f.limit, 7u);
  EXPECT_EQ(f.from, t0);
  EXPECT_EQ(f.to, t0 + 86'400 * micros_per_second);
  EXPECT_EQ(call("GET", "/admin/v1/events?from=yesterday").status, 400);
  EXPECT_EQ(call("GET", "/admin/v1/events?allocation_id=a&to=2026-12-02T00:00:00Z").status, 200);
  EXPECT_EQ(store_.last_event_filter.to, t0 + 86'400 * micros_per_second);
}

TEST_F(AdminApiTest, UsageSeriesReadsBucketFromAndToAlignedToUtc) {
  auto created = create();
  const std::string alloc = std::string(created.at("allocation").at("id").as_string());
  const std::string base = "/admin/v1/allocations/" + alloc + "/usage";
  clock_->set(t0 + int64_t{90} * 60 * micros_per_second + 5);  // 01:30:00.000005
  Reply r = call("GET", base);
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body.at("object"), "usage_series");
  EXPECT_EQ(r.body.at("bucket"), "hour");
  const auto& q = store_.last_usage_query;
  EXPECT_EQ(q.bucket_us, 3600 * micros_per_second);
  EXPECT_EQ(q.to, clock_->now());
  EXPECT_EQ(q.from, t0 + 3600 * micros_per_second - int64_t{23} * 3600 * micros_per_second)
      << "24 buckets, the last holding now";
  EXPECT_EQ(r.body.at("data").as_array().size(), 24u);
  ASSERT_EQ(
      call("GET", base + "?bucket=minute&from=2026-12-01T00:00:30Z&to=2026-12-01T00:10:00Z").status,
      200);
  EXPECT_EQ(store_.last_usage_query.from, t0) << "from aligned down to its minute";
  EXPECT_EQ(store_.last_usage_query.bucket_us, 60 * micros_per_second);
  for (const std::string bad :
       {"?bucket=week", "?from=x",
        "?bucket=minute&from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z",
        "?from=2026-12-02T00:00:00Z&to=2026-12-01T00:00:00Z", "?unknown=1"}) {
    Reply b = call("GET", base + bad);
    EXPECT_EQ(b.status, 400) << bad;
    EXPECT_EQ(b.code(), "invalid_request") << bad;
  }
  EXPECT_EQ(call("GET", "/admin/v1/allocations/alloc_nope/usage").status, 404);
  EXPECT_EQ(call("POST", base).status, 405);
}

TEST_F(AdminApiTest, ReconciliationsReadEveryItemBeforeAnything) {
  add_request("req_p", core::RequestState::usage_pending);
  const auto post = [&](const std::string& body) {
    return call("POST", "/admin/v1/reconciliations", body);
  };
  Reply bad = post(
      R"({"evidence":"e","items":[{"request_id":"req_p","input_tokens":1,"output_tokens":1},)"
      R"({"request_id":"req_p","provider_request_id":"p","input_tokens":1,"output_tokens":1}]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(
      bad.message().rfind("items[1]: give exactly one of request_id and provider_request_id", 0),
      0u)
      << bad.message();
  EXPECT_EQ(store_.get_request("req_p")->state, core::RequestState::usage_pending);
  for (
      const std::string body :
      {R"({"items":[]})", R"({"evidence":"e"})", R"({"evidence":"e","items":{}})",
       R"({"evidence":"e","items":[7]})",
       R"({"evidence":"e","items":[{"request_id":"r","input_tokens":-1,"output_tokens":1}]})",
       R"({"evidence":"e","items":[{"request_id":"r","input_tokens":1}]})",
       R"({"evidence":"e","items":[{"request_id":"r","input_tokens":1,"output_tokens":1,"extra":1}]})",
       R"({"evidence":"e","surprise":1,"items":[]})"}) {
    Reply r = post(body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(r.code(), "invalid_request") << body;
  }
  std::string many = R"({"evidence":"e","items":[)";
  for (int i = 0; i <= 10000; ++i)
    many += std::string(i ? "," : "") + R"({"request_id":"r","input_tokens":1,"output_tokens":1})";
  Reply too_many = post(many + "]}");
  EXPECT_EQ(too_many.status, 400);
  EXPECT_NE(too_many.message().find("at most 10000"), std::string::npos) << too_many.message();
  Reply ok = post(
      R"({"evidence":"export","items":[{"request_id":"req_p","input_tokens":3,"output_tokens":4},)"
      R"({"request_id":"req_nope","input_tokens":1,"output_tokens":1}]})");
  ASSERT_EQ(ok.status, 200) << ok.text;
  EXPECT_EQ(ok.body.at("results").at(0).at("outcome"), "booked");
  EXPECT_EQ(ok.body.at("results").at(0).at("event").at("source"), "reconciliation");
  EXPECT_EQ(ok.body.at("results").at(1).at("outcome"), "not_found");
  EXPECT_EQ(ok.body.at("summary").at("booked"), 1);
  EXPECT_EQ(ok.body.at("summary").at("not_found"), 1);
  EXPECT_EQ(ok.body.at("summary").at("conflict"), 0);
}

TEST_F(AdminApiTest, AdjustChecksItsBodyAndAnswers201WithTheAdjustment) {
  add_request("req_p", core::RequestState::usage_pending);
  Reply rec = call("POST", "/admin/v1/requests/req_p/reconcile",
                   R"({"input_tokens":5,"output_tokens":6,"evidence":"e"})");
  ASSERT_EQ(rec.status, 200) << rec.text;
  const std::string evt = std::string(rec.body.at("event").at("id").as_string());
  const std::string path = "/admin/v1/events/" + evt + "/adjust";
  EXPECT_EQ(call("POST", path, R"({"input_tokens":-1})").status, 400) << "evidence is required";
  EXPECT_EQ(call("POST", path, R"({"evidence":"x"})").status, 400) << "a count is required";
  EXPECT_EQ(call("POST", path, R"({"evidence":"x","input_tokens":1.5})").status, 400);
  EXPECT_EQ(call("GET", path).status, 405);
  Reply r = call("POST", path, R"({"input_tokens":-2,"output_tokens":3,"evidence":"credit note"})");
  ASSERT_EQ(r.status, 201) << r.text;
  const auto& e = r.body.at("event");
  EXPECT_EQ(e.at("source"), "adjustment");
  EXPECT_EQ(e.at("finality"), "confirmed");
  EXPECT_EQ(e.at("corrects").as_string(), evt);
  EXPECT_TRUE(rec.body.at("event").at("corrects").is_null())
      << "every event has the field; null but for an adjustment";
  EXPECT_EQ(e.at("input_tokens"), -2);
  EXPECT_EQ(e.at("evidence"), "credit note");
  EXPECT_EQ(call("POST", "/admin/v1/events/evt_nope/adjust", R"({"input_tokens":1,"evidence":"x"})")
                .status,
            404);
}

TEST_F(AdminApiTest, ReconcileForwardsForce) {
  add_request("req_p", core::RequestState::usage_pending);
  EXPECT_EQ(call("POST", "/admin/v1/requests/req_p/reconcile",
                 R"({"input_tokens":5,"output_tokens":6,"evidence":"e","force":"yes"})")
                .status,
            400);
  EXPECT_EQ(call("POST", "/admin/v1/requests/req_p/reconcile",
                 R"({"input_tokens":5,"output_tokens":6,"evidence":"e","force":true})")
                .status,
            200);
}

}  // namespace
}  // namespace cairva::admin
