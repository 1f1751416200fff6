#include "cli/cli.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <cstdlib>
#include <fstream>

#include "base/test_env.h"
#include "cli/admin_commands.h"
#include "cli/console_formats.h"
#include "cli/printable.h"

namespace cairva::cli {
namespace {

namespace json = boost::json;

struct Outcome {
  int code = -1;
  std::string out, err;
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test_env::set(admin_token_env, "tok");
    test_env::unset(admin_url_env);
    hooks_.admin_http = [this](const std::string& url, const std::string& token,
                               const HttpCall& call) {
      calls_.push_back(call);
      urls_.push_back(url);
      tokens_.push_back(token);
      return Result<HttpReply>(reply_);
    };
  }

  Outcome run_cli(std::vector<std::string> args) {
    args.insert(args.begin(), "cairva");
    std::vector<char*> argv;
    argv.reserve(args.size());
    for (auto& a : args) argv.push_back(a.data());
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    Outcome o;
    o.code = run(static_cast<int>(argv.size()), argv.data(), hooks_);
    o.out = ::testing::internal::GetCapturedStdout();
    o.err = ::testing::internal::GetCapturedStderr();
    return o;
  }

  Hooks hooks_;
  HttpReply reply_{200, "{}"};
  std::vector<HttpCall> calls_;
  std::vector<std::string> urls_, tokens_;
};

TEST(Duration, ParsesEachUnitAndRefusesTheRest) {
  EXPECT_EQ(parse_duration_s("30d"), 30 * 86400);
  EXPECT_EQ(parse_duration_s("12h"), 12 * 3600);
  EXPECT_EQ(parse_duration_s("90m"), 90 * 60);
  EXPECT_EQ(parse_duration_s("45s"), 45);
  for (const char* bad : {"", "d", "30", "0d", "-1d", "1.5h", "3w", "1d2h", "99999999999d"}) {
    EXPECT_EQ(parse_duration_s(bad), std::nullopt) << bad;
  }
}

TEST(AgreementBody, DurationCountsFromStartsAtOrNow) {
  AgreementArgs a;
  a.supplier = "s";
  a.duration = "1d";
  const UnixMicros now = 1'796'083'200 * micros_per_second;  // 2026-12-01T00:00:00Z
  auto body = agreement_body(a, now);
  ASSERT_TRUE(body.ok());
  json::value v = json::parse(*body);
  EXPECT_EQ(v.at("ends_at"), "2026-12-02T00:00:00Z");
  EXPECT_FALSE(v.as_object().contains("starts_at")) << "the server's now is the default";
  EXPECT_FALSE(v.as_object().contains("models")) << "no allow-list: any model";
  v = json::parse(*agreement_body(a, now + 1));
  EXPECT_EQ(v.at("ends_at"), "2026-12-02T00:00:01Z") << "rounded up to a whole second";
  a.starts_at = "2026-12-10T00:00:00Z";
  v = json::parse(*agreement_body(a, now));
  EXPECT_EQ(v.at("starts_at"), "2026-12-10T00:00:00Z");
  EXPECT_EQ(v.at("ends_at"), "2026-12-11T00:00:00Z");
}

TEST(AgreementBody, NeedsExactlyOneOfEndsAtAndDuration) {
  AgreementArgs a;
  EXPECT_FALSE(agreement_body(a, 0).ok());
  a.ends_at = "2026-12-02T00:00:00Z";
  a.duration = "1d";
  EXPECT_FALSE(agreement_body(a, 0).ok());
  a.ends_at.clear();
  a.duration = "soon";
  auto r = agreement_body(a, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--duration"), std::string::npos);
}

TEST_F(CliTest, AgreementCreatePostsTheBodyAndPrintsTheSecretOnce) {
  reply_ = {201, R"({"agreement":{"id":"agr_1","state":"in_force","models":["a","b"]},
                    "allocation":{"id":"alloc_1","state":"active"},
                    "api_key":{"id":"key_1","secret":"cv_SECRET"}})"};
  Outcome o = run_cli({"agreement",       "create", "--supplier",     "acme",
                       "--buyer",         "bob",    "--provider",     "openai",
                       "--models",        "a,b",    "--input-tokens", "100",
                       "--output-tokens", "50",     "--ends-at",      "2027-01-01T00:00:00Z",
                       "--rpm",           "60",     "--tpm",          "1000",
                       "--concurrency",   "4"});
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].method, "POST");
  EXPECT_EQ(calls_[0].target, "/admin/v1/agreements");
  EXPECT_EQ(json::parse(calls_[0].body),
            json::parse(R"({"supplier":"acme","buyer":"bob","provider":"openai","models":["a","b"],
                            "input_tokens":100,"output_tokens":50,"ends_at":"2027-01-01T00:00:00Z",
                            "requests_per_minute":60,"tokens_per_minute":1000,"max_concurrency":4})"));
  EXPECT_EQ(urls_[0], admin_url_default);
  EXPECT_EQ(tokens_[0], "tok");
  EXPECT_NE(o.out.find("cv_SECRET"), std::string::npos);
  EXPECT_NE(o.out.find("agr_1"), std::string::npos);
  EXPECT_NE(o.out.find("alloc_1"), std::string::npos);
}

