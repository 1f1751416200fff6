// The gateway flow in process (SPEC §3–§5): chat_completion against a scripted provider
// (upstream::testing::FakeUpstream) and a scripted store, over a real loopback socket to a
// client that reads what the buyer would. One test per branch of the flow.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "config/config.h"
#include "gateway/chat.h"
#include "gateway/limits.h"
#include "upstream/fake_upstream.h"
#include "wire/limits.h"

namespace cairva::gateway {
namespace {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using upstream::Field;
using upstream::ReadStatus;
using upstream::testing::FakeUpstream;
using upstream::testing::Script;

// The request path of a Store, scripted; every admin call fails (the flow makes none).
class FlowStore final : public store::Store {
 public:
  std::optional<Error> auth_error;
  std::optional<Error> admit_error;
  std::optional<Error> settle_error;
  std::vector<store::SettleCommand> settles;
  int authentications = 0;

  void authenticate(const std::string&, store::Callback<store::KeyGrant> done) override {
    ++authentications;
    if (auth_error) return done(*auth_error);
    done(store::KeyGrant{"key_1", "alloc_1", "mock", {}, {}, false});
  }
  void admit(store::AdmitCommand, store::Callback<store::AdmitResult> done) override {
    if (admit_error) return done(*admit_error);
    store::AdmitResult r;
    r.decision.outcome = core::Admitted{core::Tokens{13, 50}, 50, std::nullopt};
    done(std::move(r));
  }
  void settle(store::SettleCommand cmd, store::Callback<store::SettleResult> done) override {
    const auto kind = cmd.kind;
    settles.push_back(std::move(cmd));
    if (settle_error) return done(*settle_error);
    store::SettleResult r;
    r.book = core::BookResult::booked;
    r.request_state = kind == store::SettleKind::usage           ? core::RequestState::booked
                      : kind == store::SettleKind::usage_missing ? core::RequestState::usage_pending
                                                                 : core::RequestState::failed;
    done(r);
  }
  void allocation_status(const std::string&, store::Callback<store::AllocationStatus> done) override {
    done(store::AllocationStatus{});
  }

  Result<store::CreatedAgreement> create_agreement(const store::NewAgreement&) override { return no(); }
  Result<store::AgreementRow> get_agreement(const std::string&) override { return no(); }
  Result<store::AgreementRow> cancel_agreement(const std::string&) override { return no(); }
  Result<std::vector<store::AllocationStatus>> list_allocations() override { return no(); }
  Result<store::AllocationStatus> get_allocation(const std::string&) override { return no(); }
  Result<store::AllocationStatus> suspend_allocation(const std::string&) override { return no(); }
  Result<store::AllocationStatus> resume_allocation(const std::string&) override { return no(); }
  Result<store::CreatedKey> create_key(const std::string&) override { return no(); }
  Result<store::ApiKeyRow> revoke_key(const std::string&) override { return no(); }
  Result<store::Paged<store::RequestRow>> list_requests(const store::RequestFilter&) override { return no(); }
  Result<store::RequestRow> get_request(const std::string&) override { return no(); }
  Result<store::UsageEventRow> reconcile(const store::Reconciliation&) override { return no(); }
  Result<store::Paged<store::UsageEventRow>> list_events(const store::EventFilter&) override { return no(); }
  Result<store::Paged<store::ConflictRow>> list_conflicts(const store::ConflictFilter&) override { return no(); }
  Result<store::Paged<store::AgreementRow>> list_agreements(const store::PageFilter&) override { return no(); }
  Result<store::Paged<store::AllocationStatus>> list_allocations_page(const store::PageFilter&) override {
    return no();
  }
  Result<store::Paged<store::ApiKeyRow>> list_keys(const std::string&, const store::PageFilter&) override {
    return no();
  }
  void usage_series(store::UsageQuery, store::Callback<store::UsageSeries> done) override { done(no()); }
  Result<std::vector<store::BookedMatch>> find_bookings(const std::optional<std::string>&,
                                                        const std::string&) override {
    return no();
  }
  Result<std::vector<store::RequestRow>> find_pending(const std::optional<std::string>&,
                                                      const std::string&) override {
    return no();
  }
  Result<int64_t> record_conflicts(std::vector<store::ConflictRow>) override { return no(); }
  Result<store::UsageEventRow> adjust(const store::Adjustment&) override { return no(); }
  Result<int64_t> sweep_stale() override { return no(); }
  Result<store::AuditReport> audit() override { return no(); }

