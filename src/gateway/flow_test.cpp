// The gateway flow in process (SPEC §3–§5): chat_completion against a scripted provider
// (upstream::testing::FakeUpstream) and a scripted store, over a real loopback socket to a
// client that reads what the buyer would. One test per branch of the flow.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "gateway/chat.h"
#include "gateway/data_path_store.h"
#include "gateway/embeddings.h"
#include "gateway/limits.h"
#include "gateway/passthrough.h"
#include "gateway/responses.h"
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
class FlowStore final : public DataPathStore {
 public:
  std::optional<Error> auth_error;
  std::optional<Error> admit_error;
  std::optional<Error> settle_error;
  std::optional<store::AdmitResult> admit_result;  // else an admission with an empty snapshot
  std::vector<store::SettleCommand> settles;
  std::vector<store::ProviderIdNote> notes;
  size_t settles_when_noted = 0;  // settlements made before the first note
  int authentications = 0;
  std::vector<store::AdmitCommand> admits;
  core::Admitted admitted{core::Tokens{13, 50}, 50, std::nullopt};
  store::AllocationStatus status = open_status();
  int status_reads = 0;

  // An active allocation whose window holds the test clock's time.
  static store::AllocationStatus open_status() {
    store::AllocationStatus s;
    s.id = "alloc_1";
    s.snapshot.state = core::AllocationState::active;
    s.snapshot.terms.window = {1'600'000'000LL * micros_per_second,
                               1'900'000'000LL * micros_per_second};
    s.snapshot.terms.limits = {10, 1000, 2};
    return s;
  }

  void authenticate(const std::string&, store::Callback<store::KeyGrant> done) override {
    ++authentications;
    if (auth_error) return done(*auth_error);
    done(store::KeyGrant{"key_1", "alloc_1", "mock", {}, {}, false});
  }
  void admit(store::AdmitCommand cmd, store::Callback<store::AdmitResult> done) override {
    admits.push_back(std::move(cmd));
    if (admit_error) return done(*admit_error);
    if (admit_result) return done(*admit_result);
    store::AdmitResult r;
    r.decision.outcome = admitted;
    done(r);
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
  void allocation_status(const std::string&,
                         store::Callback<store::AllocationStatus> done) override {
    ++status_reads;
    done(status);
  }
  // (allocation, provider request id) pairs owned; every ownership question asked.
  std::set<std::pair<std::string, std::string>> owned;
  std::optional<Error> owns_error;
  std::vector<std::string> ownership_asked;
  void owns_provider_request(const std::string& allocation_id,
                             const std::string& provider_request_id,
                             store::Callback<bool> done) override {
    ownership_asked.push_back(provider_request_id);
    if (owns_error) return done(*owns_error);
    done(owned.contains({allocation_id, provider_request_id}));
  }
  void note_provider_id(store::ProviderIdNote note, store::Callback<void> done) override {
    if (notes.empty()) settles_when_noted = settles.size();
    notes.push_back(std::move(note));
    if (done) done(Status{});
  }

 private:
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
  std::string body;       // de-chunked
  bool complete = false;  // the HTTP message ended properly

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
  // The SSE events' names (`event:` lines), in order.
  std::vector<std::string> event_names() const {
    std::vector<std::string> out;
    size_t at = 0;
    while ((at = body.find("event: ", at)) != std::string::npos) {
      const size_t end = body.find('\n', at);
      out.push_back(body.substr(at + 7, end - at - 7));
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
    ep.base_path = "/v1";
    ep.chat_path = "/v1/chat/completions";
    ep.authorization = "Bearer sk-supplier-secret-key";
    ep.timeout_s = 30;
    gw.providers.push_back(ep);
    grant = store::KeyGrant{"key_1", "alloc_1", "mock", {}, {}, false};
  }

  // An API's entry point, as the session calls it.
  using Entry = http::Task<bool> (*)(const Gateway&, upstream::Upstream&, ClientExchange&,
                                     const store::KeyGrant&, std::string);
  Entry entry = &chat_completion;

  // Serves `body` through `entry`; the client reads until the server closes.
  // `on_connected` may act on the client's socket before the flow starts.
  Reply run(const std::string& body, bool client_reads = true) {
    net::ip::tcp::acceptor acceptor(ctx,
                                    net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    client.emplace(ctx);
    client->connect(acceptor.local_endpoint());
    http::Socket server(ctx.get_executor());
    acceptor.accept(server);
    http::Deadline deadline(server);
    ClientExchange ex{server, deadline};
    ex.closing = &closing;
    ex.open_requests = &open_requests;
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
          reply.keep = co_await entry(gw, up, ex, grant, body);
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
    return std::string(
               R"(data: {"id":"chatcmpl-s","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":")") +
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
  std::atomic<bool> closing{false};
  OpenRequests open_requests;
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
  EXPECT_EQ(up.sent[0].head_timeout,
            std::chrono::seconds(30));  // the provider's timeout_s, under the in-flight bound
  EXPECT_TRUE(up.sent[0].released);
  EXPECT_EQ(up.released_incomplete, 0);
}

// ---------------------------------------------------------------- rate-limit headers

// The store's answer for an allocation whose windows are `snap`, decided by the core.
store::AdmitResult decided(core::AllocationSnapshot snap) {
  core::RequestFacts facts;
  facts.input_estimate = 10;
  store::AdmitResult r{core::decide_admission(snap, facts, snap.as_of), {}};
  core::apply_admission(snap, r.decision);
  r.after = snap;
  return r;
}

core::AllocationSnapshot windows_at(UnixMicros now) {
  core::AllocationSnapshot s;
  s.state = core::AllocationState::active;
  s.terms.window = {now - 3600 * micros_per_second, now + 3600 * micros_per_second};
  s.terms.limits = {3, 1000, 10};
  s.terms.allowance = {100000, 100000};
  s.as_of = now;
  return s;
}

TEST_F(Flow, ARequestsPerMinuteRefusalSaysWhenTheWindowHasRoomInEveryHeader) {
  core::AllocationSnapshot s = windows_at(clock.now());
  s.requests_last_minute = 3;
  s.oldest_start_at = clock.now() - 20'500'000;  // leaves in 39.5 s
  store.admit_result = decided(s);
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 429u);
  EXPECT_EQ(error_code_of(r.body), "rate_limited");
  EXPECT_EQ(r.header("retry-after"), "60");  // the seed's, as written
  EXPECT_EQ(r.header("retry-after-ms"), "39500");
  EXPECT_EQ(r.header("x-ratelimit-remaining-requests"), "0");
  EXPECT_EQ(r.header("x-ratelimit-reset-requests"), "39.5s");
  EXPECT_EQ(r.header("x-ratelimit-reset-tokens"), "0s");
  EXPECT_TRUE(up.sent.empty());
}

TEST_F(Flow, ATokensPerMinuteRefusalSaysWhenEnoughTokensLeave) {
  core::AllocationSnapshot s = windows_at(clock.now());
  s.tokens_last_minute = 1200;
  s.freeing_booking_at = clock.now() - 59'999'001;  // leaves in 999 µs: 1 ms
  store.admit_result = decided(s);
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 429u);
  EXPECT_EQ(r.header("retry-after"), "60");
  EXPECT_EQ(r.header("retry-after-ms"), "1");
  EXPECT_EQ(r.header("x-ratelimit-reset-tokens"), "1ms");
  EXPECT_EQ(r.header("x-ratelimit-reset-requests"), "0s");
}

TEST_F(Flow, AConcurrencyRefusalNamesNoRetryAfterMs) {
  core::AllocationSnapshot s = windows_at(clock.now());
  s.in_flight = 10;
  store.admit_result = decided(s);
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 429u);
  EXPECT_EQ(r.header("retry-after"), "2");
  EXPECT_EQ(r.header("retry-after-ms"), "");
  EXPECT_EQ(r.header("x-ratelimit-reset-requests"), "0s");
}

TEST_F(Flow, TheAdmissionThatFillsTheWindowSaysAFullMinuteOnItsResponse) {
  core::AllocationSnapshot s = windows_at(clock.now());
  s.terms.limits.requests_per_minute = 1;
  store.admit_result = decided(s);
  up.scripts.push_back(ok_plain(completion()));
  const auto r = run(chat_body(false));
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.header("x-ratelimit-remaining-requests"), "0");
  EXPECT_EQ(r.header("x-ratelimit-reset-requests"), "1m0s");
  EXPECT_EQ(r.header("x-ratelimit-reset-tokens"), "0s");
  EXPECT_EQ(r.header("retry-after-ms"), "");
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
    Script s = ok_plain(
        R"({"error":{"message":"Incorrect API key provided: sk-proj-****ab12 for organization org-Supplier42","code":"invalid_api_key"}})");
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
  Script s = ok_plain(
      R"({"error":{"message":"Rate limit reached for org-Supplier42","code":"rate_limit_exceeded"}})");
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
  s.send_error = make_error(ErrorCode::provider_unavailable,
                            "cannot connect to provider mock: Connection refused");
  up.scripts.push_back(s);
  const auto r = run(chat_body(true));
  EXPECT_EQ(r.status, 502u);
  EXPECT_EQ(error_code_of(r.body), "provider_unavailable");
  EXPECT_EQ(only_settle().kind, store::SettleKind::failed);
}

// A grant naming a provider this gateway's config lacks (removed since the agreement was
// made): every API settles the admitted request failed and answers 502, sending nothing.
TEST_F(Flow, AnUnconfiguredProviderSettlesFailedAndIs502OnEveryApi) {
  grant.provider = "gone";
  const std::pair<Entry, std::string> calls[] = {
      {&chat_completion, chat_body(false)},
      {&responses_create, R"({"model":"m","input":"hi","max_output_tokens":50})"},
      {&embeddings_create, R"({"model":"m","input":"hi"})"}};
  for (const auto& [entry_point, body] : calls) {
    store.settles.clear();
    entry = entry_point;
    const auto r = run(body);
    EXPECT_EQ(r.status, 502u);
    EXPECT_EQ(error_code_of(r.body), "provider_unavailable");
    EXPECT_NE(r.body.find(R"(provider \"gone\" is not configured)"), std::string::npos) << r.body;
    EXPECT_EQ(only_settle().kind, store::SettleKind::failed);
  }
  EXPECT_TRUE(up.sent.empty());
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

TEST_F(Flow, AStreamsProviderIdIsNotedOnceAsSoonAsItIsSeenBeforeTheSettlement) {
  up.scripts.push_back(stream({chunk("a"), chunk("b"), usage_chunk(), "data: [DONE]\n\n"}));
  const auto r = run(chat_body(true));
  EXPECT_EQ(r.status, 200u);
  ASSERT_EQ(store.notes.size(), 1u);
  EXPECT_EQ(store.notes[0].request_id, "req_test");
  EXPECT_EQ(store.notes[0].allocation_id, "alloc_1");
  EXPECT_EQ(store.notes[0].provider_request_id, "chatcmpl-s");
  EXPECT_EQ(store.settles_when_noted, 0u) << "noted while the request was in flight";
  EXPECT_EQ(only_settle().provider_request_id, "chatcmpl-s");
  EXPECT_EQ(open_requests.size(), 0u) << "a request settled and answered is no longer open";
}

TEST_F(Flow, APlainResponseNotesNoProviderIdItsSettlementRecordsIt) {
  up.scripts.push_back(ok_plain(completion()));
  run(chat_body(false));
  EXPECT_TRUE(store.notes.empty());
  EXPECT_EQ(only_settle().provider_request_id, "chatcmpl-1");
}

TEST_F(Flow, AStreamWithoutAProviderIdNotesNothing) {
  const std::string anonymous =
      R"(data: {"object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"a"}}]})"
      "\n\n";
  up.scripts.push_back(stream({anonymous, "data: [DONE]\n\n"}));
  run(chat_body(true));
  EXPECT_TRUE(store.notes.empty());
  EXPECT_EQ(only_settle().kind, store::SettleKind::usage_missing);
}