TEST_F(CliTest, AgreementCreateSendsServiceTiersRepeatedOrCommaSeparated) {
  reply_ = {201,
            R"({"agreement":{"id":"agr_1","state":"in_force","service_tiers":["priority","flex"]},
                    "allocation":{"id":"alloc_1","state":"active"},
                    "api_key":{"id":"key_1","secret":"cv_SECRET"}})"};
  const std::vector<std::string> base = {"agreement",       "create",
                                         "--supplier",      "acme",
                                         "--buyer",         "bob",
                                         "--provider",      "openai",
                                         "--input-tokens",  "100",
                                         "--output-tokens", "50",
                                         "--ends-at",       "2027-01-01T00:00:00Z",
                                         "--rpm",           "60",
                                         "--tpm",           "1000",
                                         "--concurrency",   "4"};
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--service-tier", "priority", "--service-tier", "flex"},
        std::vector<std::string>{"--service-tier", "priority,flex"}}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    calls_.clear();
    Outcome o = run_cli(args);
    ASSERT_EQ(o.code, 0) << o.err;
    ASSERT_EQ(calls_.size(), 1u);
    EXPECT_EQ(json::parse(calls_[0].body).at("service_tiers"),
              json::parse(R"(["priority","flex"])"))
        << extra[1];
  }
  calls_.clear();
  ASSERT_EQ(run_cli(base).code, 0);
  EXPECT_FALSE(json::parse(calls_[0].body).as_object().contains("service_tiers"))
      << "none beyond auto/default";
}

TEST_F(CliTest, JsonFlagPrintsTheRawAnswer) {
  reply_ = {200, R"({"object":"list","data":[]})"};
  Outcome o = run_cli({"allocation", "list", "--json"});
  EXPECT_EQ(o.code, 0);
  // Every page merged into one list.
  EXPECT_EQ(o.out, "{\"object\":\"list\",\"data\":[],\"has_more\":false}\n");
}

TEST_F(CliTest, AdminUrlComesFromFlagThenEnv) {
  test_env::set(admin_url_env, "http://10.0.0.1:9999");
  reply_ = {200, R"({"data":[]})"};
  EXPECT_EQ(run_cli({"allocation", "list"}).code, 0);
  EXPECT_EQ(run_cli({"allocation", "list", "--admin-url", "http://h:1"}).code, 0);
  ASSERT_EQ(urls_.size(), 2u);
  EXPECT_EQ(urls_[0], "http://10.0.0.1:9999");
  EXPECT_EQ(urls_[1], "http://h:1");
}

TEST_F(CliTest, ApiErrorExitsNonZeroWithItsMessage) {
  reply_ = {
      409,
      R"({"error":{"type":"not_pending","code":"not_pending","message":"request req_1 is booked"}})"};
  Outcome o =
      run_cli({"reconcile", "req_1", "--input", "3", "--output", "4", "--evidence", "export"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "cairva: 409 not_pending: request req_1 is booked\n");
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].target, "/admin/v1/requests/req_1/reconcile");
  EXPECT_EQ(json::parse(calls_[0].body),
            json::parse(R"({"input_tokens":3,"output_tokens":4,"evidence":"export"})"));
}

TEST_F(CliTest, ReconcileReportedBooksTheKeptCountsInOneCommand) {
  reply_ = {200,
            R"({"event":{"id":"evt_1","request_id":"req_1","input_tokens":3,"output_tokens":4}})"};
  Outcome o = run_cli({"reconcile", "req_1", "--reported", "--evidence", "kept by the gateway"});
  EXPECT_EQ(o.code, 0) << o.err;
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].target, "/admin/v1/requests/req_1/reconcile");
  EXPECT_EQ(json::parse(calls_[0].body),
            json::parse(R"({"use_reported":true,"evidence":"kept by the gateway"})"));
  // Counts and --reported exclude each other; one of them is needed.
  EXPECT_NE(run_cli({"reconcile", "req_1", "--reported", "--input", "1", "--output", "1",
                     "--evidence", "e"})
                .code,
            0);
  EXPECT_NE(run_cli({"reconcile", "req_1", "--evidence", "e"}).code, 0);
  EXPECT_EQ(calls_.size(), 1u);
}

