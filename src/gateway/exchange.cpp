#include "gateway/exchange.h"

#include <charconv>
#include <cstdio>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/write.hpp>

#include "admin/metrics.h"
#include "http/limits.h"
#include "wire/errors.h"

namespace cairva::gateway {

namespace {
constexpr auto nothrow = boost::asio::as_tuple(boost::asio::use_awaitable);

void set_int(bhttp::fields& h, std::string_view name, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  h.set(name, std::string_view(buf, static_cast<size_t>(end - buf)));
}
}  // namespace

void ClientExchange::stamp(bhttp::fields& h) const {
  h.set("x-cairva-request-id", request_id);
  if (!rate) return;
  const auto& l = rate->terms.limits;
  set_int(h, "x-ratelimit-limit-requests", l.requests_per_minute);
  set_int(h, "x-ratelimit-remaining-requests", std::max<int64_t>(0, l.requests_per_minute - rate->requests_last_minute));
  set_int(h, "x-ratelimit-limit-tokens", l.tokens_per_minute);
  set_int(h, "x-ratelimit-remaining-tokens", std::max<int64_t>(0, l.tokens_per_minute - rate->tokens_last_minute));
}

boost::asio::awaitable<bool> ClientExchange::send_json(int status, std::string body, const bhttp::fields* extra) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), version};
  if (extra) {
    for (const auto& f : *extra) res.set(f.name_string(), f.value());
  }
  res.set(bhttp::field::content_type, "application/json");
  stamp(res.base());
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  status_sent = status;
  deadline.expires_after(std::chrono::seconds(http::client_write_timeout_s));
  auto [ec, n] = co_await bhttp::async_write(stream, res, nothrow);
  co_return !ec && keep_alive;
}

boost::asio::awaitable<bool> ClientExchange::send_error(ErrorCode code, std::string_view message, std::string_view limit,
                                                        int retry_after_s) {
  admin::metrics().count_refused(code);
  outcome = wire_name(code);
  bhttp::fields extra;
  if (retry_after_s > 0) extra.set(bhttp::field::retry_after, std::to_string(retry_after_s));
  co_return co_await send_json(http_status(code), wire::error_body(code, message, limit), &extra);
}

void ClientExchange::log_access(int64_t latency_us) const {
  std::printf("request id=%s allocation=%s status=%d outcome=%.*s input_tokens=%lld output_tokens=%lld latency_us=%lld\n",
              request_id.c_str(), allocation_id.empty() ? "-" : allocation_id.c_str(), status_sent,
              static_cast<int>(outcome.size()), outcome.data(), static_cast<long long>(booked.input),
              static_cast<long long>(booked.output), static_cast<long long>(latency_us));
}

}  // namespace cairva::gateway