TEST_F(Flow, WhileTheProcessDrainsEveryResponseClosesItsConnection) {
  closing = true;
  up.scripts.push_back(ok_plain(completion()));
  const auto plain = run(chat_body(false));
  EXPECT_EQ(plain.status, 200u);
  EXPECT_EQ(plain.header("connection"), "close");
  EXPECT_FALSE(plain.keep);
  up.scripts.push_back(stream({chunk("a"), usage_chunk(), "data: [DONE]\n\n"}));
  const auto streamed = run(chat_body(true));
  EXPECT_EQ(streamed.status, 200u);
  EXPECT_TRUE(streamed.complete);
  EXPECT_EQ(streamed.header("connection"), "close");
  EXPECT_FALSE(streamed.keep);
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
  for (auto d : up.sent[0].read_deadlines)
    EXPECT_LE(d, std::chrono::seconds(cfg.in_flight_timeout_s));
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
  store.settle_error =
      make_error(ErrorCode::store_unavailable,
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
  store.settle_error = make_error(ErrorCode::store_unavailable,
                                  "connection to server at \"127.0.0.1\", port 1 failed");
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
  store.admit_error = make_error(ErrorCode::store_unavailable,
                                 "connection to server at \"127.0.0.1\", port 38199 failed");
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
  store.auth_error = make_error(ErrorCode::store_unavailable,
                                "connection to server at \"127.0.0.1\", port 38199 failed");
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

// ---------------------------------------------------------------- Responses (SPEC-APIS §2)

class ResponsesFlow : public Flow {
 protected:
  ResponsesFlow() { entry = &responses_create; }

  static std::string request(bool stream, std::string_view extra = {}) {
    std::string b = R"({"model":"m","input":"hi")";
    if (stream) b += R"(,"stream":true)";
    return b + std::string(extra) + "}";
  }
  static constexpr std::string_view usage =
      R"({"input_tokens":12,"output_tokens":9,"total_tokens":21})";
  static std::string response(bool with_usage = true) {
    return std::string(R"({"id":"resp_1","object":"response","status":"completed","output":[])") +
           (with_usage ? ",\"usage\":" + std::string(usage) : std::string()) + "}";
  }
  static std::string event(std::string_view type, std::string_view rest) {
    return "event: " + std::string(type) + "\ndata: {\"type\":\"" + std::string(type) + "\"," +
           std::string(rest) + "}\n\n";
  }
  static std::string created() {
    return event("response.created",
                 R"("response":{"id":"resp_s","status":"in_progress","usage":null})");
  }
  static std::string delta(std::string_view text) {
    return event("response.output_text.delta",
                 R"("item_id":"msg_1","delta":")" + std::string(text) + "\"");
  }
  static std::string completed() {
    return event(
        "response.completed",
        R"("response":{"id":"resp_s","status":"completed","usage":)" + std::string(usage) + "}");
  }
  std::string sent_limit() const {
    const std::string& b = up.sent.at(0).body;
    const auto at = b.find("\"max_output_tokens\":");
    return at == std::string::npos ? std::string()
                                   : b.substr(at + 20, b.find_first_of(",}", at) - at - 20);
  }
};

TEST_F(ResponsesFlow, APlainResponseIsBookedWithTheProvidersUsageAndTagged) {
  up.scripts.push_back(ok_plain(response()));
  const auto r = run(request(false));
  EXPECT_EQ(r.status, 200u);
  EXPECT_NE(r.body.find(R"("usage_source":"provider")"), std::string::npos) << r.body;
  EXPECT_TRUE(r.keep);
  const auto& s = only_settle();
  EXPECT_EQ(s.kind, store::SettleKind::usage);
  EXPECT_EQ(s.provider_request_id, "resp_1");
  EXPECT_EQ(s.usage, (core::Tokens{12, 9}));
  ASSERT_EQ(up.sent.size(), 1u);
  EXPECT_EQ(up.sent[0].path, "/v1/responses");
  EXPECT_EQ(sent_limit(), "50") << "the held limit is always written: " << up.sent[0].body;
  ASSERT_EQ(store.admits.size(), 1u);
  EXPECT_EQ(store.admits[0].facts.per_choice_min, 16);
  EXPECT_EQ(store.admits[0].facts.max_completion_tokens, std::nullopt);
}

TEST_F(ResponsesFlow, ALoweredLimitIsWrittenIntoMaxOutputTokensAndAnnounced) {
  store.admitted = core::Admitted{core::Tokens{13, 20}, 20, 20};
  up.scripts.push_back(ok_plain(response()));
  const auto r = run(request(false, R"(,"max_output_tokens":4000)"));
  EXPECT_EQ(r.header("x-cairva-max-tokens-lowered"), "20");
  EXPECT_EQ(sent_limit(), "20");
  EXPECT_EQ(store.admits.at(0).facts.max_completion_tokens, 4000);
}

TEST_F(ResponsesFlow, AResponseWithoutUsageIsPendingAndSaysSo) {
  up.scripts.push_back(ok_plain(response(false)));
  const auto r = run(request(false));
  EXPECT_NE(r.body.find(R"("usage":null)"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"("usage_source":"pending")"), std::string::npos) << r.body;
  EXPECT_EQ(only_settle().kind, store::SettleKind::usage_missing);
  EXPECT_EQ(only_settle().provider_request_id, "resp_1");
}

TEST_F(ResponsesFlow, AStreamIsRelayedAndBookedFromItsTerminalEvent) {
  up.scripts.push_back(stream({created(), delta("a"), delta("b"), completed()}));
  const auto r = run(request(true));
  EXPECT_EQ(r.status, 200u);
  EXPECT_TRUE(r.complete);
  EXPECT_TRUE(r.keep);
  EXPECT_EQ(r.header("content-type"), "text/event-stream");
  EXPECT_EQ(r.event_names(),
            (std::vector<std::string>{"response.created", "response.output_text.delta",
                                      "response.output_text.delta", "response.completed"}));
  EXPECT_TRUE(r.body.starts_with(created() + delta("a") + delta("b")))
      << "passed through unchanged";
  const auto ev = r.events();
  EXPECT_NE(ev.back().find(R"("usage_source":"provider")"), std::string::npos) << ev.back();
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
  const auto& s = only_settle();
  EXPECT_EQ(s.kind, store::SettleKind::usage);
  EXPECT_EQ(s.provider_request_id, "resp_s");
  EXPECT_EQ(s.usage, (core::Tokens{12, 9}));
  EXPECT_TRUE(up.sent[0].released);
}

TEST_F(ResponsesFlow, AStreamCutBeforeItsTerminalEventIsUsagePendingAndEndsWithAnErrorEvent) {
  up.scripts.push_back(stream({created(), delta("a")}, ReadStatus::cut));
  const auto r = run(request(true));
  EXPECT_EQ(r.status, 200u);
  EXPECT_FALSE(r.keep);
  EXPECT_EQ(r.event_names(),
            (std::vector<std::string>{"response.created", "response.output_text.delta", "error"}));
  const auto ev = r.events();
  EXPECT_NE(ev.back().find(R"("type":"error")"), std::string::npos) << ev.back();
  EXPECT_EQ(error_code_of(ev.back()), "provider_unavailable") << ev.back();
  const auto& s = only_settle();
  EXPECT_EQ(s.kind, store::SettleKind::usage_missing);
  EXPECT_EQ(s.provider_request_id, "resp_s")
      << "kept for reconciliation and for the buyer's own retrieval";
  EXPECT_FALSE(up.sent[0].released);
}

TEST_F(ResponsesFlow, AStreamEndingCleanlyWithoutATerminalEventIsUsagePending) {
  up.scripts.push_back(stream({created(), delta("a")}));
  const auto r = run(request(true));
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.event_names(),
            (std::vector<std::string>{"response.created", "response.output_text.delta"}));
  EXPECT_EQ(only_settle().kind, store::SettleKind::usage_missing);
}

