// The Anthropic Messages flow in process (SPEC-APIS §2–§4): messages_create and
// messages_count_tokens against a scripted provider (upstream::testing::FakeUpstream) and a
// store that runs the core's admission over one allocation, over a real loopback socket to
// a client that reads what the buyer would.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "config/config.h"
#include "core/admission.h"
#include "gateway/data_path_store.h"
#include "gateway/messages.h"
#include "upstream/fake_upstream.h"

namespace cairva::gateway {
namespace {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
namespace bj = boost::json;
using upstream::Field;
using upstream::ReadStatus;
using upstream::testing::FakeUpstream;
using upstream::testing::Script;

constexpr UnixMicros kNow = 1'700'000'000'000'000;

// One allocation whose admissions the core decides; settlements and every admin call are
// recorded or refused.
class LedgerStore final : public DataPathStore {
 public:
  explicit LedgerStore(const Clock& clock) : clock_(clock) {
    snap.state = core::AllocationState::active;
    snap.terms.window = {kNow - 60 * micros_per_second, kNow + 3600 * micros_per_second};
    snap.terms.limits = {
        .requests_per_minute = 10, .tokens_per_minute = 1'000'000, .max_concurrency = 4};
    snap.terms.allowance = {1'000'000, 1'000'000};
  }
  core::AllocationSnapshot snap;
  std::optional<Error> admit_error;
  std::vector<store::AdmitCommand> admits;
  std::vector<store::SettleCommand> settles;
  std::vector<store::ProviderIdNote> notes;
  size_t settles_when_noted = 0;

  void authenticate(const std::string&, store::Callback<store::KeyGrant> done) override {
    done(store::KeyGrant{"key_1", "alloc_1", "claude", {}, snap.terms.limits, false, {}});
  }
  void admit(store::AdmitCommand cmd, store::Callback<store::AdmitResult> done) override {
    if (admit_error) return done(*admit_error);
    store::AdmitResult r;
    snap.as_of = clock_.now();
    r.decision = core::decide_admission(snap, cmd.facts, clock_.now());
    core::apply_admission(snap, r.decision);
    r.after = snap;
    admits.push_back(std::move(cmd));
    done(r);
  }
  void settle(store::SettleCommand cmd, store::Callback<store::SettleResult> done) override {
    store::SettleResult r;
    r.book = core::BookResult::booked;
    r.request_state = cmd.kind == store::SettleKind::usage ? core::RequestState::booked
                      : cmd.kind == store::SettleKind::usage_missing
                          ? core::RequestState::usage_pending
                          : core::RequestState::failed;
    settles.push_back(std::move(cmd));
    done(r);
  }
  void allocation_status(const std::string&,
                         store::Callback<store::AllocationStatus> done) override {
    done(store::AllocationStatus{"alloc_1", "agr_1", snap});
  }

  void note_provider_id(store::ProviderIdNote note, store::Callback<void> done) override {
    if (notes.empty()) settles_when_noted = settles.size();
    notes.push_back(std::move(note));
    if (done) done(Status{});
  }
  void owns_provider_request(const std::string&, const std::string&,
                             store::Callback<bool> done) override {
    done(false);  // the Messages flow never asks
  }

 private:
  const Clock& clock_;
};

// What the client received.
struct Reply {
  bool keep = false;
  unsigned status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // de-chunked
  bool complete = false;

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
  // The SSE events, as (name, data), in order.
  std::vector<std::pair<std::string, std::string>> events() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (size_t at = 0; (at = body.find("event: ", at)) != std::string::npos;) {
      const size_t name_end = body.find('\n', at);
      const size_t data_at = name_end + 1 + 6;  // "data: "
      const size_t end = body.find("\n\n", data_at);
      out.emplace_back(body.substr(at + 7, name_end - at - 7), body.substr(data_at, end - data_at));
      at = end;
    }
    return out;
  }
  bj::value json() const { return bj::parse(body); }
};

Reply parse(const std::string& raw) {
  Reply r;
  bhttp::response_parser<bhttp::string_body> p;
  p.eager(true);
  p.body_limit(boost::none);
  boost::system::error_code ec;
  p.put(net::buffer(raw), ec);
  if (!p.is_header_done()) return r;
  r.complete = p.is_done();
  const auto& m = p.get();
  r.status = m.result_int();
  for (const auto& f : m) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(f.value());
  }
  r.body = m.body();
  return r;
}

