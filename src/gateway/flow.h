// The flow of one admitted request, the same for every API (STYLE "Several APIs, one
// flow"): admission under the allocation's lock, then forward through the upstream seam,
// relay the response in the dialect's codec (wire/codec.h), settle. Each API's entry point
// (chat.cpp, and one file per other API) reads its request, calls admit() and runs a
// Flow<C>; a dialect is a codec, never a branch here.
#pragma once

#include <algorithm>
#include <boost/asio/write.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <charconv>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "gateway/exchange.h"
#include "gateway/gateway.h"
#include "gateway/limits.h"
#include "gateway/open_requests.h"
#include "gateway/store_await.h"
#include "http/executor.h"
#include "http/limits.h"
#include "http/message_head.h"
#include "metrics/metrics.h"
#include "store/rows.h"
#include "upstream/upstream.h"
#include "wire/codec.h"
#include "wire/errors.h"

namespace cairva::gateway {

// Answers `code` for a request refused before its admission, with exact x-ratelimit-*
// headers (ex.rate from the allocation's current status; the limits alone on a store
// error). A provisional grant (Store::authenticate_for_admission) is checked first: a key
// revoked since gets 401 invalid_api_key, as a revoked key must at once; a store that
// cannot say gets 503 store_unavailable.
http::Task<bool> refuse_before_admission(const Gateway& gw, ClientExchange& ex,
                                         const store::KeyGrant& grant, ErrorCode code,
                                         std::string_view message);

// What admission decided; `admitted` empty when the request was refused (already answered,
// `keep` saying whether the connection stays open).
struct Admission {
  std::optional<core::Admitted> admitted;
  bool keep = false;
};

// Admission, the same for every API: the agreement's model list and service tiers, then
// the store's decision under the allocation's lock. Answers a refusal itself.
http::Task<Admission> admit(const Gateway& gw, ClientExchange& ex, const store::KeyGrant& grant,
                            const std::string& model,
                            const std::optional<std::string>& service_tier, bool stream,
                            const core::RequestFacts& facts);

namespace flow_detail {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using http::Task;
using http::task_nothrow;
using upstream::Field;
using upstream::ProviderEndpoint;
using upstream::ReadStatus;

inline bool is_2xx(unsigned status) { return status >= 200 && status < 300; }

static_assert(http::provider_body_bytes_max == size_t{64} << 20,
              "the message below names the limit");

// What the client is told when a provider's body could not be read whole.
inline const char* unread_body_message(ReadStatus s, const char* cut_off) {
  return s == ReadStatus::too_large ? "provider response exceeds 64 MiB" : cut_off;
}

// What the buyer reads when the grant's provider is not in this gateway's config.
inline std::string unconfigured_message(const store::KeyGrant& grant) {
  return "provider \"" + grant.provider + "\" is not configured";
}

// What the buyer reads when the settlement failed; the store's text goes to the log.
constexpr std::string_view unrecorded_message =
    "usage could not be recorded; the request is kept for reconciliation";

// Why the gateway cut a stream: the error event that ends it.
struct Cut {
  ErrorCode code;
  std::string_view message;
};

// A provider's Retry-After in seconds, when it is one (digits, at most a day); else 0.
inline int retry_after_seconds(std::string_view v) {
  constexpr int retry_after_s_max = 86400;
  int s = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
  if (ec != std::errc() || end != v.data() + v.size() || s <= 0) return 0;
  return std::min(s, retry_after_s_max);
}

// The flow of one admitted request, the same for every API: forward it through the
// upstream seam, relay the response in the dialect's codec C, settle. A dialect is a
// codec (wire/codec.h), never a branch here.
template <wire::Codec C>
struct Flow {
  const Gateway& gw;
  upstream::Upstream& upstream;
  ClientExchange& ex;
  const store::KeyGrant& grant;
  const ProviderEndpoint* provider = nullptr;  // set before send()
  std::optional<int64_t> lowered_to;
  UnixMicros deadline_mono = 0;             // in_flight_timeout_s after admission, monotonic
  std::unique_ptr<upstream::Response> res;  // the provider's response, head then body
  std::span<const upstream::Header> forward_headers;  // the client's, passed on (anthropic-version)
  OpenRequests::Entry* open = nullptr;  // while run() forwards: what the end of a drain settles
  bool provider_id_noted = false;