TEST_F(CliTest, BackupPostsAnAbsolutePathWithItsOwnTimeoutAndPrintsTheCopy) {
  reply_ = {200,
            R"({"backup":{"object":"backup","path":"/srv/b/copy.db","bytes":4096,"allocations":2,
                    "requests":7,"usage_events":5,"started_at":"2026-12-01T00:00:00Z",
                    "finished_at":"2026-12-01T00:00:01Z"}})"};
  Outcome o = run_cli({"backup", "--to", "/srv/b/copy.db"});
  ASSERT_EQ(o.code, 0) << o.err;
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].method, "POST");
  EXPECT_EQ(calls_[0].target, "/admin/v1/backup");
  EXPECT_EQ(json::parse(calls_[0].body), json::parse(R"({"path":"/srv/b/copy.db"})"));
  EXPECT_EQ(calls_[0].timeout_s, backup_call_timeout_s);
  EXPECT_NE(o.out.find("/srv/b/copy.db"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("usage events: 5"), std::string::npos) << o.out;

  // A relative path is the operator's working directory's, not the gateway's.
  char cwd[4096];
  ASSERT_NE(::getcwd(cwd, sizeof cwd), nullptr);
  ASSERT_EQ(run_cli({"backup", "--to", "rel.db", "--admin-timeout", "7"}).code, 0);
  EXPECT_EQ(json::parse(calls_[1].body).at("path").as_string(), std::string(cwd) + "/rel.db");
  EXPECT_EQ(calls_[1].timeout_s, 7);
  EXPECT_NE(run_cli({"backup"}).code, 0);  // --to is required
  EXPECT_EQ(calls_.size(), 2u);
}

TEST_F(CliTest, BadUsageExitsTwoLikeABadConfigAndHelpExitsZero) {
  EXPECT_EQ(run_cli({"serve", "--no-such-flag"}).code, 2);
  EXPECT_EQ(run_cli({"no-such-command"}).code, 2);
  EXPECT_EQ(run_cli({}).code, 2);
  EXPECT_EQ(run_cli({"serve", "--config", "/nonexistent/cairva.toml"}).code, 2);
  EXPECT_EQ(run_cli({"--help"}).code, 0);
  EXPECT_EQ(run_cli({"backup", "--help"}).code, 0);
  EXPECT_TRUE(calls_.empty());
}

TEST_F(CliTest, MissingAdminTokenIsRefusedBeforeAnyCall) {
  test_env::unset(admin_token_env);
  Outcome o = run_cli({"allocation", "list"});
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("CAIRVA_ADMIN_TOKEN"), std::string::npos);
  EXPECT_TRUE(calls_.empty());
}

TEST_F(CliTest, EachAdminCommandCallsItsRoute) {
  reply_ = {200, R"({"data":[]})"};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"allocation", "show", "alloc_1"}, "GET /admin/v1/allocations/alloc_1"},
      {{"allocation", "suspend", "alloc_1"}, "POST /admin/v1/allocations/alloc_1/suspend"},
      {{"allocation", "resume", "alloc_1"}, "POST /admin/v1/allocations/alloc_1/resume"},
      {{"agreement", "cancel", "agr_1"}, "POST /admin/v1/agreements/agr_1/cancel"},
      {{"agreement", "show", "agr_1"}, "GET /admin/v1/agreements/agr_1"},
      {{"key", "create", "alloc_1"}, "POST /admin/v1/allocations/alloc_1/keys"},
      {{"key", "revoke", "key_1"}, "DELETE /admin/v1/keys/key_1"},
      {{"requests", "pending"}, "GET /admin/v1/requests?state=usage_pending&limit=1000"},
      {{"requests", "pending", "--allocation", "alloc_1"},
       "GET /admin/v1/requests?allocation_id=alloc_1&state=usage_pending&limit=1000"},
      {{"requests", "list", "--state", "failed", "--limit", "5"},
       "GET /admin/v1/requests?state=failed&limit=5"},
      {{"events", "--allocation", "alloc_1", "--after", "evt_9"},
       "GET /admin/v1/events?allocation_id=alloc_1&after=evt_9&limit=1000"},
      {{"conflicts"}, "GET /admin/v1/conflicts?limit=1000"},
      {{"agreement", "list"}, "GET /admin/v1/agreements?limit=1000"},
      {{"allocation", "list", "--state", "suspended", "--supplier", "Acme Corp", "--buyer", "b&c"},
       "GET /admin/v1/allocations?state=suspended&supplier=Acme%20Corp&buyer=b%26c&limit=1000"},
      {{"key", "list", "alloc_1"}, "GET /admin/v1/allocations/alloc_1/keys?limit=1000"},
      {{"adjust", "evt_1", "--input", "-5", "--evidence", "credit"},
       "POST /admin/v1/events/evt_1/adjust"},
  };
  for (const auto& [args, want] : cases) {
    calls_.clear();
    // Renderers must cope with any shape the fake answers: the exit code is what matters.
    Outcome o = run_cli(args);
    EXPECT_EQ(o.code, 0) << want << ": " << o.err;
    ASSERT_EQ(calls_.size(), 1u) << want;
    EXPECT_EQ(calls_[0].method + " " + calls_[0].target, want);
  }
}

TEST_F(CliTest, UsageErrorsExitNonZeroWithoutCalling) {
  EXPECT_NE(run_cli({}).code, 0);
  EXPECT_NE(run_cli({"allocation"}).code, 0);
  EXPECT_NE(
      run_cli({"reconcile", "req_1", "--input", "x", "--output", "1", "--evidence", "e"}).code, 0);
  EXPECT_NE(run_cli({"agreement", "create", "--supplier", "s"}).code, 0);
  EXPECT_TRUE(calls_.empty());
}