class MessagesFlow : public ::testing::Test {
 protected:
  MessagesFlow() : cfg(config::default_config()), store(clock), gw{cfg, store, clock, {}} {
    upstream::ProviderEndpoint ep;
    ep.name = "claude";
    ep.kind = config::ProviderKind::anthropic;
    ep.host = "127.0.0.1";
    ep.port = "1";
    ep.base_path = "/v1";
    ep.x_api_key = "sk-ant-supplier-secret";
    ep.timeout_s = 30;
    gw.providers.push_back(ep);
    grant = store::KeyGrant{"key_1", "alloc_1", "claude", {}, store.snap.terms.limits, false, {}};
  }

  using Entry = std::function<http::Task<bool>(ClientExchange&, std::string)>;

  // Serves `body` through `entry`, as the session would on an Anthropic path.
  Reply serve(const Entry& entry, const std::string& body) {
    net::ip::tcp::acceptor acceptor(ctx,
                                    net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    net::ip::tcp::socket client(ctx);
    client.connect(acceptor.local_endpoint());
    http::Socket server(ctx.get_executor());
    acceptor.accept(server);
    http::Deadline deadline(server);
    ClientExchange ex{server, deadline};
    ex.request_id = "req_test";
    ex.key_hash = "hash";
    ex.dialect = wire::Dialect::anthropic;
    ex.rate = core::AllocationSnapshot{};
    ex.rate->terms.limits = grant.limits;
    Reply reply;
    int running = 2;  // the connection's deadline timer stays armed: stop once both are done
    auto done = [&] {
      if (--running == 0) ctx.stop();
    };
    net::co_spawn(
        ctx.get_executor(),
        [&]() -> http::Task<void> {
          reply.keep = co_await entry(ex, body);
          boost::system::error_code ignored;
          server.shutdown(http::Socket::shutdown_send, ignored);
          done();
        },
        net::detached);
    std::string raw;
    net::co_spawn(
        ctx,
        [&]() -> net::awaitable<void> {
          co_await net::async_read(client, net::dynamic_buffer(raw),
                                   net::as_tuple(net::use_awaitable));
          done();
        },
        net::detached);
    ctx.run();
    ctx.restart();
    const bool keep = reply.keep;
    reply = parse(raw);
    reply.keep = keep;
    return reply;
  }
  Reply create(const std::string& body, AnthropicFields fields = {}) {
    return serve(
        [&](ClientExchange& ex, std::string b) {
          return messages_create(gw, up, ex, grant, std::move(b), fields);
        },
        body);
  }
  Reply count_tokens(const std::string& body, AnthropicFields fields = {}) {
    return serve(
        [&](ClientExchange& ex, std::string b) {
          return messages_count_tokens(gw, up, ex, grant, std::move(b), fields);
        },
        body);
  }

  static std::string request(bool stream, std::string_view extra = {}, int64_t max_tokens = 1000) {
    return R"({"model":"claude-x","max_tokens":)" + std::to_string(max_tokens) +
           R"(,"messages":[{"role":"user","content":"hi"}])" + (stream ? R"(,"stream":true)" : "") +
           std::string(extra) + "}";
  }
  static constexpr std::string_view usage =
      R"({"input_tokens":10,"cache_creation_input_tokens":3,"cache_read_input_tokens":5,"output_tokens":7})";
  static std::string message(bool with_id = true) {
    return std::string("{") + (with_id ? R"("id":"msg_1",)" : "") +
           R"("type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],"usage":)" +
           std::string(usage) + "}";
  }
  static std::string event(std::string_view name, std::string_view data) {
    return "event: " + std::string(name) + "\ndata: " + std::string(data) + "\n\n";
  }
  static std::string started() {
    return event("message_start",
                 R"({"type":"message_start","message":{"id":"msg_s","content":[],"usage":)" +
                     std::string(usage) + "}}");
  }
  static std::string text(std::string_view t) {
    return event(
        "content_block_delta",
        R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":")" +
            std::string(t) + "\"}}");
  }
  static std::string delta() {
    return event(
        "message_delta",
        R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}})");
  }
  static std::string stopped() { return event("message_stop", R"({"type":"message_stop"})"); }
  static Script body_of(std::string body, unsigned status = 200) {
    Script s;
    s.status = status;
    s.pieces = {std::move(body)};
    return s;
  }
  const store::SettleCommand& only_settle() const {
    EXPECT_EQ(store.settles.size(), 1u);
    return store.settles.front();
  }
  static std::string error_type(const bj::value& v) {
    return std::string(v.at("error").at("type").as_string());
  }
  static std::string error_code(const bj::value& v) {
    return std::string(v.at("error").at("code").as_string());
  }

  net::io_context ctx{1};
  config::Config cfg;
  ManualClock clock{kNow};
  LedgerStore store;
  FakeUpstream up;
  Gateway gw;
  store::KeyGrant grant;
};