  // The flow for the grant's provider (null when it is not configured), its deadline
  // in_flight_timeout_s from now.
  static Flow start(const Gateway& gw, upstream::Upstream& upstream, ClientExchange& ex,
                    const store::KeyGrant& grant) {
    return Flow{gw,
                upstream,
                ex,
                grant,
                gw.find_provider(grant.provider),
                std::nullopt,
                gw.clock.monotonic_micros() + gw.config.in_flight_timeout_s * micros_per_second};
  }

  // An admitted request whose provider is not configured: settled failed, answered 502.
  Task<bool> refuse_unconfigured() {
    co_await settle(store::SettleKind::failed);
    co_return co_await ex.send_error(ErrorCode::provider_unavailable, unconfigured_message(grant));
  }

  Task<Result<store::SettleResult>> settle(store::SettleKind kind,
                                           std::string provider_request_id = {},
                                           core::Tokens usage = {}) {
    store::SettleCommand cmd{ex.request_id, grant.allocation_id, kind, provider_request_id, usage};
    auto start = [this, &cmd](store::Callback<store::SettleResult> cb) {
      gw.store.settle(std::move(cmd), std::move(cb));
    };
    const int64_t asked_at = gw.clock.monotonic_micros();
    auto settled = co_await await_store<store::SettleResult>(start);
    metrics::registry().observe_store_wait_us(metrics::StoreWait::settle,
                                              gw.clock.monotonic_micros() - asked_at);
    if (!settled) {
      // The provider's report is kept and settled again until the store records it.
      if (gw.settlement_retry != nullptr) {
        gw.settlement_retry->keep(
            {ex.request_id, grant.allocation_id, kind, std::move(provider_request_id), usage},
            settled.error());
      }
      co_return settled;
    }
    ex.outcome = core::to_string(settled->request_state);
    // The gateway's own id stands in for none: the line shows none.
    if (gw.access_log != nullptr && provider_request_id != ex.request_id)
      ex.provider_request_id = provider_request_id;
    if (kind == store::SettleKind::usage) {
      metrics::registry().count_booking(settled->book, usage);
      if (settled->book == core::BookResult::booked) ex.booked = usage;
    } else if (kind == store::SettleKind::usage_missing) {
      metrics::registry().count_usage_missing();
    }
    co_return settled;
  }

  // Books `usage` when the provider reported it, else leaves the request usage_pending.
  // Not a coroutine: settle's own awaitable, one frame fewer. (And one call: GCC 12
  // destroys the result of a co_await inside ?: twice.)
  Task<Result<store::SettleResult>> settle_reported(const std::optional<core::Tokens>& usage,
                                                    std::string provider_request_id) {
    // The provider's id is kept for usage_missing too: reconciliation books under it.
    const auto kind = usage ? store::SettleKind::usage : store::SettleKind::usage_missing;
    return settle(kind, std::move(provider_request_id), usage.value_or(core::Tokens{}));
  }

  // The client's response head: the provider's status and the fields it passes on
  // (x-request-id, openai-processing-ms, Anthropic's request-id).
  http::MessageHead client_head() const {
    // A provider status no client could read as a final answer is passed on as a 502.
    unsigned status = res->status();
    if (status < 200 || status > 599) status = 502;
    auto h = ex.head(static_cast<int>(status));
    if (lowered_to) h.add("x-cairva-max-tokens-lowered", *lowered_to);
    if (res->has_field(Field::request_id)) h.add("x-request-id", res->field(Field::request_id));
    if (res->has_field(Field::processing_ms))
      h.add("openai-processing-ms", res->field(Field::processing_ms));
    if (res->has_field(Field::anthropic_request_id))
      h.add("request-id", res->field(Field::anthropic_request_id));
    return h;
  }