TEST_F(CliTest, ServeAppliesOverridesToTheConfig) {
  config::Config seen;
  hooks_.serve = [&](const config::Config& c) {
    seen = c;
    return 7;
  };
  Outcome o = run_cli({"serve", "--listen", "0.0.0.0:1", "--admin-listen", "127.0.0.1:2", "--store",
                       "postgresql://db/x"});
  EXPECT_EQ(o.code, 7);
  EXPECT_EQ(seen.source, "(defaults)");
  EXPECT_EQ(seen.listen, "0.0.0.0:1");
  EXPECT_EQ(seen.admin_listen, "127.0.0.1:2");
  EXPECT_EQ(seen.store_url, "postgresql://db/x");
}

TEST_F(CliTest, ServeWithoutConfigUsesDefaults) {
  config::Config seen;
  hooks_.serve = [&](const config::Config& c) {
    seen = c;
    return 0;
  };
  EXPECT_EQ(run_cli({"serve"}).code, 0);
  EXPECT_EQ(seen.store_url, "sqlite://cairva.db");
  EXPECT_EQ(seen.listen, config::listen_default);
}

TEST_F(CliTest, ServeRefusesBadConfigWithOneLine) {
  bool called = false;
  hooks_.serve = [&](const config::Config&) {
    called = true;
    return 0;
  };
  const std::string path = ::testing::TempDir() + "cairva-cli-test.toml";
  std::ofstream(path) << "[store]\nsync = \"sometimes\"\n";
  Outcome o = run_cli({"serve", "--config", path});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, path + ": store.sync: expected \"normal\" or \"full\", got \"sometimes\"\n");
  Outcome bad_listen = run_cli({"serve", "--listen", "8080"});
  EXPECT_EQ(bad_listen.code, 2);
  EXPECT_NE(bad_listen.err.find("--listen"), std::string::npos);
  EXPECT_EQ(run_cli({"serve", "--store", "mysql://x"}).code, 2);
  EXPECT_FALSE(called);
}

TEST_F(CliTest, MissingHookSaysNotBuilt) {
  Outcome o = run_cli({"mock-provider"});
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("not built"), std::string::npos);
}

TEST_F(CliTest, MockProviderGetsItsListenAddress) {
  std::string seen;
  hooks_.mock_provider = [&](const std::string& listen, int) {
    seen = listen;
    return 0;
  };
  EXPECT_EQ(run_cli({"mock-provider"}).code, 0);
  EXPECT_EQ(seen, mock_provider_listen_default);
  EXPECT_EQ(run_cli({"mock-provider", "--listen", "127.0.0.1:0"}).code, 0);
  EXPECT_EQ(seen, "127.0.0.1:0");
}

TEST_F(CliTest, AuditExitsNonZeroOnViolations) {
  store::AuditReport report{2, 5, 4, {}};
  std::string store_url;
  hooks_.audit = [&](const config::Config& c) {
    store_url = c.store_url;
    return Result<store::AuditReport>(report);
  };
  Outcome ok = run_cli({"audit", "--store", "sqlite:///tmp/x.db"});
  EXPECT_EQ(ok.code, 0);
  EXPECT_EQ(store_url, "sqlite:///tmp/x.db");
  EXPECT_NE(ok.out.find("2 allocations, 5 requests, 4 usage events"), std::string::npos);
  EXPECT_EQ(ok.out.find("operation log"), std::string::npos);
  report.unapplied_writes = 3;
  Outcome behind = run_cli({"audit"});
  EXPECT_EQ(behind.code, 0);
  EXPECT_NE(behind.out.find("note: 3 acknowledged write(s) are still only in the operation log"),
            std::string::npos);
  report.violations = {"allocation alloc_1: used 10 != sum of events 9"};
  Outcome bad = run_cli({"audit"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("violation: allocation alloc_1"), std::string::npos);
}

TEST_F(CliTest, AuditNeedsNoProviderKeyButServeDoes) {
  char path[] = "/tmp/cairva-cli-audit-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string text =
      "[store]\nurl = \"sqlite:///tmp/y.db\"\n[[providers]]\nname = \"p\"\n"
      "base_url = \"https://x.test/v1\"\napi_key_env = \"CAIRVA_CLI_TEST_SURELY_UNSET\"\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  std::string store_url;
  hooks_.audit = [&](const config::Config& c) {
    store_url = c.store_url;
    return Result<store::AuditReport>(store::AuditReport{});
  };
  hooks_.serve = [](const config::Config&) { return 0; };
  EXPECT_EQ(run_cli({"audit", "--config", path}).code, 0);
  EXPECT_EQ(store_url, "sqlite:///tmp/y.db");
  Outcome serve = run_cli({"serve", "--config", path});
  EXPECT_NE(serve.code, 0);
  EXPECT_NE(serve.err.find("CAIRVA_CLI_TEST_SURELY_UNSET"), std::string::npos);
  unlink(path);
}

TEST(StoreOptions, CarryTheConfig) {
  config::Config c;
  c.store_url = "sqlite:///x.db";
  c.store_sync_full = true;
  c.pool_size = 3;
  c.in_flight_timeout_s = 9;
  c.providers.push_back(config::Provider{"openai", "https://a", "", "", 5});
  store::StoreOptions o = store_options(c);
  EXPECT_EQ(o.url, "sqlite:///x.db");
  EXPECT_TRUE(o.sync_full);
  EXPECT_EQ(o.pool_size, 3);
  EXPECT_EQ(o.in_flight_timeout_s, 9);
  EXPECT_EQ(o.providers, std::vector<std::string>{"openai"});
}

TEST(Render, AllocationListIsATable) {
  json::value list =
      json::parse(R"({"data":[{"id":"alloc_1","state":"active","agreement_id":"agr_1",
      "used":{"input_tokens":1,"output_tokens":2},"held":{"input_tokens":3,"output_tokens":4},
      "remaining":{"input_tokens":5,"output_tokens":6},"current":{"in_flight":7,"usage_pending":8}}]})");
  const std::string text = render_allocation_list(list);
  EXPECT_EQ(text.substr(0, text.find('\n')).find("ALLOCATION  STATE"), 0u);
  EXPECT_NE(text.find("alloc_1     active  agr_1"), std::string::npos) << text;
  EXPECT_NE(text.find("1/2"), std::string::npos);
  EXPECT_NE(text.find("5/6"), std::string::npos);
}