TEST_F(MessagesFlow, APlainMessageIsBookedWithItsCacheCountsAndTagged) {
  up.scripts.push_back(body_of(message()));
  const auto r = create(request(false));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.json().at("usage_source").as_string(), "provider");
  EXPECT_EQ(r.json().at("usage").at("cache_read_input_tokens").as_int64(), 5)
      << "the provider's usage unchanged";
  const auto& s = only_settle();
  EXPECT_EQ(s.kind, store::SettleKind::usage);
  EXPECT_EQ(s.provider_request_id, "msg_1");
  EXPECT_EQ(s.usage, (core::Tokens{10 + 3 + 5, 7}));
  ASSERT_EQ(up.sent.size(), 1u);
  EXPECT_EQ(up.sent[0].path, "/v1/messages");
  EXPECT_EQ(up.sent[0].body, request(false)) << "nothing to rewrite: max_tokens is what was held";
  EXPECT_EQ(
      up.sent[0].headers,
      (std::vector<std::pair<std::string, std::string>>{{"anthropic-version", "2023-06-01"}}));
  EXPECT_EQ(r.header("anthropic-ratelimit-requests-limit"), "10");
  EXPECT_EQ(r.header("anthropic-ratelimit-requests-remaining"), "9");
  EXPECT_EQ(r.header("anthropic-ratelimit-tokens-limit"), "1000000");
  EXPECT_EQ(r.header("x-ratelimit-remaining-requests"), "9");
  // Both windows have room: each resets at once, an instant as Anthropic writes them.
  EXPECT_EQ(r.header("anthropic-ratelimit-requests-reset"), format_rfc3339(kNow));
  EXPECT_EQ(r.header("anthropic-ratelimit-tokens-reset"), format_rfc3339(kNow));
  EXPECT_TRUE(r.keep);
}

TEST_F(MessagesFlow, TheClientsAnthropicVersionAndBetaArePassedOn) {
  up.scripts.push_back(body_of(message()));
  create(request(false), {"2024-10-22", "prompt-caching-2024-07-31,tools-2024"});
  ASSERT_EQ(up.sent.size(), 1u);
  EXPECT_EQ(up.sent[0].headers, (std::vector<std::pair<std::string, std::string>>{
                                    {"anthropic-version", "2024-10-22"},
                                    {"anthropic-beta", "prompt-caching-2024-07-31,tools-2024"}}));
}

TEST_F(MessagesFlow, AMessageWithoutAnIdIsBookedUnderTheRequestIdHeader) {
  up.scripts.push_back(body_of(message(false)).field(Field::anthropic_request_id, "req_011CKx"));
  const auto r = create(request(false));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.header("request-id"), "req_011CKx");
  EXPECT_EQ(only_settle().provider_request_id, "req_011CKx");
}

TEST_F(MessagesFlow, AStreamIsRelayedAndBookedOnMessageStop) {
  Script s;
  s.pieces = {started(), text("a"), text("b"), delta(), stopped()};
  up.scripts.push_back(s);
  const auto r = create(request(true));
  EXPECT_EQ(r.status, 200u);
  EXPECT_TRUE(r.complete);
  EXPECT_TRUE(r.keep);
  const auto ev = r.events();
  ASSERT_EQ(ev.size(), 5u) << r.body;
  EXPECT_EQ(ev[0].first, "message_start");
  EXPECT_EQ(ev[1].second,
            R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}})");
  EXPECT_EQ(ev[3].first, "message_delta");
  EXPECT_EQ(bj::parse(ev[3].second).at("usage_source").as_string(), "provider");
  EXPECT_EQ(ev[4].first, "message_stop");
  const auto& settled = only_settle();
  EXPECT_EQ(settled.kind, store::SettleKind::usage);
  EXPECT_EQ(settled.provider_request_id, "msg_s");
  EXPECT_EQ(settled.usage, (core::Tokens{18, 9}));
  EXPECT_TRUE(up.sent[0].released);
}