  std::chrono::steady_clock::duration until_deadline() const {
    return std::chrono::microseconds(
        std::max<int64_t>(0, deadline_mono - gw.clock.monotonic_micros()));
  }

  // The provider's id, the first time a stream shows one: recorded on the in-flight request
  // at once, not awaited (Store::note_provider_id), so that a request this process never
  // settles (killed, or cut at the end of a drain) carries it. The settlement records it too.
  void note_provider_id(std::string_view id) {
    if (!wire::usable_provider_id(id)) return;
    provider_id_noted = true;
    if (open != nullptr) open->set_provider_request_id(id);
    gw.store.note_provider_id({ex.request_id, grant.allocation_id, std::string(id)}, {});
  }

  // Sends the request and receives the response's head into `res`.
  Task<Status> send(std::string_view path, std::string_view body,
                    std::string_view method = "POST") {
    upstream::Request req{path, ex.request_id, body,
                          std::min<std::chrono::steady_clock::duration>(
                              std::chrono::seconds(provider->timeout_s), until_deadline())};
    req.method = method;
    req.headers = forward_headers;
    auto sent = co_await upstream.send(*provider, req);
    if (!sent) co_return sent.error();
    res = std::move(*sent);
    co_return Status{};
  }

  // The booking key (SPEC "Accounting"): the response's id, else the provider's
  // x-request-id (Anthropic's request-id), else the gateway's request id; one no store
  // could keep counts as absent.
  std::string provider_request_id(std::string_view from_body) const {
    for (const std::string_view id :
         {from_body, res->field(Field::request_id), res->field(Field::anthropic_request_id)}) {
      if (wire::usable_provider_id(id)) return std::string(id);
    }
    return ex.request_id;
  }

  // Hands the connection back for reuse when its exchange ended cleanly, else closes it.
  void release(bool clean) {
    if (res && clean) upstream.release(*provider, std::move(res));
    res.reset();
  }

  // A provider error status: release the hold, pass the provider's status and body on,
  // except errors about the supplier's own account (SPEC §5): 401/403 become 502
  // provider_unavailable and a 429 keeps its status and Retry-After, each with the
  // gateway's own body; the provider's body is for operators (the log) only.
  Task<bool> relay_provider_error(ReadStatus read) {
    // A failed settlement is kept and settled again (settle()); the client gets the
    // provider's answer meanwhile.
    co_await settle(store::SettleKind::failed);
    co_return co_await relay_error(read);
  }

  // The provider's error answer as the client gets it (relay_provider_error, without a
  // settlement: also for calls that book nothing).
  Task<bool> relay_error(ReadStatus read) {
    const unsigned status = res->status();
    if (status == 401 || status == 403 || status == 429) {
      log_provider_body(status);
      const int retry_after_s =
          status == 429 ? retry_after_seconds(res->field(Field::retry_after)) : 0;
      release(read == ReadStatus::ok && res->keep_alive());
      if (status == 429) {
        co_return co_await ex.send_error(ErrorCode::rate_limited,
                                         "the provider is rate limiting this capacity; retry later",
                                         {}, retry_after_s);
      }
      co_return co_await ex.send_error(
          ErrorCode::provider_unavailable,
          "the provider refused the supplier's credentials; the operator must fix them");
    }
    if (read != ReadStatus::ok) {
      release(false);
      co_return co_await ex.send_error(
          ErrorCode::provider_unavailable,
          unread_body_message(read, "provider error response was cut off"));
    }
    auto head = client_head();
    std::string body = std::move(res->body());
    release(res->keep_alive());
    co_return co_await ex.send_json(std::move(head), std::move(body));
  }