TEST_F(ResponsesFlow, AConnectionLostAfterTheTerminalEventIsNotACut) {
  up.scripts.push_back(stream({created(), completed()}, ReadStatus::cut));
  const auto r = run(request(true));
  EXPECT_EQ(r.event_names().back(), "response.completed");
  EXPECT_EQ(only_settle().kind, store::SettleKind::usage);
}

TEST_F(ResponsesFlow, AStreamWhoseSettlementFailsNeverShowsItsTerminalEvent) {
  store.settle_error =
      make_error(ErrorCode::store_unavailable, "connection to server at \"127.0.0.1\" failed");
  up.scripts.push_back(stream({created(), completed()}));
  const auto r = run(request(true));
  EXPECT_EQ(r.event_names(), (std::vector<std::string>{"response.created", "error"}));
  EXPECT_EQ(error_code_of(r.events().back()), "store_unavailable");
  EXPECT_FALSE(r.keep);
}

TEST_F(ResponsesFlow, AProviderErrorReleasesTheHoldAndPassesOn) {
  Script s = ok_plain(
      R"({"error":{"message":"Invalid 'input'","type":"invalid_request_error","code":null}})");
  s.status = 400;
  up.scripts.push_back(s);
  const auto r = run(request(true));
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(
      r.body,
      R"({"error":{"message":"Invalid 'input'","type":"invalid_request_error","code":null}})");
  EXPECT_EQ(only_settle().kind, store::SettleKind::failed);
}