 private:
  static Error no() { return make_error(ErrorCode::internal_error, "not in this fake"); }
};

// What the client received.
struct Reply {
  bool keep = false;  // chat_completion's answer: the connection stays open
  unsigned status = 0;
  std::map<std::string, std::string> headers;  // lower-case names

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
  std::string body;                            // de-chunked
  bool complete = false;                       // the HTTP message ended properly

  // The SSE events' data, in order.
  std::vector<std::string> events() const {
    std::vector<std::string> out;
    size_t at = 0;
    while ((at = body.find("data: ", at)) != std::string::npos) {
      const size_t end = body.find("\n\n", at);
      out.push_back(body.substr(at + 6, end - at - 6));
      at = end;
    }
    return out;
  }
};

Reply parse(const std::string& raw) {
  Reply r;
  bhttp::response_parser<bhttp::string_body> p;
  p.eager(true);
  p.body_limit(boost::none);
  boost::system::error_code ec;
  size_t at = 0;
  while (at < raw.size() && !p.is_done()) {
    const size_t used = p.put(net::buffer(raw.data() + at, raw.size() - at), ec);
    at += used;
    if (ec == bhttp::error::need_more) {
      ec = {};
      if (used == 0) break;
      continue;
    }
    if (ec || used == 0) break;
  }
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

class Flow : public ::testing::Test {
 protected:
  Flow() : cfg(config::default_config()), gw{cfg, store, clock, {}} {
    upstream::ProviderEndpoint ep;
    ep.name = "mock";
    ep.host = "127.0.0.1";
    ep.port = "1";
    ep.chat_path = "/v1/chat/completions";
    ep.authorization = "Bearer sk-supplier-secret-key";
    ep.timeout_s = 30;
    gw.providers.push_back(ep);
    grant = store::KeyGrant{"key_1", "alloc_1", "mock", {}, {}, false};
  }

  // Serves `body` through chat_completion; the client reads until the server closes.
  // `on_connected` may act on the client's socket before the flow starts.
  Reply run(const std::string& body, bool client_reads = true) {
    net::ip::tcp::acceptor acceptor(ctx, net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    client.emplace(ctx);
    client->connect(acceptor.local_endpoint());
    http::Socket server(ctx.get_executor());
    acceptor.accept(server);
    http::Deadline deadline(server);
    ClientExchange ex{server, deadline};
    ex.request_id = "req_test";
    ex.keep_alive = true;
    ex.key_hash = "hash";
    Reply reply;
    // The connection's deadline timer stays armed: the loop stops once both sides are done.
    int running = client_reads ? 2 : 1;
    auto done = [&] {
      if (--running == 0) ctx.stop();
    };
    net::co_spawn(
        ctx.get_executor(),
        [&]() -> http::Task<void> {
          reply.keep = co_await chat_completion(gw, up, ex, grant, body);
          boost::system::error_code ignored;
          server.shutdown(http::Socket::shutdown_send, ignored);
          done();
        },
        net::detached);
    std::string raw;
    if (client_reads) {
      net::co_spawn(
          ctx,
          [&]() -> net::awaitable<void> {
            auto [ec, n] = co_await net::async_read(*client, net::dynamic_buffer(raw),
                                                    net::as_tuple(net::use_awaitable));
            (void)n;
            done();
          },
          net::detached);
    }
    ctx.run();
    ctx.restart();
    const bool keep = reply.keep;
    reply = parse(raw);
    reply.keep = keep;
    return reply;
  }

  static std::string chat_body(bool stream, bool include_usage = false) {
    std::string b = R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":50)";
    if (stream) b += R"(,"stream":true)";
    if (include_usage) b += R"(,"stream_options":{"include_usage":true})";
    return b + "}";
  }
  static std::string completion(bool with_usage = true) {
    std::string b = R"({"id":"chatcmpl-1","object":"chat.completion","choices":[])";
    if (with_usage) b += R"(,"usage":{"prompt_tokens":10,"completion_tokens":7})";
    return b + "}";
  }
  static std::string chunk(std::string_view content) {
    return std::string(R"(data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":")") +
           std::string(content) + "\"}}]}\n\n";
  }
  static std::string usage_chunk() {
    return R"(data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":7}})"
           "\n\n";
  }
  static Script ok_plain(std::string body) {
    Script s;
    s.pieces = {std::move(body)};
    return s;
  }
  static Script stream(std::vector<std::string> pieces, ReadStatus end = ReadStatus::ok) {
    Script s;
    s.pieces = std::move(pieces);
    s.end = end;
    return s;
  }
  const store::SettleCommand& only_settle() const {
    EXPECT_EQ(store.settles.size(), 1u);
    return store.settles.front();
  }
  static std::string error_code_of(const std::string& json) {
    const auto at = json.find("\"code\":\"");
    if (at == std::string::npos) return {};
    return json.substr(at + 8, json.find('"', at + 8) - at - 8);
  }

