#include "gateway/chat.h"

#include <algorithm>
#include <array>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "admin/metrics.h"
#include "core/estimate.h"
#include "gateway/store_await.h"
#include "http/limits.h"
#include "http/message_head.h"
#include "http/message_reader.h"
#include "wire/chat_request.h"
#include "wire/completion.h"
#include "wire/errors.h"
#include "wire/sse.h"

namespace cairva::gateway {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using upstream::UpstreamConnection;
using upstream::ProviderEndpoint;
using http::Task;
using http::task_nothrow;

bool is_2xx(unsigned status) { return status >= 200 && status < 300; }

static_assert(http::provider_body_bytes_max == size_t{64} << 20, "the message below names the limit");

// What the client is told when a provider's body could not be read whole.
const char* unread_body_message(boost::system::error_code ec, const char* cut_off) {
  return ec == bhttp::error::body_limit ? "provider response exceeds 64 MiB" : cut_off;
}

struct Flow {
  const Gateway& gw;
  upstream::UpstreamPool& pool;
  ClientExchange& ex;
  const store::KeyGrant& grant;
  const ProviderEndpoint* provider = nullptr;
  std::optional<int64_t> lowered_to;
  UnixMicros deadline_mono = 0;  // in_flight_timeout_s after admission, monotonic
  std::unique_ptr<UpstreamConnection> conn;
  std::optional<http::ResponseReader> head;  // the provider's response, header then body