TEST_F(ResponsesFlow, ABackgroundRequestIsRefusedBeforeAdmission) {
  const auto r = run(request(false, R"(,"background":true)"));
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(error_code_of(r.body), "invalid_request");
  EXPECT_NE(r.body.find("background responses are not supported"), std::string::npos);
  EXPECT_TRUE(store.admits.empty());
  EXPECT_TRUE(up.sent.empty());
}

// ---------------------------------------------------------------- Embeddings (SPEC-APIS §2)

class EmbeddingsFlow : public Flow {
 protected:
  EmbeddingsFlow() {
    entry = &embeddings_create;
    store.admitted = core::Admitted{core::Tokens{13, 0}, 0, std::nullopt};
  }
  static constexpr std::string_view request =
      R"({"model":"m","input":["a","b"],"encoding_format":"float"})";
  static std::string list(bool with_usage = true) {
    return std::string(
               R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":"m")") +
           (with_usage ? R"(,"usage":{"prompt_tokens":8,"total_tokens":8})" : "") + "}";
  }
};

TEST_F(EmbeddingsFlow, HoldsNoOutputAndBooksPromptTokensUnderTheProvidersRequestId) {
  up.scripts.push_back(ok_plain(list()).field(Field::request_id, "req_provider_1"));
  const auto r = run(std::string(request));
  EXPECT_EQ(r.status, 200u);
  EXPECT_NE(r.body.find(R"("usage_source":"provider")"), std::string::npos) << r.body;
  ASSERT_EQ(store.admits.size(), 1u);
  EXPECT_FALSE(store.admits[0].facts.holds_output);
  EXPECT_FALSE(store.admits[0].stream);
  const auto& s = only_settle();
  EXPECT_EQ(s.kind, store::SettleKind::usage);
  EXPECT_EQ(s.provider_request_id, "req_provider_1");
  EXPECT_EQ(s.usage, (core::Tokens{8, 0}));
  ASSERT_EQ(up.sent.size(), 1u);
  EXPECT_EQ(up.sent[0].path, "/v1/embeddings");
  EXPECT_EQ(up.sent[0].body, request) << "nothing to rewrite";
}