  net::io_context ctx{1};
  config::Config cfg;
  ManualClock clock{1'700'000'000'000'000};
  FlowStore store;
  FakeUpstream up;
  Gateway gw;
  store::KeyGrant grant;
  std::optional<net::ip::tcp::socket> client;
};

TEST_F(Flow, APlainCompletionIsBookedTaggedAndItsConnectionReused) {
  up.scripts.push_back(ok_plain(completion()).field(Field::request_id, "hdr-1"));
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 200u);
  EXPECT_NE(r.body.find(R"("usage_source":"provider")"), std::string::npos);
  EXPECT_EQ(r.header("x-request-id"), "hdr-1");
  EXPECT_TRUE(r.keep);
  const auto& s = only_settle();
  EXPECT_EQ(s.kind, store::SettleKind::usage);
  EXPECT_EQ(s.provider_request_id, "chatcmpl-1");
  EXPECT_EQ(s.usage.input, 10);
  EXPECT_EQ(s.usage.output, 7);
  ASSERT_EQ(up.sent.size(), 1u);
  EXPECT_EQ(up.sent[0].path, "/v1/chat/completions");
  EXPECT_EQ(up.sent[0].request_id, "req_test");
  EXPECT_EQ(up.sent[0].head_timeout, std::chrono::seconds(30));  // the provider's timeout_s, under the in-flight bound
  EXPECT_TRUE(up.sent[0].released);
  EXPECT_EQ(up.released_incomplete, 0);
}

TEST_F(Flow, TheHeadTimeoutIsTheInFlightRemainderWhenThatIsShorter) {
  cfg.in_flight_timeout_s = 5;
  up.scripts.push_back(ok_plain(completion()));
  run(chat_body(false));
  ASSERT_EQ(up.sent.size(), 1u);
  EXPECT_EQ(up.sent[0].head_timeout, std::chrono::seconds(5));
}

TEST_F(Flow, AProviderErrorStatusIsPassedOnAndReleasesTheHold) {
  Script s = ok_plain(R"({"error":{"message":"overloaded","type":"server_error"}})");
  s.status = 503;
  up.scripts.push_back(s);
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(r.body, R"({"error":{"message":"overloaded","type":"server_error"}})");
  EXPECT_EQ(only_settle().kind, store::SettleKind::failed);
  EXPECT_TRUE(up.sent[0].released);
}

TEST_F(Flow, ProviderCredentialErrorsBecome502WithTheGatewaysOwnMessage) {
  for (const unsigned status : {401u, 403u}) {
    store.settles.clear();
    Script s = ok_plain(R"({"error":{"message":"Incorrect API key provided: sk-proj-****ab12 for organization org-Supplier42","code":"invalid_api_key"}})");
    s.status = status;
    up.scripts.push_back(s);
    const auto r = run(chat_body(false));
    EXPECT_EQ(r.status, 502u) << status;
    EXPECT_EQ(error_code_of(r.body), "provider_unavailable");
    EXPECT_EQ(r.body.find("org-"), std::string::npos) << r.body;
    EXPECT_EQ(r.body.find("sk-"), std::string::npos) << r.body;
    EXPECT_EQ(only_settle().kind, store::SettleKind::failed);
  }
}

TEST_F(Flow, AProvider429KeepsItsStatusAndRetryAfterWithTheGatewaysBody) {
  Script s = ok_plain(R"({"error":{"message":"Rate limit reached for org-Supplier42","code":"rate_limit_exceeded"}})");
  s.status = 429;
  s.field(Field::retry_after, "7");
  up.scripts.push_back(s);
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 429u);
  EXPECT_EQ(r.header("retry-after"), "7");
  EXPECT_EQ(error_code_of(r.body), "rate_limited");
  EXPECT_EQ(r.body.find("org-"), std::string::npos) << r.body;
  EXPECT_EQ(only_settle().kind, store::SettleKind::failed);
}

