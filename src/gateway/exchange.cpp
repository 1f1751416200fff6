#include "gateway/exchange.h"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>

#include "gateway/limits.h"
#include "gateway/rate_headers.h"
#include "http/limits.h"
#include "metrics/metrics.h"
#include "wire/errors.h"

namespace cairva::gateway {

namespace {

// What a buyer reads when the store fails: the detail is the operators' (the log).
constexpr std::string_view store_down_message =
    "the gateway cannot reach its store; the request was not processed, retry later";
// Service Unavailable: the gateway, not the caller, is at a limit; the client may retry.
constexpr int busy_status = 503;

// The same numbers as x-ratelimit-*, named as Anthropic names them, which the Anthropic
// SDKs and Claude-based tools read (SPEC-APIS §4); the resets as instants.
void add_anthropic_rate_headers(http::MessageHead& h, const core::AllocationSnapshot& rate) {
  const auto& l = rate.terms.limits;
  h.add("anthropic-ratelimit-requests-limit", l.requests_per_minute);
  h.add("anthropic-ratelimit-requests-remaining",
        std::max<int64_t>(0, l.requests_per_minute - rate.requests_last_minute));
  h.add("anthropic-ratelimit-tokens-limit", l.tokens_per_minute);
  h.add("anthropic-ratelimit-tokens-remaining",
        std::max<int64_t>(0, l.tokens_per_minute - rate.tokens_last_minute));
  add_anthropic_rate_reset_headers(h, rate);
}

}  // namespace

http::MessageHead ClientExchange::head(int status) const {
  auto h = http::MessageHead::response(static_cast<unsigned>(status), version);
  h.add("x-cairva-request-id", request_id);
  if (!rate) return h;
  add_rate_headers(h, *rate);
  if (dialect == wire::Dialect::anthropic) add_anthropic_rate_headers(h, *rate);
  return h;
}

http::Task<bool> ClientExchange::send_json(http::MessageHead head, std::string body) {
  head.add("Content-Type", "application/json");
  const std::string& text = head.finish(body.size(), keep_open());
  status_sent = static_cast<int>(head.status());
  std::array<boost::asio::const_buffer, 2> bytes{boost::asio::buffer(text),
                                                 boost::asio::buffer(body)};
  if (head_only) bytes[1] = {};
  deadline.expires_after(std::chrono::seconds(http::client_write_timeout_s));
  auto [ec, n] = co_await boost::asio::async_write(stream, bytes, http::task_nothrow);
  co_return !ec && keep_alive;
}

http::Task<bool> ClientExchange::send_error(ErrorCode code, std::string_view message,
                                            std::string_view limit, int retry_after_s,
                                            int64_t retry_after_ms) {
  metrics::registry().count_refused(code);
  outcome = wire_name(code);
  auto h = head(http_status(code));
  if (code == ErrorCode::store_unavailable && retry_after_s <= 0)
    retry_after_s = store_unavailable_retry_after_s;
  if (retry_after_s > 0) h.add("Retry-After", int64_t{retry_after_s});
  if (retry_after_ms > 0) h.add("retry-after-ms", retry_after_ms);
  co_return co_await send_json(std::move(h), error_body(http_status(code), code, message, limit));
}

http::Task<bool> ClientExchange::send_store_error(const Error& e) {
  if (e.code == ErrorCode::invalid_api_key)
    co_return co_await send_error(ErrorCode::invalid_api_key, e.message);
  log_error("store unavailable", e.message);
  co_return co_await send_error(ErrorCode::store_unavailable, store_down_message);
}

void ClientExchange::log_error(std::string_view what, std::string_view detail) const {
  std::string shown(detail);
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  std::fprintf(stderr, "cairva: request %s: %.*s: %s\n",
               request_id.empty() ? "-" : request_id.c_str(), static_cast<int>(what.size()),
               what.data(), shown.c_str());
}

http::Task<bool> ClientExchange::send_busy(std::string_view limit, std::string_view message,
                                           int retry_after_s) {
  metrics::registry().count_refused(ErrorCode::rate_limited);
  outcome = wire_name(ErrorCode::rate_limited);
  auto h = head(busy_status);
  h.add("Retry-After", int64_t{retry_after_s});
  co_return co_await send_json(std::move(h),
                               error_body(busy_status, ErrorCode::rate_limited, message, limit));
}

http::Task<bool> ClientExchange::send_continue() {
  static constexpr std::string_view text = "HTTP/1.1 100 Continue\r\n\r\n";
  deadline.expires_after(std::chrono::seconds(http::client_write_timeout_s));
  auto [ec, n] =
      co_await boost::asio::async_write(stream, boost::asio::buffer(text), http::task_nothrow);
  co_return !ec;
}

std::string ClientExchange::error_body(int status, ErrorCode code, std::string_view message,
                                       std::string_view limit) const {
  if (dialect == wire::Dialect::anthropic)
    return wire::anthropic_error_body(status, code, message, limit);
  return wire::error_body(code, message, limit);
}

}  // namespace cairva::gateway