TEST_F(EmbeddingsFlow, WithoutAnXRequestIdTheBookingKeyIsTheGatewaysId) {
  up.scripts.push_back(ok_plain(list()));
  run(std::string(request));
  EXPECT_EQ(only_settle().provider_request_id, "req_test");
}

TEST_F(EmbeddingsFlow, WithoutUsageItIsPendingAndSaysSo) {
  up.scripts.push_back(ok_plain(list(false)).field(Field::request_id, "req_provider_2"));
  const auto r = run(std::string(request));
  EXPECT_NE(r.body.find(R"("usage":null,"usage_source":"pending")"), std::string::npos) << r.body;
  EXPECT_EQ(only_settle().kind, store::SettleKind::usage_missing);
  EXPECT_EQ(only_settle().provider_request_id, "req_provider_2");
}

TEST_F(EmbeddingsFlow, AProviderErrorReleasesTheHold) {
  Script s = ok_plain(R"({"error":{"message":"too long","type":"invalid_request_error"}})");
  s.status = 400;
  up.scripts.push_back(s);
  EXPECT_EQ(run(std::string(request)).status, 400u);
  EXPECT_EQ(only_settle().kind, store::SettleKind::failed);
}

TEST_F(EmbeddingsFlow, AnIllTypedInputIsRefusedBeforeAdmission) {
  const auto r = run(R"({"model":"m","input":[1,"a"]})");
  EXPECT_EQ(r.status, 400u);
  EXPECT_EQ(error_code_of(r.body), "invalid_request");
  EXPECT_TRUE(store.admits.empty());
  EXPECT_TRUE(up.sent.empty());
}