TEST(Render, ErrorWithoutTheUsualShapeShowsTheBody) {
  EXPECT_EQ(render_error(502, "Bad Gateway"), "cairva: 502: Bad Gateway");
}

// Regression: a model name carrying "\x1b[2K\r" erased its row of `cairva requests list` and
// a newline forged a row of its own.
TEST(Printable, EscapesEveryTerminalControl) {
  EXPECT_EQ(printable("gpt-4o"), "gpt-4o");
  EXPECT_EQ(printable("m\x1b[2K\r"), "m\\x1b[2K\\x0d");
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable("a\nb\tc\x7f"), "a\\x0ab\\x09c\\x7f");
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m"),
            "\\u009b31m");                               // C1 CSI, as UTF-8
  EXPECT_EQ(printable("\xc2\x85"), "\\u0085");           // C1 NEL
  EXPECT_EQ(printable("back\\slash"), "back\\\\slash");  // so an escape is never ambiguous
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");  // printable UTF-8 unchanged
  EXPECT_EQ(printable("\xc2\xa0"), "\xc2\xa0");            // U+00A0 is past C1
  EXPECT_EQ(printable("\x9b\xff\xc0\xaf\xed\xa0\x80"),
            "\\x9b\\xff\\xc0\\xaf\\xed\\xa0\\x80");  // raw C1, invalid, overlong, surrogate
  EXPECT_EQ(printable("\xe2\x82"), "\\xe2\\x82");    // truncated sequence
}

TEST(Printable, JsonEscapesKeepTheValue) {
  const std::string body = "{\"model\":\"m\\u001b[2K\x7f\xc2\x9b\\\\\"}\n";
  const std::string shown = printable(body, Escaping::json);
  EXPECT_EQ(shown, "{\"model\":\"m\\u001b[2K\\u007f\\u009b\\\\\"}\n");
  EXPECT_EQ(json::parse(shown), json::parse(body));
  EXPECT_EQ(printable("\xff", Escaping::json), "\\ufffd");
}