TEST_F(Flow, NoResponseHeadInTimeIs504AndReleasesTheHold) {
  Script s;
  s.send_error = make_error(ErrorCode::provider_timeout, "provider mock did not respond in time");
  up.scripts.push_back(s);
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 504u);
  EXPECT_EQ(error_code_of(r.body), "provider_timeout");
  EXPECT_EQ(only_settle().kind, store::SettleKind::failed);
}

TEST_F(Flow, AConnectionFailureIs502AndReleasesTheHold) {
  Script s;
  s.send_error = make_error(ErrorCode::provider_unavailable, "cannot connect to provider mock: Connection refused");
  up.scripts.push_back(s);
  const auto r = run(chat_body(true));
  EXPECT_EQ(r.status, 502u);
  EXPECT_EQ(error_code_of(r.body), "provider_unavailable");
  EXPECT_EQ(only_settle().kind, store::SettleKind::failed);
}

TEST_F(Flow, APlainBodyCutAfterA2xxIsUsageMissingAndTheConnectionDropped) {
  Script s = ok_plain(R"({"id":"chatcmpl-1","cho)");
  s.end = ReadStatus::cut;
  up.scripts.push_back(s);
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 502u);
  EXPECT_EQ(only_settle().kind, store::SettleKind::usage_missing);
  EXPECT_FALSE(up.sent[0].released);
}

TEST_F(Flow, APlainBodyWithoutUsageIsUsageMissingAndSaysPending) {
  up.scripts.push_back(ok_plain(completion(false)));
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 200u);
  EXPECT_NE(r.body.find(R"("usage":null)"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"("usage_source":"pending")"), std::string::npos) << r.body;
  const auto& s = only_settle();
  EXPECT_EQ(s.kind, store::SettleKind::usage_missing);
  EXPECT_EQ(s.provider_request_id, "chatcmpl-1");
}

TEST_F(Flow, AWholeStreamIsRelayedBookedAndEndsWithDone) {
  up.scripts.push_back(stream({chunk("a"), chunk("b"), usage_chunk(), "data: [DONE]\n\n"}));
  const auto r = run(chat_body(true, true));
  EXPECT_EQ(r.status, 200u);
  EXPECT_TRUE(r.complete);
  EXPECT_TRUE(r.keep);
  const auto ev = r.events();
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_NE(ev[2].find(R"("usage_source":"provider")"), std::string::npos);
  const auto& s = only_settle();
  EXPECT_EQ(s.kind, store::SettleKind::usage);
  EXPECT_EQ(s.provider_request_id, "chatcmpl-s");
  EXPECT_TRUE(up.sent[0].released);
}