TEST_F(MessagesFlow, AStreamNotesMessageStartsIdWhileInFlight) {
  Script s;
  s.pieces = {started(), text("a"), delta(), stopped()};
  up.scripts.push_back(s);
  create(request(true));
  ASSERT_EQ(store.notes.size(), 1u);
  EXPECT_EQ(store.notes[0].provider_request_id, "msg_s");
  EXPECT_EQ(store.settles_when_noted, 0u) << "noted before the settlement";
}

TEST_F(MessagesFlow, AStreamCutBeforeMessageStopIsUsagePendingAndEndsWithAnAnthropicError) {
  Script s;
  s.pieces = {started(), text("a"), delta()};
  s.end = ReadStatus::cut;
  up.scripts.push_back(s);
  const auto r = create(request(true));
  EXPECT_EQ(r.status, 200u);
  EXPECT_FALSE(r.keep);
  const auto ev = r.events();
  ASSERT_EQ(ev.size(), 4u) << r.body;
  EXPECT_EQ(bj::parse(ev[2].second).at("usage_source").as_string(), "pending");
  EXPECT_EQ(ev[3].first, "error");
  const auto err = bj::parse(ev[3].second);
  EXPECT_EQ(err.at("type").as_string(), "error");
  EXPECT_EQ(error_type(err), "api_error");
  EXPECT_EQ(error_code(err), "provider_unavailable");
  EXPECT_EQ(r.body.find("message_stop"), std::string::npos);
  // usage_missing: the request stays usage_pending and keeps its hold (SPEC §5).
  EXPECT_EQ(only_settle().kind, store::SettleKind::usage_missing);
  EXPECT_EQ(only_settle().provider_request_id, "msg_s");
  EXPECT_FALSE(up.sent[0].released);
}

TEST_F(MessagesFlow, AProviderErrorIsPassedOnAndReleasesTheHold) {
  const std::string overloaded =
      R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})";
  up.scripts.push_back(body_of(overloaded, 529));
  const auto r = create(request(false));
  EXPECT_EQ(r.status, 529u);
  EXPECT_EQ(r.body, overloaded);
  EXPECT_EQ(only_settle().kind, store::SettleKind::failed);
}

TEST_F(MessagesFlow, SupplierAccountErrorsComeBackInAnthropicsShapeWithTheGatewaysWords) {
  up.scripts.push_back(body_of(
      R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-supplier-secret"}})",
      401));
  const auto denied = create(request(false));
  EXPECT_EQ(denied.status, 502u);
  EXPECT_EQ(error_type(denied.json()), "api_error");
  EXPECT_EQ(error_code(denied.json()), "provider_unavailable");
  EXPECT_EQ(denied.body.find("sk-ant"), std::string::npos) << denied.body;

  up.scripts.push_back(
      body_of(
          R"({"type":"error","error":{"type":"rate_limit_error","message":"org-Supplier limit"}})",
          429)
          .field(Field::retry_after, "9"));
  const auto limited = create(request(false));
  EXPECT_EQ(limited.status, 429u);
  EXPECT_EQ(limited.header("retry-after"), "9");
  EXPECT_EQ(error_type(limited.json()), "rate_limit_error");
  EXPECT_EQ(limited.body.find("org-"), std::string::npos) << limited.body;
}

TEST_F(MessagesFlow, MaxTokensIsRequiredAndTheRefusalIsInAnthropicsShape) {
  const auto r = create(R"({"model":"claude-x","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(error_type(r.json()), "invalid_request_error");
  EXPECT_EQ(error_code(r.json()), "invalid_request");
  EXPECT_EQ(r.json().at("error").at("message").as_string(), "max_tokens is required");
  EXPECT_TRUE(store.admits.empty());
  EXPECT_TRUE(up.sent.empty());
}

TEST_F(MessagesFlow, AStoreOutageIs503InAnthropicsShapeWithRetryAfterAndNoStoreDetail) {
  store.admit_error = make_error(ErrorCode::store_unavailable,
                                 "connection to server at \"127.0.0.1\", port 5432 failed");
  const auto r = create(request(false));
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(error_type(r.json()), "api_error");
  EXPECT_EQ(error_code(r.json()), "store_unavailable");
  EXPECT_FALSE(r.header("retry-after").empty());
  EXPECT_EQ(r.body.find("5432"), std::string::npos) << r.body;
  EXPECT_TRUE(up.sent.empty());
}

TEST_F(MessagesFlow, ALoweredMaxTokensTakesTheThinkingBudgetUnderIt) {
  store.snap.terms.allowance.output = 2000;
  up.scripts.push_back(body_of(message()));
  const auto r =
      create(request(false, R"(,"thinking":{"type":"enabled","budget_tokens":3000})", 4096));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.header("x-cairva-max-tokens-lowered"), "2000");
  ASSERT_EQ(up.sent.size(), 1u);
  const auto sent = bj::parse(up.sent[0].body);
  EXPECT_EQ(sent.at("max_tokens").as_int64(), 2000);
  EXPECT_EQ(sent.at("thinking").at("budget_tokens").as_int64(), 1999);
  ASSERT_EQ(store.admits.size(), 1u);
  EXPECT_EQ(store.admits[0].facts.per_choice_min, 1025);
}