// ---------------------------------------------------------------- Models (SPEC-APIS §3)

class ModelsFlow : public Flow {
 protected:
  ModelsFlow() {
    entry = [](const Gateway& g, upstream::Upstream& u, ClientExchange& e, const store::KeyGrant& k,
               std::string) {  // NOLINT(performance-unnecessary-value-param): Entry's type
      return list_models(g, u, e, k, "/v1/models?limit=5");
    };
  }
  static constexpr std::string_view provider_list =
      R"({"object":"list","data":[{"id":"gpt-x","object":"model","created":1,"owned_by":"system"}]})";
};

TEST_F(ModelsFlow, TheAgreementsModelsAnswerInTheOpenAIShapeWithoutAskingTheProvider) {
  grant.models = {"gpt-a", "gpt-b"};
  const auto r = run("");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(
      r.body,
      R"({"object":"list","data":[{"id":"gpt-a","object":"model","created":1600000000,"owned_by":"mock"},)"
      R"({"id":"gpt-b","object":"model","created":1600000000,"owned_by":"mock"}]})");
  EXPECT_TRUE(up.sent.empty());
  EXPECT_TRUE(store.settles.empty());
  EXPECT_TRUE(store.admits.empty());
  EXPECT_EQ(r.header("x-ratelimit-limit-requests"), "10");
}