TEST_F(Flow, AStreamWithoutUsageEndsWithAPendingUsageChunkAndDone) {
  up.scripts.push_back(stream({chunk("a"), "data: [DONE]\n\n"}));
  const auto r = run(chat_body(true, true));
  const auto ev = r.events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_NE(ev[1].find(R"("usage":null,"usage_source":"pending")"), std::string::npos) << ev[1];
  EXPECT_EQ(ev[2], "[DONE]");
  EXPECT_EQ(only_settle().kind, store::SettleKind::usage_missing);
}

// Item 11: a stream the gateway cuts ends with an error event and no [DONE].
TEST_F(Flow, AStreamCutBeforeItsUsageEndsWithAnErrorEventAndNoDone) {
  up.scripts.push_back(stream({chunk("a")}, ReadStatus::cut));
  const auto r = run(chat_body(true, true));
  EXPECT_EQ(r.status, 200u);
  EXPECT_FALSE(r.keep);
  const auto ev = r.events();
  ASSERT_EQ(ev.size(), 3u) << r.body;
  EXPECT_NE(ev[1].find(R"("usage_source":"pending")"), std::string::npos) << ev[1];
  EXPECT_EQ(error_code_of(ev[2]), "provider_unavailable") << ev[2];
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(only_settle().kind, store::SettleKind::usage_missing);
  EXPECT_FALSE(up.sent[0].released);
}

TEST_F(Flow, AStreamPastTheInFlightTimeoutEndsWithAnErrorEventAndNoDone) {
  up.scripts.push_back(stream({chunk("a")}, ReadStatus::timeout));
  const auto r = run(chat_body(true));
  const auto ev = r.events();
  ASSERT_EQ(ev.size(), 2u) << r.body;
  EXPECT_EQ(error_code_of(ev[1]), "provider_timeout") << ev[1];
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(only_settle().kind, store::SettleKind::usage_missing);
  // Every read was bounded by what was left of the in-flight timeout.
  for (auto d : up.sent[0].read_deadlines) EXPECT_LE(d, std::chrono::seconds(cfg.in_flight_timeout_s));
}

TEST_F(Flow, AStreamEventOverTheBoundEndsWithAnErrorEventAndNoDone) {
  const std::string huge = "data: {\"x\":\"" + std::string(wire::sse_event_bytes_max, 'a');
  up.scripts.push_back(stream({chunk("a"), huge, usage_chunk(), "data: [DONE]\n\n"}));
  const auto r = run(chat_body(true));
  const auto ev = r.events();
  ASSERT_EQ(ev.size(), 2u) << r.body.substr(0, 500);
  EXPECT_EQ(error_code_of(ev[1]), "provider_unavailable") << ev[1];
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(only_settle().kind, store::SettleKind::usage_missing);
  EXPECT_FALSE(up.sent[0].released);
}

TEST_F(Flow, AConnectionLostAfterTheProvidersDoneIsNotACut) {
  up.scripts.push_back(stream({chunk("a"), usage_chunk(), "data: [DONE]\n\n"}, ReadStatus::cut));
  const auto r = run(chat_body(true));
  const auto ev = r.events();
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back(), "[DONE]");
  EXPECT_EQ(only_settle().kind, store::SettleKind::usage);
  EXPECT_FALSE(up.sent[0].released);  // its HTTP message did not end: not reusable
}