  // Writes the provider's error body to the log, bounded, with the supplier's key (should
  // the provider echo it) masked.
  void log_provider_body(unsigned status) const {
    std::string body = res->body().substr(0, provider_error_log_bytes_max);
    constexpr std::string_view bearer = "Bearer ";
    std::string_view key = provider->x_api_key;
    if (provider->authorization.size() > bearer.size())
      key = std::string_view(provider->authorization).substr(bearer.size());
    if (!key.empty()) {
      for (size_t at = body.find(key); at != std::string::npos; at = body.find(key, at)) {
        body.replace(at, key.size(), "[supplier key]");
      }
    }
    ex.log_error("provider " + provider->name + " answered " + std::to_string(status), body);
  }

  Task<bool> plain() {
    res->expires_after(until_deadline());
    auto read = res->body_buffered(http::provider_body_bytes_max);
    if (!read) {
      const auto outcome = co_await res->read_body();
      read = res->status_of(outcome);
    }
    // Either error path below drops the connection: a body left unread spends it.
    if (!is_2xx(res->status())) co_return co_await relay_provider_error(*read);
    if (*read != ReadStatus::ok) {
      // The provider accepted the work but the body was lost: it may have been billed.
      release(false);
      co_await settle(store::SettleKind::usage_missing);
      co_return co_await ex.send_error(ErrorCode::provider_unavailable,
                                       unread_body_message(*read, "provider response was cut off"));
    }
    auto head = client_head();
    std::string body = std::move(res->body());
    auto info = C::read_response(body);
    if (!info) {
      release(res->keep_alive());
      co_await settle(store::SettleKind::usage_missing);
      co_return co_await ex.send_error(ErrorCode::provider_unavailable,
                                       "provider sent a malformed response");
    }
    std::string provider_id = provider_request_id(info->id);
    release(res->keep_alive());
    auto settled = co_await settle_reported(info->usage, std::move(provider_id));
    if (!settled) {
      ex.log_error("settlement failed", settled.error().message);
      co_return co_await ex.send_error(ErrorCode::store_unavailable, unrecorded_message);
    }
    co_return co_await ex.send_json(std::move(head), C::with_usage_source(body, *info));
  }

  // Writes one chunk to the client unless it has gone; a client that goes away does not
  // stop the relay: the provider's stream is still read so that the usage is booked.
  Task<void> to_client(std::string_view bytes, bool& client_ok) {
    if (!client_ok || bytes.empty()) co_return;
    ex.deadline.expires_after(std::chrono::seconds(http::client_write_timeout_s));
    auto [ec, n] =
        co_await net::async_write(ex.stream, bhttp::make_chunk(net::buffer(bytes)), task_nothrow);
    if (ec) client_ok = false;
  }

  // Ends the client's chunked body after `out`, which ends the stream without [DONE]
  // (an error event). The connection closes: the exchange did not end as the client asked.
  Task<bool> end_with_error(std::string& out, bool& client_ok) {
    co_await to_client(out, client_ok);
    if (client_ok) co_await net::async_write(ex.stream, bhttp::make_chunk_last(), task_nothrow);
    co_return false;
  }