TEST_F(ModelsFlow, AnAnthropicProvidersAgreementListIsInTheAnthropicShape) {
  gw.providers[0].kind = config::ProviderKind::anthropic;
  grant.models = {"claude-a"};
  const auto r = run("");
  EXPECT_EQ(
      r.body,
      R"({"data":[{"type":"model","id":"claude-a","display_name":"claude-a",)"
      R"("created_at":"2020-09-13T12:26:40Z"}],"has_more":false,"first_id":"claude-a","last_id":"claude-a"})");
  EXPECT_TRUE(up.sent.empty());
}

TEST_F(ModelsFlow, WithoutAnAgreementListTheProvidersOwnPassesThroughQueryAndAll) {
  up.scripts.push_back(ok_plain(std::string(provider_list)).field(Field::request_id, "req_up"));
  const auto r = run("");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.body, provider_list);
  EXPECT_EQ(r.header("x-request-id"), "req_up");
  ASSERT_EQ(up.sent.size(), 1u);
  EXPECT_EQ(up.sent[0].method, "GET");
  EXPECT_EQ(up.sent[0].path, "/v1/models?limit=5");
  EXPECT_EQ(up.sent[0].body, "");
  EXPECT_TRUE(up.sent[0].released);
  EXPECT_TRUE(store.settles.empty()) << "books nothing";
}

TEST_F(ModelsFlow, AProviderCredentialErrorBecomes502WithTheGatewaysMessage) {
  Script s = ok_plain(
      R"({"error":{"message":"Incorrect API key provided: sk-proj-****ab12","code":"invalid_api_key"}})");
  s.status = 401;
  up.scripts.push_back(s);
  const auto r = run("");
  EXPECT_EQ(r.status, 502u);
  EXPECT_EQ(r.body.find("sk-"), std::string::npos) << r.body;
  EXPECT_TRUE(store.settles.empty());
}

TEST_F(ModelsFlow, ANotFoundFromTheProviderPassesOnUnchanged) {
  Script s = ok_plain(R"({"error":{"message":"no such thing"}})");
  s.status = 404;
  up.scripts.push_back(s);
  const auto r = run("");
  EXPECT_EQ(r.status, 404u);
  EXPECT_EQ(r.body, R"({"error":{"message":"no such thing"}})");
}

TEST_F(ModelsFlow, ASuspendedDepletedOrExpiredAllocationIsRefusedAsAdmissionWould) {
  grant.models = {"gpt-a"};
  const std::vector<std::pair<core::AllocationState, std::string>> cases = {
      {core::AllocationState::suspended, "allocation_not_active"},
      {core::AllocationState::depleted, "allocation_depleted"},
      {core::AllocationState::expired, "allocation_expired"}};
  for (const auto& [state, code] : cases) {
    store.status.snapshot.state = state;
    const auto r = run("");
    EXPECT_EQ(error_code_of(r.body), code) << r.body;
  }
  EXPECT_TRUE(up.sent.empty());
}

// ---------------------------------------------------------------- Stored responses (SPEC-APIS §3)

class ResponseObjectFlow : public Flow {
 protected:
  // The request's method and target, as the session hands them over.
  static inline std::string method = "GET";
  static inline std::string target;
  ResponseObjectFlow() {
    method = "GET";
    entry = [](const Gateway& g, upstream::Upstream& u, ClientExchange& e, const store::KeyGrant& k,
               std::string) {  // NOLINT(performance-unnecessary-value-param): Entry's type
      return response_object(g, u, e, k, method, target);
    };
    store.owned.insert({"alloc_1", "resp_mine"});
  }
  static constexpr std::string_view stored =
      R"({"id":"resp_mine","object":"response","status":"completed"})";
};