  Task<Result<store::SettleResult>> settle(store::SettleKind kind, std::string provider_request_id = {},
                                                     core::Tokens usage = {}) {
    store::SettleCommand cmd{ex.request_id, grant.allocation_id, kind, provider_request_id, usage};
    auto start = [this, &cmd](store::Callback<store::SettleResult> cb) { gw.store.settle(std::move(cmd), std::move(cb)); };
    const int64_t asked_at = gw.clock.monotonic_micros();
    auto settled = co_await await_store<store::SettleResult>(start);
    admin::metrics().observe_store_wait_us(admin::StoreWait::settle, gw.clock.monotonic_micros() - asked_at);
    if (!settled) {
      // The provider's report is kept and settled again until the store records it.
      if (gw.settlement_retry != nullptr) {
        gw.settlement_retry->keep({ex.request_id, grant.allocation_id, kind, std::move(provider_request_id), usage},
                                  settled.error());
      }
      co_return settled;
    }
    ex.outcome = core::to_string(settled->request_state);
    if (kind == store::SettleKind::usage) {
      admin::metrics().count_booking(settled->book, usage);
      if (settled->book == core::BookResult::booked) ex.booked = usage;
    } else if (kind == store::SettleKind::usage_missing) {
      admin::metrics().count_usage_missing();
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
  // (x-request-id, openai-processing-ms).
  http::MessageHead client_head() const {
    // A provider status no client could read as a final answer is passed on as a 502.
    unsigned status = head->status();
    if (status < 200 || status > 599) status = 502;
    auto h = ex.head(static_cast<int>(status));
    if (lowered_to) h.add("x-cairva-max-tokens-lowered", *lowered_to);
    for (size_t i = 0; i < http::ResponseReader::kept_fields.size(); ++i) {
      if (head->has_field(i)) h.add(http::ResponseReader::kept_fields[i], head->field(i));
    }
    return h;
  }

  std::chrono::steady_clock::duration until_deadline() const {
    return std::chrono::microseconds(std::max<int64_t>(0, deadline_mono - gw.clock.monotonic_micros()));
  }

  // Sends the request and reads the provider's response headers into `head`. A pooled
  // connection that the provider closed while idle fails before any response byte: that
  // one attempt is retried on a fresh connection.
  Task<Status> send_upstream(std::string& body) {
    for (int attempt = 0;; ++attempt) {
      conn = pool.take_idle(*provider);
      if (!conn) {
        auto connected = co_await pool.connect(*provider);
        if (!connected) co_return connected.error();
        conn = std::move(*connected);
      }
      auto req = http::MessageHead::request("POST", provider->chat_path);
      req.add("Host", provider->host_header);
      req.add("Content-Type", "application/json");
      req.add("Accept", "application/json, text/event-stream");
      if (!provider->authorization.empty()) req.add("Authorization", provider->authorization);
      req.add("x-cairva-request-id", ex.request_id);
      const std::string& head_text = req.finish(body.size(), true);
      // The body is referenced, not copied: it outlives the exchange and a retry reuses it.
      const std::array<net::const_buffer, 2> bytes{net::buffer(head_text), net::buffer(body)};
      conn->expires_after(std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(provider->timeout_s),
                                                                        until_deadline()));
      const auto wrote = co_await conn->write(bytes);
      auto ec = conn->error_of(wrote);
      if (!ec) {
        head.emplace();
        head->header_limit(static_cast<std::uint32_t>(http::provider_header_bytes_max));
        head->body_limit(boost::none);
        const auto read = co_await conn->read_header(*head);
        ec = conn->error_of(read);
      }
      if (!ec) co_return Status{};
      const bool idle_close = ec == bhttp::error::end_of_stream || ec == net::error::eof ||
                              ec == net::error::connection_reset || ec == net::error::broken_pipe;
      if (conn->reused && idle_close && attempt == 0) continue;
      conn.reset();
      if (ec == beast::error::timeout) {
        co_return make_error(ErrorCode::provider_timeout, "provider " + provider->name + " did not respond in time");
      }
      co_return make_error(ErrorCode::provider_unavailable, "provider " + provider->name + " failed: " + ec.message());
    }
  }

  // The booking key (SPEC "Accounting"): the response's id, else the provider's
  // x-request-id, else the gateway's request id; one no store could keep counts as absent.
  std::string provider_request_id(std::string_view from_body) const {
    for (const std::string_view id : {from_body, head->field(http::ResponseReader::request_id_field)}) {
      if (wire::usable_provider_id(id)) return std::string(id);
    }
    return ex.request_id;
  }

  void maybe_release(bool clean) {
    if (conn && clean) pool.release(*provider, std::move(conn));
    conn.reset();
  }

  // A provider error status: release the hold, pass the provider's status and body on.
  Task<bool> relay_provider_error(boost::system::error_code ec) {
    // A failed settlement is kept and settled again (settle()); the client gets the
    // provider's answer meanwhile.
    co_await settle(store::SettleKind::failed);
    maybe_release(!ec && head->keep_alive());
    if (ec) {
      co_return co_await ex.send_error(ErrorCode::provider_unavailable,
                                       unread_body_message(ec, "provider error response was cut off"));
    }
    co_return co_await ex.send_json(client_head(), std::move(head->body()));
  }

  Task<bool> plain() {
    auto& p = *head;
    // Beast compares an announced Content-Length with the body limit only as the header
    // completes, and the header was read without one (a stream has none): compare here,
    // before a body byte is read, or a provider announcing 1 TiB would be read to its end.
    const auto announced = p.content_length();
    boost::system::error_code ec;
    if (announced && *announced > http::provider_body_bytes_max) {
      ec = bhttp::error::body_limit;
    } else {
      p.body_limit(http::provider_body_bytes_max);  // no body byte parsed yet: Beast allows it
      conn->expires_after(until_deadline());
      if (!conn->parse_buffered(p, ec)) {
        const auto read = co_await conn->read(p);
        ec = conn->error_of(read);
      }
    }
    // Either error path below drops the connection: a body left unread spends it.
    if (!is_2xx(p.status())) co_return co_await relay_provider_error(ec);
    if (ec) {
      // The provider accepted the work but the body was lost: it may have been billed.
      conn.reset();
      co_await settle(store::SettleKind::usage_missing);
      co_return co_await ex.send_error(ErrorCode::provider_unavailable,
                                       unread_body_message(ec, "provider response was cut off"));
    }
    maybe_release(p.keep_alive());
    auto& body = p.body();
    auto info = wire::read_completion(body);
    if (!info) {
      co_await settle(store::SettleKind::usage_missing);
      co_return co_await ex.send_error(ErrorCode::provider_unavailable, "provider sent a malformed response");
    }
    auto settled = co_await settle_reported(info->usage, provider_request_id(info->id));
    if (!settled) co_return co_await ex.send_error(ErrorCode::store_unavailable, "usage could not be recorded: " + settled.error().message);
    co_return co_await ex.send_json(client_head(), wire::with_usage_source(body, *info, !info->usage.has_value()));
  }

  // Writes one chunk to the client unless it has gone; a client that goes away does not
  // stop the relay: the provider's stream is still read so that the usage is booked.
  Task<void> to_client(std::string_view bytes, bool& client_ok) {
    if (!client_ok || bytes.empty()) co_return;
    ex.deadline.expires_after(std::chrono::seconds(http::client_write_timeout_s));
    auto [ec, n] = co_await net::async_write(ex.stream, bhttp::make_chunk(net::buffer(bytes)), task_nothrow);
    if (ec) client_ok = false;
  }

  Task<bool> streamed(bool client_wants_usage) {
    auto res = client_head();
    res.add("Content-Type", "text/event-stream");
    res.add("Cache-Control", "no-cache");
    ex.status_sent = static_cast<int>(res.status());
    ex.deadline.expires_after(std::chrono::seconds(http::client_write_timeout_s));
    auto [hec, hn] = co_await net::async_write(ex.stream, net::buffer(res.finish_chunked(ex.keep_alive)), task_nothrow);
    bool client_ok = !hec;

    auto& p = *head;
    p.body_limit(boost::none);  // a stream is bounded by time (in-flight timeout), not size
    p.hold_at_most(http::stream_read_buffer_bytes);
    wire::StreamRelay relay(client_wants_usage);
    std::string out;
    bool cut = false;
    while (!p.is_done()) {
      conn->expires_after(until_deadline());
      const auto read = co_await conn->read_some(p);
      const int64_t read_at = gw.clock.monotonic_micros();
      auto ec = conn->error_of(read);
      if (ec == bhttp::error::need_buffer) ec = {};
      const bool fed = p.body().empty() || relay.feed(p.body(), out);
      p.body().clear();
      if (!fed) {
        cut = true;  // an event over the size bound: treat the stream as cut off
        break;
      }
      if (!out.empty() && client_ok) {
        co_await to_client(out, client_ok);
        if (client_ok) admin::metrics().observe_stream_relay_us(gw.clock.monotonic_micros() - read_at);
      }
      out.clear();
      if (ec) {
        cut = true;
        break;
      }
    }
    maybe_release(!cut && p.keep_alive());
    auto settled = co_await settle_reported(relay.usage(), provider_request_id(relay.provider_id()));
    if (!settled) {
      // Without a durable booking the client must not see a successful end: the stream
      // ends with an error event and no [DONE]. settle() kept the report, to be settled
      // again once the store answers (meanwhile the request stays open, its hold kept).
      out = "data: " + wire::error_body(ErrorCode::store_unavailable, "usage could not be recorded: " + settled.error().message) + "\n\n";
      co_await to_client(out, client_ok);
      if (client_ok) co_await net::async_write(ex.stream, bhttp::make_chunk_last(), task_nothrow);
      co_return false;
    }
    relay.finish(out);
    co_await to_client(out, client_ok);
    if (!client_ok) co_return false;
    auto [lec, ln] = co_await net::async_write(ex.stream, bhttp::make_chunk_last(), task_nothrow);
    co_return !lec && ex.keep_alive;
  }
};

}  // namespace

Task<bool> refuse_before_admission(const Gateway& gw, ClientExchange& ex, const store::KeyGrant& grant,
                                   ErrorCode code, std::string_view message) {
  if (grant.provisional) {
    const std::string hash(ex.key_hash);
    auto start = [&gw, &hash](store::Callback<store::KeyGrant> cb) { gw.store.authenticate(hash, std::move(cb)); };
    auto fresh = co_await await_store<store::KeyGrant>(start);
    if (!fresh) co_return co_await ex.send_error(ErrorCode::invalid_api_key, fresh.error().message);
  }
  auto start = [&gw, &grant](store::Callback<store::AllocationStatus> cb) {
    gw.store.allocation_status(grant.allocation_id, std::move(cb));
  };
  auto status = co_await await_store<store::AllocationStatus>(start);
  if (status) ex.rate = status->snapshot;
  co_return co_await ex.send_error(code, message);
}

Task<bool> chat_completion(const Gateway& gw, upstream::UpstreamPool& pool, ClientExchange& ex,
                                     const store::KeyGrant& grant, std::string body) {
  auto inspected = wire::inspect_chat_request(body);
  if (!inspected) co_return co_await refuse_before_admission(gw, ex, grant, ErrorCode::invalid_request, inspected.error().message);
  const wire::ChatRequest& chat = *inspected;
  const std::string model(chat.model);
  if (!grant.models.empty() && std::find(grant.models.begin(), grant.models.end(), model) == grant.models.end()) {
    co_return co_await refuse_before_admission(gw, ex, grant, ErrorCode::model_not_allowed,
                                               "model \"" + model + "\" is not in this agreement's models");
  }
  store::AdmitCommand cmd;
  cmd.request_id = ex.request_id;
  cmd.allocation_id = grant.allocation_id;
  cmd.key_id = grant.key_id;
  cmd.model = model;
  cmd.stream = chat.stream;
  cmd.facts = core::RequestFacts{core::input_estimate(chat.prompt), chat.max_completion_tokens, chat.max_tokens,
                                 chat.n, gw.config.default_max_tokens};
  auto start_admit = [&gw, &cmd](store::Callback<store::AdmitResult> cb) { gw.store.admit(std::move(cmd), std::move(cb)); };
  const int64_t asked_at = gw.clock.monotonic_micros();
  auto admitted = co_await await_store<store::AdmitResult>(start_admit);
  admin::metrics().observe_store_wait_us(admin::StoreWait::admit, gw.clock.monotonic_micros() - asked_at);
  if (!admitted) {
    // A key revoked since a provisional grant: the store's admission refused it.
    const bool revoked = admitted.error().code == ErrorCode::invalid_api_key;
    co_return co_await ex.send_error(revoked ? ErrorCode::invalid_api_key : ErrorCode::store_unavailable,
                                     admitted.error().message);
  }
  ex.rate = admitted->after;
  if (const auto* refused = std::get_if<core::Refused>(&admitted->decision.outcome)) {
    admin::metrics().count_refusal(refused->reason);
    co_return co_await ex.send_error(refused->code, refused->message, refused->limit, refused->retry_after_s);
  }
  const auto& adm = std::get<core::Admitted>(admitted->decision.outcome);
  admin::metrics().count_admitted();

  Flow flow{gw, pool, ex, grant};
  flow.lowered_to = adm.lowered_to;
  flow.deadline_mono = gw.clock.monotonic_micros() + gw.config.in_flight_timeout_s * micros_per_second;
  flow.provider = gw.find_provider(grant.provider);
  if (!flow.provider) {
    co_await flow.settle(store::SettleKind::failed);
    co_return co_await ex.send_error(ErrorCode::provider_unavailable, "provider \"" + grant.provider + "\" is not configured");
  }
  wire::RewritePlan plan;
  plan.per_choice_limit = adm.lowered_to;
  plan.include_usage = chat.stream && !chat.include_usage;
  std::string upstream_body = (plan.per_choice_limit || plan.include_usage) ? wire::rewrite_chat_request(body, chat, plan)
                                                                          : std::move(body);
  const int64_t sent_at = gw.clock.monotonic_micros();
  auto sent = co_await flow.send_upstream(upstream_body);
  admin::metrics().observe_provider_latency_us(gw.clock.monotonic_micros() - sent_at);
  if (!sent) {
    co_await flow.settle(store::SettleKind::failed);
    co_return co_await ex.send_error(sent.error().code, sent.error().message);
  }
  if (chat.stream && is_2xx(flow.head->status())) co_return co_await flow.streamed(chat.include_usage);
  co_return co_await flow.plain();
}

}  // namespace cairva::gateway