TEST_F(Flow, ASettlementFailureIs503WithRetryAfterAndNoStoreDetail) {
  store.settle_error = make_error(ErrorCode::store_unavailable,
                                  "connection to server at \"127.0.0.1\", port 38199 failed: Connection refused");
  up.scripts.push_back(ok_plain(completion()));
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(error_code_of(r.body), "store_unavailable");
  EXPECT_EQ(r.header("retry-after"), std::to_string(store_unavailable_retry_after_s));
  EXPECT_EQ(r.body.find("127.0.0.1"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("port"), std::string::npos) << r.body;
}

TEST_F(Flow, AStreamWhoseSettlementFailsEndsWithAnErrorEventAndNoDone) {
  store.settle_error = make_error(ErrorCode::store_unavailable, "connection to server at \"127.0.0.1\", port 1 failed");
  up.scripts.push_back(stream({chunk("a"), usage_chunk(), "data: [DONE]\n\n"}));
  const auto r = run(chat_body(true));
  const auto ev = r.events();
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(error_code_of(ev.back()), "store_unavailable") << ev.back();
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(r.body.find("127.0.0.1"), std::string::npos);
  EXPECT_FALSE(r.keep);
}

TEST_F(Flow, AClientGoneMidStreamStillHasItsUsageBooked) {
  Script s = stream({chunk("a"), chunk("b"), chunk("c"), usage_chunk(), "data: [DONE]\n\n"});
  s.before_piece = [this](size_t i) {
    if (i == 1) {
      // The client resets its connection: the gateway's next writes fail.
      client->set_option(net::socket_base::linger(true, 0));
      client->close();
    }
  };
  up.scripts.push_back(std::move(s));
  const auto r = run(chat_body(true), /*client_reads=*/false);
  EXPECT_FALSE(r.keep);
  const auto& settled = only_settle();
  EXPECT_EQ(settled.kind, store::SettleKind::usage);
  EXPECT_EQ(settled.usage.input, 10);
  EXPECT_EQ(settled.usage.output, 7);
  EXPECT_TRUE(up.sent[0].released);  // the provider's stream was read to its end
}

// Items 12 and 13: a store outage is not a revoked key, and its text stays internal.
TEST_F(Flow, AStoreOutageAtAdmissionIs503WithRetryAfterNever401) {
  store.admit_error = make_error(ErrorCode::store_unavailable, "connection to server at \"127.0.0.1\", port 38199 failed");
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(error_code_of(r.body), "store_unavailable");
  EXPECT_EQ(r.header("retry-after"), std::to_string(store_unavailable_retry_after_s));
  EXPECT_EQ(r.body.find("127.0.0.1"), std::string::npos) << r.body;
  EXPECT_TRUE(up.sent.empty());
}

TEST_F(Flow, AKeyTheStoresAdmissionRefusesIs401) {
  store.admit_error = make_error(ErrorCode::invalid_api_key, "invalid API key");
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 401u);
  EXPECT_EQ(error_code_of(r.body), "invalid_api_key");
}

TEST_F(Flow, AProvisionalGrantCheckedDuringAStoreOutageIs503Not401) {
  grant.provisional = true;
  store.auth_error = make_error(ErrorCode::store_unavailable, "connection to server at \"127.0.0.1\", port 38199 failed");
  const auto r = run(R"({"model":"m"})");  // invalid: refused before admission
  EXPECT_EQ(store.authentications, 1);
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(error_code_of(r.body), "store_unavailable");
  EXPECT_FALSE(r.header("retry-after").empty());
  EXPECT_EQ(r.body.find("127.0.0.1"), std::string::npos) << r.body;
}

TEST_F(Flow, AProvisionalGrantOfARevokedKeyIs401) {
  grant.provisional = true;
  store.auth_error = make_error(ErrorCode::invalid_api_key, "invalid API key");
  const auto r = run(R"({"model":"m"})");
  EXPECT_EQ(r.status, 401u);
  EXPECT_EQ(error_code_of(r.body), "invalid_api_key");
}

}  // namespace
}  // namespace cairva::gateway