TEST_F(ResponseObjectFlow, TheAllocationsOwnResponseIsForwardedWithItsQuery) {
  for (const std::string t :
       {"/v1/responses/resp_mine", "/v1/responses/resp_mine?include[]=file_search_call.results",
        "/v1/responses/resp_mine/input_items?after=msg_1&limit=2"}) {
    up.sent.clear();
    target = t;
    up.scripts.push_back(ok_plain(std::string(stored)));
    const auto r = run("");
    EXPECT_EQ(r.status, 200u) << t;
    EXPECT_EQ(r.body, stored);
    ASSERT_EQ(up.sent.size(), 1u);
    EXPECT_EQ(up.sent[0].method, "GET");
    EXPECT_EQ(up.sent[0].path, t) << "the provider's base path is /v1 too";
  }
  EXPECT_TRUE(store.settles.empty()) << "books nothing";
  EXPECT_TRUE(store.admits.empty());
}

TEST_F(ResponseObjectFlow, DeleteIsForwardedAsADelete) {
  method = "DELETE";
  target = "/v1/responses/resp_mine";
  up.scripts.push_back(ok_plain(R"({"id":"resp_mine","object":"response","deleted":true})"));
  EXPECT_EQ(run("").status, 200u);
  ASSERT_EQ(up.sent.size(), 1u);
  EXPECT_EQ(up.sent[0].method, "DELETE");
}

TEST_F(ResponseObjectFlow, AnyOtherIdIs404WithoutAskingTheProvider) {
  store.owned.insert({"alloc_2", "resp_theirs"});
  for (const std::string t : {"/v1/responses/resp_theirs", "/v1/responses/resp_theirs/input_items",
                              "/v1/responses/resp_nobody?x=1"}) {
    target = t;
    const auto r = run("");
    EXPECT_EQ(r.status, 404u) << t;
    EXPECT_EQ(error_code_of(r.body), "not_found");
  }
  EXPECT_EQ(store.ownership_asked,
            (std::vector<std::string>{"resp_theirs", "resp_theirs", "resp_nobody"}));
  EXPECT_TRUE(up.sent.empty());
}

TEST_F(ResponseObjectFlow, AnIdThatCouldChangeTheProvidersPathIsNobodys) {
  store.owned.insert({"alloc_1", ".."});
  store.owned.insert({"alloc_1", "resp_mine%2F..%2Fresp_theirs"});
  for (const std::string t : {"/v1/responses/..", "/v1/responses/resp_mine%2F..%2Fresp_theirs"}) {
    target = t;
    EXPECT_EQ(run("").status, 404u) << t;
  }
  EXPECT_TRUE(store.ownership_asked.empty()) << "refused before the store is asked";
  EXPECT_TRUE(up.sent.empty());
}

TEST_F(ResponseObjectFlow, AStoreOutageIs503NotA404) {
  store.owns_error =
      make_error(ErrorCode::store_unavailable, "connection to server at \"127.0.0.1\" failed");
  target = "/v1/responses/resp_mine";
  const auto r = run("");
  EXPECT_EQ(r.status, 503u);
  EXPECT_EQ(r.body.find("127.0.0.1"), std::string::npos);
  EXPECT_TRUE(up.sent.empty());
}

TEST_F(ResponseObjectFlow, ASuspendedAllocationIsRefusedBeforeOwnershipIsAsked) {
  store.status.snapshot.state = core::AllocationState::suspended;
  target = "/v1/responses/resp_mine";
  const auto r = run("");
  EXPECT_EQ(r.status, 403u);
  EXPECT_EQ(error_code_of(r.body), "allocation_not_active");
  EXPECT_TRUE(store.ownership_asked.empty());
}

TEST_F(ResponseObjectFlow, TheProvidersNotFoundForAnOwnedIdPassesOn) {
  Script s = ok_plain(
      R"({"error":{"message":"Response with id 'resp_mine' not found.","type":"invalid_request_error"}})");
  s.status = 404;
  up.scripts.push_back(s);
  target = "/v1/responses/resp_mine";
  const auto r = run("");
  EXPECT_EQ(r.status, 404u);
  EXPECT_NE(r.body.find("Response with id 'resp_mine' not found."), std::string::npos);
}

}  // namespace
}  // namespace cairva::gateway