TEST_F(MessagesFlow, ABudgetTheLoweringCannotKeepValidIs402AndCountsTowardNoLimit) {
  store.snap.terms.allowance.output = 1000;  // under the provider's least budget + 1
  const auto r =
      create(request(false, R"(,"thinking":{"type":"enabled","budget_tokens":2000})", 4096));
  EXPECT_EQ(r.status, 402u);
  EXPECT_EQ(error_type(r.json()), "billing_error");
  EXPECT_EQ(error_code(r.json()), "allocation_exhausted");
  EXPECT_TRUE(up.sent.empty());
  EXPECT_EQ(store.snap.requests_last_minute, 0) << "a core refusal starts no request";
  EXPECT_EQ(store.snap.held, (core::Tokens{0, 0}));
}

TEST_F(MessagesFlow, CountTokensIsForwardedAndBooksNothing) {
  up.scripts.push_back(body_of(R"({"input_tokens":14})"));
  const std::string body = R"({"model":"claude-x","messages":[{"role":"user","content":"hi"}]})";
  const auto r = count_tokens(body, {"2023-06-01", "token-counting-2024-11-01"});
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, R"({"input_tokens":14})");
  ASSERT_EQ(up.sent.size(), 1u);
  EXPECT_EQ(up.sent[0].path, "/v1/messages/count_tokens");
  EXPECT_EQ(up.sent[0].body, body);
  EXPECT_EQ(up.sent[0].headers.size(), 2u);
  EXPECT_TRUE(store.admits.empty());
  EXPECT_TRUE(store.settles.empty());
  EXPECT_EQ(store.snap.requests_last_minute, 0);
  EXPECT_TRUE(up.sent[0].released);
}

TEST_F(MessagesFlow, CountTokensChecksTheModelListAndTheAllocationsState) {
  grant.models = {"claude-allowed"};
  const auto outside =
      count_tokens(R"({"model":"claude-x","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(outside.status, 400u);
  EXPECT_EQ(error_code(outside.json()), "model_not_allowed");

  store.snap.state = core::AllocationState::suspended;
  const auto suspended =
      count_tokens(R"({"model":"claude-allowed","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(suspended.status, 403u);
  EXPECT_EQ(error_type(suspended.json()), "permission_error");
  EXPECT_EQ(error_code(suspended.json()), "allocation_not_active");

  store.snap.state = core::AllocationState::depleted;
  const auto depleted =
      count_tokens(R"({"model":"claude-allowed","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(depleted.status, 402u);
  EXPECT_EQ(error_code(depleted.json()), "allocation_depleted");
  EXPECT_TRUE(up.sent.empty());
}

TEST_F(MessagesFlow, CountTokensPassesProviderErrorsButReplacesSupplierAccountOnes) {
  const std::string bad =
      R"({"type":"error","error":{"type":"invalid_request_error","message":"messages: empty"}})";
  up.scripts.push_back(body_of(bad, 400));
  const auto r =
      count_tokens(R"({"model":"claude-x","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(r.body, bad);

  up.scripts.push_back(body_of(
      R"({"type":"error","error":{"type":"permission_error","message":"org-Supplier"}})", 403));
  const auto denied =
      count_tokens(R"({"model":"claude-x","messages":[{"role":"user","content":"hi"}]})");
  EXPECT_EQ(denied.status, 502u);
  EXPECT_EQ(error_code(denied.json()), "provider_unavailable");
  EXPECT_EQ(denied.body.find("org-"), std::string::npos);
  EXPECT_TRUE(store.settles.empty());
}

}  // namespace
}  // namespace cairva::gateway