TEST(Render, RequestListEscapesStoredFields) {
  json::value list = json::parse(
      R"({"data":[{"id":"req_1","allocation_id":"alloc_1","state":"booked",)"
      R"("model":"m\u001b[2K\rreq_forged  alloc_1  booked\nx","started_at":"t",)"
      R"("hold":{"input_tokens":1,"output_tokens":2},"provider_request_id":"p\u009b1"}]})");
  const std::string text = render_request_list(list);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;  // header and one row
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_NE(text.find("m\\x1b[2K\\x0dreq_forged  alloc_1  booked\\x0ax"), std::string::npos)
      << text;
  EXPECT_NE(text.find("p\\u009b1"), std::string::npos) << text;
}

TEST_F(CliTest, EveryOutputEscapesStoredStrings) {
  reply_ = {200, R"({"data":[{"id":"req_1","model":"m\u001b[2K\r"}]})"};
  Outcome table = run_cli({"requests", "list"});
  EXPECT_EQ(table.code, 0);
  EXPECT_EQ(table.out.find('\x1b'), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("m\\x1b[2K\\x0d"), std::string::npos) << table.out;
  reply_ = {200, "{\"data\":[{\"model\":\"m\x7f\xc2\x9b\"}]}"};
  Outcome raw = run_cli({"requests", "list", "--json"});
  EXPECT_EQ(
      raw.out,
      "{\"object\":\"list\",\"data\":[{\"model\":\"m\\u007f\\u009b\"}],\"has_more\":false}\n");
  reply_ = {409, R"({"error":{"code":"not_pending","message":"request m\u001b[2K is not"}})"};
  Outcome error = run_cli({"requests", "list"});
  EXPECT_EQ(error.err, "cairva: 409 not_pending: request m\\x1b[2K is not\n");
  reply_ = {502, "Bad\x1b[2K Gateway"};
  EXPECT_EQ(run_cli({"requests", "list"}).err, "cairva: 502: Bad\\x1b[2K Gateway\n");
  hooks_.audit = [](const config::Config&) {
    return Result<store::AuditReport>(
        store::AuditReport{1, 1, 0, {"request req_\x1b[2K: state unknown"}});
  };
  EXPECT_NE(run_cli({"audit"}).out.find("violation: request req_\\x1b[2K: state"),
            std::string::npos);
}

// ---------------------------------------------------------------- SPEC-CONSOLE commands

// A fake listing of `rows` ids served `page` at a time, as the admin API pages.
HttpReply page_of(const HttpCall& call, const std::vector<std::string>& rows) {
  auto url = boost::urls::parse_origin_form(call.target);
  size_t limit = 100, start = 0;
  for (auto p : url->params()) {
    if (p.key == "limit") limit = std::stoul(std::string(p.value));
    if (p.key == "after") {
      start = static_cast<size_t>(std::find(rows.begin(), rows.end(), std::string(p.value)) -
                                  rows.begin()) +
              1;
    }
  }
  json::array data;
  for (size_t i = start; i < rows.size() && i < start + limit; ++i) {
    data.push_back(json::object{{"id", rows[i]},
                                {"evidence", "a,\"b\"\nc"},
                                {"input_tokens", 1},
                                {"hold", json::object{{"input_tokens", 2}, {"output_tokens", 3}}}});
  }
  const bool more = start + limit < rows.size();
  return {200, json::serialize(json::object{
                   {"object", "list"}, {"data", std::move(data)}, {"has_more", more}})};
}

TEST_F(CliTest, ListsFollowEveryPageAndLimitStopsEarly) {
  std::vector<std::string> rows;
  rows.reserve(2500);
  for (int i = 0; i < 2500; ++i) rows.push_back("req_" + std::to_string(i));
  hooks_.admin_http = [&](const std::string&, const std::string&, const HttpCall& call) {
    calls_.push_back(call);
    return Result<HttpReply>(page_of(call, rows));
  };
  Outcome all = run_cli({"requests", "pending"});
  ASSERT_EQ(all.code, 0) << all.err;
  ASSERT_EQ(calls_.size(), 3u);
  EXPECT_EQ(calls_[1].target, "/admin/v1/requests?state=usage_pending&after=req_999&limit=1000");
  EXPECT_NE(all.out.find("req_2499"), std::string::npos);
  EXPECT_EQ(std::count(all.out.begin(), all.out.end(), '\n'),
            2501);  // the header and every row once
  calls_.clear();
  Outcome some = run_cli({"requests", "pending", "--limit", "1500"});
  ASSERT_EQ(some.code, 0);
  ASSERT_EQ(calls_.size(), 2u);
  EXPECT_EQ(calls_[1].target, "/admin/v1/requests?state=usage_pending&after=req_999&limit=500");
  EXPECT_EQ(std::count(some.out.begin(), some.out.end(), '\n'), 1501);
}

TEST_F(CliTest, ExportsWriteCsvWithItsHeaderOrJsonLinesFollowingPages) {
  std::vector<std::string> rows = {"evt_1", "evt_2", "evt_3"};
  hooks_.admin_http = [&](const std::string&, const std::string&, const HttpCall& call) {
    calls_.push_back(call);
    HttpCall small = call;
    small.target += "&limit=2";  // the fake pages by two whatever is asked
    return Result<HttpReply>(page_of(small, rows));
  };
  Outcome csv =
      run_cli({"events", "export", "--allocation", "alloc_1", "--from", "2026-01-01T00:00:00Z"});
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(calls_[0].target,
            "/admin/v1/events?allocation_id=alloc_1&from=2026-01-01T00:00:00Z&limit=1000");
  EXPECT_EQ(csv.out,
            "id,allocation_id,request_id,provider_request_id,input_tokens,output_tokens,source,"
            "finality,evidence,"
            "booked_at,corrects\r\n"
            "evt_1,,,,1,,,,\"a,\"\"b\"\"\nc\",,\r\n"
            "evt_2,,,,1,,,,\"a,\"\"b\"\"\nc\",,\r\n"
            "evt_3,,,,1,,,,\"a,\"\"b\"\"\nc\",,\r\n");
  calls_.clear();
  Outcome jsonl = run_cli({"requests", "export", "--allocation", "alloc_1", "--format", "jsonl"});
  ASSERT_EQ(jsonl.code, 0) << jsonl.err;
  EXPECT_EQ(calls_[0].target, "/admin/v1/requests?allocation_id=alloc_1&limit=1000");
  EXPECT_EQ(std::count(jsonl.out.begin(), jsonl.out.end(), '\n'), 3);
  EXPECT_EQ(json::parse(jsonl.out.substr(0, jsonl.out.find('\n'))).at("id"), "evt_1");
  EXPECT_EQ(run_cli({"events", "export", "--allocation", "a", "--format", "xml"}).code, 2)
      << "bad usage";
}

// An adjustment's row names the event it corrects; any other event's leaves it empty.
TEST(ExportLine, EventsEndWithTheEventAnAdjustmentCorrects) {
  const json::value adjustment = json::parse(
      R"({"object":"usage_event","id":"evt_2","allocation_id":"a","request_id":"req_1","provider_request_id":"p",)"
      R"("input_tokens":-5,"output_tokens":0,"source":"adjustment","finality":"confirmed","evidence":"typo",)"
      R"("booked_at":"t1","corrects":"evt_1"})");
  const json::value booked = json::parse(
      R"({"object":"usage_event","id":"evt_1","allocation_id":"a","request_id":"req_1","provider_request_id":"p",)"
      R"("input_tokens":9,"output_tokens":2,"source":"provider","finality":"provisional","evidence":null,)"
      R"("booked_at":"t0","corrects":null})");
  EXPECT_TRUE(csv_header(ExportKind::events).ends_with(",booked_at,corrects\r\n"));
  EXPECT_EQ(export_line(ExportKind::events, ExportFormat::csv, adjustment),
            "evt_2,a,req_1,p,-5,0,adjustment,confirmed,typo,t1,evt_1\r\n");
  EXPECT_EQ(export_line(ExportKind::events, ExportFormat::csv, booked),
            "evt_1,a,req_1,p,9,2,provider,provisional,,t0,\r\n");
  EXPECT_EQ(
      json::parse(export_line(ExportKind::events, ExportFormat::jsonl, adjustment)).at("corrects"),
      "evt_1");
}

TEST(ExportLine, RequestsSplitTheHoldAndQuoteByRfc4180) {
  json::value r =
      json::parse(R"({"id":"req_1","allocation_id":"a","state":"booked","started_at":"t0",)"
                  R"("finished_at":null,"model":"m,1","stream":false,)"
                  R"("hold":{"input_tokens":5,"output_tokens":7},"provider_request_id":"p"})");
  EXPECT_EQ(csv_header(ExportKind::requests),
            "id,allocation_id,state,started_at,finished_at,model,stream,hold_input_tokens,hold_"
            "output_tokens,"
            "provider_request_id\r\n");
  EXPECT_EQ(export_line(ExportKind::requests, ExportFormat::csv, r),
            "req_1,a,booked,t0,,\"m,1\",false,5,7,p\r\n");
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("a\r\nb"), "\"a\r\nb\"");
}

TEST(ReconcileFile, ReadsCsvAndJsonlNamingTheLineOfAnyProblem) {
  auto csv = parse_reconcile_file(
      "\xEF\xBB\xBFrequest_id,provider_request_id,input_tokens,output_tokens\r\n"
      "req_1,,10,20\r\n\r\n"
      ",\"chat,\"\"cmpl\"\"\n-2\",3,4\n",
      ExportFormat::csv);
  ASSERT_TRUE(csv.ok()) << csv.error().message;
  ASSERT_EQ(csv->size(), 2u);
  EXPECT_EQ((*csv)[0].line, 2u);
  EXPECT_EQ(json::value((*csv)[0].item),
            json::parse(R"({"request_id":"req_1","input_tokens":10,"output_tokens":20})"));
  EXPECT_EQ((*csv)[1].line, 4u);
  EXPECT_EQ((*csv)[1].item.at("provider_request_id"), "chat,\"cmpl\"\n-2");
  auto jsonl = parse_reconcile_file(
      "{\"request_id\":\"r\",\"input_tokens\":1,\"output_tokens\":2}\n\n"
      "{\"provider_request_id\":\"p\",\"allocation_id\":\"a\",\"input_tokens\":0,"
      "\"output_tokens\":0}",
      ExportFormat::jsonl);
  ASSERT_TRUE(jsonl.ok()) << jsonl.error().message;
  ASSERT_EQ(jsonl->size(), 2u);
  EXPECT_EQ((*jsonl)[1].line, 3u);
  const std::pair<std::string, std::string> bad[] = {
      {"request_id,input_tokens,output_tokens\nr,1\n", "line 2: 2 fields"},
      {"request_id,input_tokens,output_tokens\nr,-1,2\n", "line 2: input_tokens"},
      {"request_id,input_tokens,output_tokens\nr,x,2\n", "line 2: input_tokens"},
      {"request_id,input_token,output_tokens\n", "line 1: unknown column"},
      {"request_id,provider_request_id,input_tokens,output_tokens\nr,p,1,2\n",
       "line 2: give exactly one"},
      {"request_id,input_tokens,output_tokens\n\"r,1,2\n", "line 2: a quoted field is not closed"},
  };
  for (const auto& [text, want] : bad) {
    auto r = parse_reconcile_file(text, ExportFormat::csv);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().message.rfind(want, 0), 0u) << r.error().message;
  }
  auto j = parse_reconcile_file("{\"request_id\":\"r\",\"input_tokens\":1.5,\"output_tokens\":2}\n",
                                ExportFormat::jsonl);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().message.rfind("line 1: input_tokens", 0), 0u);
  EXPECT_EQ(guess_import_format("x.csv", "{"), ExportFormat::csv);
  EXPECT_EQ(guess_import_format("x", "  {\"a\":1}"), ExportFormat::jsonl);
}