  Task<bool> streamed(bool client_wants_usage) {
    auto h = client_head();
    h.add("Content-Type", "text/event-stream");
    h.add("Cache-Control", "no-cache");
    ex.status_sent = static_cast<int>(h.status());
    ex.deadline.expires_after(std::chrono::seconds(http::client_write_timeout_s));
    auto [hec, hn] = co_await net::async_write(
        ex.stream, net::buffer(h.finish_chunked(ex.keep_open())), task_nothrow);
    bool client_ok = !hec;

    res->hold_at_most(http::stream_read_buffer_bytes);
    typename C::Relay relay(client_wants_usage);
    std::string out;
    std::optional<Cut> cut;
    while (!res->complete()) {
      res->expires_after(until_deadline());
      const auto outcome = co_await res->read_some();
      const int64_t read_at = gw.clock.monotonic_micros();
      const ReadStatus read = res->status_of(outcome);
      std::string& piece = res->body();
      const bool fed = piece.empty() || relay.feed(piece, out);
      piece.clear();
      if (!fed) {
        cut = Cut{ErrorCode::provider_unavailable,
                  "the provider sent a stream event over the gateway's size bound"};
        break;
      }
      if (!out.empty() && client_ok) {
        co_await to_client(out, client_ok);
        if (client_ok)
          metrics::registry().observe_stream_relay_us(gw.clock.monotonic_micros() - read_at);
      }
      out.clear();
      if (!provider_id_noted) note_provider_id(relay.provider_id());
      if (read == ReadStatus::timeout) {
        cut = Cut{ErrorCode::provider_timeout,
                  "the request exceeded the gateway's in-flight timeout"};
        break;
      }
      if (read != ReadStatus::ok) {
        // A provider whose stream already ended ([DONE]) and then lost its connection
        // sent everything: not a cut.
        if (!relay.done_seen())
          cut = Cut{ErrorCode::provider_unavailable, "the provider's stream was cut off"};
        break;
      }
    }
    std::string provider_id = provider_request_id(relay.provider_id());
    release(res->complete() && res->keep_alive());
    auto settled = co_await settle_reported(relay.usage(), std::move(provider_id));
    if (!settled) {
      // Without a durable booking the client must not see a successful end: the stream
      // ends with an error event and no [DONE]. settle() kept the report, to be settled
      // again once the store answers (meanwhile the request stays open, its hold kept).
      ex.log_error("settlement failed", settled.error().message);
      C::append_stream_error(out, ErrorCode::store_unavailable, unrecorded_message);
      co_return co_await end_with_error(out, client_ok);
    }
    if (cut) {
      relay.finish_cut(out);
      C::append_stream_error(out, cut->code, cut->message);
      co_return co_await end_with_error(out, client_ok);
    }
    relay.finish(out);
    co_await to_client(out, client_ok);
    if (!client_ok) co_return false;
    auto [lec, ln] = co_await net::async_write(ex.stream, bhttp::make_chunk_last(), task_nothrow);
    co_return !lec && ex.keep_open();
  }

  // A call that books nothing (SPEC-APIS §3: GET /v1/models, the stored response objects,
  // POST /v1/messages/count_tokens): `method` `path` with `request_body` (none for a GET or
  // DELETE), the provider's answer relayed as it is (its errors as relay_error gives them),
  // no settlement. C is not used.
  Task<bool> unbilled(std::string_view method, std::string_view path,
                      std::string_view request_body = {}) {
    auto sent = co_await send(path, request_body, method);
    if (!sent) co_return co_await ex.send_error(sent.error().code, sent.error().message);
    res->expires_after(until_deadline());
    auto read = res->body_buffered(http::provider_body_bytes_max);
    if (!read) {
      const auto outcome = co_await res->read_body();
      read = res->status_of(outcome);
    }
    if (!is_2xx(res->status())) co_return co_await relay_error(*read);
    if (*read != ReadStatus::ok) {
      release(false);
      co_return co_await ex.send_error(ErrorCode::provider_unavailable,
                                       unread_body_message(*read, "provider response was cut off"));
    }
    auto head = client_head();
    std::string answer = std::move(res->body());
    release(res->keep_alive());
    co_return co_await ex.send_json(std::move(head), std::move(answer));
  }

  // Forwards the admitted request's `body` to `path` and answers the client.
  Task<bool> run(std::string_view path, std::string_view body, bool stream,
                 bool client_wants_usage) {
    OpenRequests::Entry entry(ex.open_requests, ex.request_id, grant.allocation_id);
    open = &entry;
    const int64_t sent_at = gw.clock.monotonic_micros();
    auto sent = co_await send(path, body);
    metrics::registry().observe_provider_latency_us(gw.clock.monotonic_micros() - sent_at);
    if (!sent) {
      co_await settle(store::SettleKind::failed);
      co_return co_await ex.send_error(sent.error().code, sent.error().message);
    }
    if (stream && is_2xx(res->status())) co_return co_await streamed(client_wants_usage);
    co_return co_await plain();
  }
};

}  // namespace flow_detail

using flow_detail::Flow;
using flow_detail::unconfigured_message;

}  // namespace cairva::gateway