class ReconcileImportTest : public CliTest {
 protected:
  std::string write_file(const std::string& text) {
    // One file per test: CTest runs this fixture's tests as parallel processes.
    std::string path = ::testing::TempDir() + "cairva-import-" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".csv";
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(ReconcileImportTest, DryRunsEveryBatchFirstThenBooksAndSummarises) {
  std::vector<bool> dry_runs;
  hooks_.admin_http = [&](const std::string&, const std::string&, const HttpCall& call) {
    calls_.push_back(call);
    json::value body = json::parse(call.body);
    dry_runs.push_back(body.at("dry_run").as_bool());
    json::array results;
    const auto& items = body.at("items").as_array();
    for (size_t i = 0; i < items.size(); ++i) {
      results.push_back(json::object{{"item", i}, {"outcome", i == 1 ? "conflict" : "booked"}});
    }
    return Result<HttpReply>(
        HttpReply{200, json::serialize(json::object{{"results", std::move(results)}})});
  };
  std::string text = "provider_request_id,input_tokens,output_tokens\n";
  for (int i = 0; i < 1500; ++i) text += "p" + std::to_string(i) + ",1,2\n";
  Outcome o =
      run_cli({"reconcile", "import", write_file(text), "--evidence", "export 12", "--force"});
  EXPECT_EQ(o.code, 1) << "a conflict needs attention";
  ASSERT_EQ(calls_.size(), 4u);  // two batches checked, then two booked
  EXPECT_EQ(dry_runs, (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(calls_[0].target, "/admin/v1/reconciliations");
  json::value first = json::parse(calls_[2].body);
  EXPECT_EQ(first.at("items").as_array().size(), reconcile_import_batch_items);
  EXPECT_EQ(first.at("evidence"), "export 12");
  EXPECT_EQ(first.at("force"), true);
  EXPECT_EQ(first.at("items").at(0),
            json::parse(R"({"provider_request_id":"p0","input_tokens":1,"output_tokens":2})"));
  EXPECT_EQ(o.out.rfind("imported 1500 items\n", 0), 0u) << o.out;
  EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1 + 5 + 2)
      << "a line per outcome and per note";
  EXPECT_NE(o.out.find("booked          1498"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("conflict        2"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("line 3: conflict (provider_request_id p1)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("line 1003: conflict (provider_request_id p1001)"), std::string::npos)
      << o.out;
  calls_.clear();
  dry_runs.clear();
  Outcome dry = run_cli({"reconcile", "import", write_file(text), "--evidence", "e", "--dry-run"});
  EXPECT_EQ(dry_runs, (std::vector<bool>{true, true}));
  EXPECT_NE(dry.out.find("dry run, nothing booked"), std::string::npos);
}

TEST_F(ReconcileImportTest, ARefusedItemStopsTheImportBeforeAnythingIsBookedAndNamesItsLine) {
  hooks_.admin_http = [&](const std::string&, const std::string&, const HttpCall& call) {
    calls_.push_back(call);
    return Result<HttpReply>(HttpReply{
        400,
        R"({"error":{"code":"invalid_request","message":"items[1]: output_tokens 5000 is 100.0x the request's hold"}})"});
  };
  Outcome o = run_cli({"reconcile", "import",
                       write_file("request_id,input_tokens,output_tokens\nr1,1,2\n\nr2,1,5000\n"),
                       "--evidence", "e"});
  EXPECT_EQ(o.code, 1);
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_TRUE(json::parse(calls_[0].body).at("dry_run").as_bool());
  EXPECT_NE(o.err.find("line 4: output_tokens 5000"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("nothing of"), std::string::npos) << o.err;
  // A file that does not parse is refused before any call.
  calls_.clear();
  Outcome bad =
      run_cli({"reconcile", "import",
               write_file("request_id,input_tokens,output_tokens\nr1,one,2\n"), "--evidence", "e"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_TRUE(calls_.empty());
  EXPECT_NE(bad.err.find("line 2: input_tokens"), std::string::npos) << bad.err;
}

TEST_F(CliTest, AdjustSendsSignedCountsAndReconcileForce) {
  reply_ = {
      201,
      R"({"event":{"id":"evt_2","source":"adjustment","corrects":"evt_1","input_tokens":-5}})"};
  Outcome o =
      run_cli({"adjust", "evt_1", "--input", "-5", "--output", "3", "--evidence", "credit note"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(json::parse(calls_[0].body),
            json::parse(R"({"input_tokens":-5,"output_tokens":3,"evidence":"credit note"})"));
  EXPECT_NE(o.out.find("corrects"), std::string::npos) << o.out;
  reply_ = {200, R"({"event":{"id":"evt_3"}})"};
  ASSERT_EQ(
      run_cli({"reconcile", "req_1", "--input", "1", "--output", "2", "--evidence", "e", "--force"})
          .code,
      0);
  EXPECT_EQ(json::parse(calls_[1].body).at("force"), true);
  EXPECT_NE(run_cli({"reconcile", "--evidence", "e"}).code, 0) << "a request id or import";
}

}  // namespace
}  // namespace cairva::cli
