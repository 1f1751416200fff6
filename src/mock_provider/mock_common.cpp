#include "mock_provider/mock_common.h"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/write.hpp>
#include <charconv>
#include <chrono>

namespace cairva::mock_provider {
namespace {

namespace net = boost::asio;

// What the supplier-account errors (status=401/403/429) name, for tests to look for.
constexpr std::string_view mock_supplier_org = "org-MockSupplier7Q2";
constexpr std::string_view mock_supplier_key_fragment = "sk-proj-****k3Yz";

int64_t to_int(std::string_view s) {
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

Stats& stats() {
  static Stats s;
  return s;
}

Served::Served(const Request& req) {
  stats().requests.fetch_add(1);
  auto now = stats().in_flight.fetch_add(1) + 1;
  auto peak = stats().peak_in_flight.load();
  while (now > peak && !stats().peak_in_flight.compare_exchange_weak(peak, now)) {
  }
  std::lock_guard lock(stats().last_mutex);
  stats().last_body = req.body();
  stats().last_authorization = std::string(req[bhttp::field::authorization]);
  stats().last_target = std::string(req.method_string()) + " " + std::string(req.target());
}

Served::~Served() { stats().in_flight.fetch_sub(1); }

Switches parse_switches(std::string_view model) {
  Switches sw;
  const auto q = model.find('?');
  if (q == std::string_view::npos) return sw;
  std::string_view rest = model.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    std::string_view item = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const auto eq = item.find('=');
    std::string_view key = item.substr(0, eq);
    std::string_view val = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    if (key == "no-usage")
      sw.no_usage = true;
    else if (key == "malformed")
      sw.malformed = true;
    else if (key == "no-id")
      sw.no_id = true;
    else if (key == "oversize")
      sw.oversize = true;
    else if (key == "stamp")
      sw.stamp = true;
    else if (key == "failed")
      sw.failed = true;
    else if (key == "status")
      sw.status = static_cast<int>(to_int(val));
    else if (key == "delay-ms")
      sw.delay_ms = to_int(val);
    else if (key == "chunks")
      sw.chunks = to_int(val);
    else if (key == "chunk-delay-ms")
      sw.chunk_delay_ms = to_int(val);
    else if (key == "cut-after")
      sw.cut_after = to_int(val);
    else if (key == "reset-after")
      sw.reset_after = to_int(val);
    else if (key == "truncate-after")
      sw.truncate_after = to_int(val);
    else if (key == "retry-after")
      sw.retry_after_s = to_int(val);
    else if (key == "split")
      sw.split_bytes = std::min(to_int(val), split_bytes_max);
    else if (key == "id")
      sw.id = std::string(val);
    else if (key == "header-id")
      sw.header_id = std::string(val);
    else if (key == "hold")
      sw.hold = std::string(val);
    else if (key == "output")
      sw.output = std::max<int64_t>(to_int(val), 0);
    else if (key == "usage") {
      const auto comma = val.find(',');
      sw.prompt = std::string(val.substr(0, comma));
      if (comma != std::string_view::npos) sw.completion = std::string(val.substr(comma + 1));
    }
  }
  return sw;
}

std::optional<int64_t> exact_int(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

net::awaitable<void> sleep_ms(int64_t ms) {
  if (ms <= 0) co_return;
  net::steady_timer t(co_await net::this_coro::executor, std::chrono::milliseconds(ms));
  co_await t.async_wait(nothrow);
}

void reset(beast::tcp_stream& stream) {
  boost::system::error_code ignored;
  stream.socket().set_option(net::socket_base::linger(true, 0), ignored);
  stream.socket().close(ignored);
}

net::awaitable<bool> write_oversize(beast::tcp_stream& stream, int status) {
  const std::string head = "HTTP/1.1 " + std::to_string(status) +
                           " X\r\nContent-Type: application/json\r\nContent-Length: " +
                           std::to_string(oversize_announced_bytes) + "\r\n\r\n{\"id\":";
  (void)co_await net::async_write(stream, net::buffer(head), nothrow);
  co_return false;
}

net::awaitable<bool> write_then_reset(beast::tcp_stream& stream, std::string_view body,
                                      int64_t reset_after) {
  std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n";
  head.append(body.substr(0, std::min<size_t>(body.size(), static_cast<size_t>(reset_after))));
  (void)co_await net::async_write(stream, net::buffer(head), nothrow);  // reset either way
  reset(stream);
  co_return false;
}

net::awaitable<bool> json_reply(beast::tcp_stream& stream, unsigned version, bool keep_alive,
                                int status, std::string body, const std::string& header_id,
                                int64_t retry_after_s) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), version};
  res.set(bhttp::field::content_type, "application/json");
  if (!header_id.empty()) res.set("x-request-id", header_id);
  if (retry_after_s > 0) res.set(bhttp::field::retry_after, std::to_string(retry_after_s));
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  auto [ec, n] = co_await bhttp::async_write(stream, res, nothrow);
  co_return !ec && res.keep_alive();
}

// Errors about the supplier's account (401, 403, 429) as OpenAI words them, naming the
// supplier's organisation and a fragment of its key (mock_supplier_org,
// mock_supplier_key_fragment): the gateway must never pass either to a buyer. Other
// statuses get a scripted error whose code names the status.
std::string error_body(int status) {
  const std::string org(mock_supplier_org);
  const std::string key(mock_supplier_key_fragment);
  if (status == 401) {
    return R"j({"error":{"message":"Incorrect API key provided: )j" + key +
           ". You can find your API key at https://platform.openai.com/account/api-keys. "
           "(organization " +
           org + R"j()","type":"invalid_request_error","param":null,"code":"invalid_api_key"}})j";
  }
  if (status == 403) {
    return R"j({"error":{"message":"Project proj_MockSupplier9 in organization )j" + org +
           " (key " + key +
           R"j() does not have access to this model","type":"invalid_request_error","param":null,"code":"model_not_found"}})j";
  }
  if (status == 429) {
    return R"j({"error":{"message":"Rate limit reached for gpt-4o in organization )j" + org +
           R"j( on tokens per min (TPM): Limit 30000, Used 29500, Requested 1200.","type":"tokens","param":null,"code":"rate_limit_exceeded"}})j";
  }
  return R"j({"error":{"message":"mock: scripted error","type":"mock_error","code":"mock_)j" +
         std::to_string(status) + "\"}}";
}

net::awaitable<bool> scripted_error(beast::tcp_stream& stream, const Request& req,
                                    const Switches& sw) {
  co_return co_await json_reply(stream, req.version(), req.keep_alive(), sw.status,
                                error_body(sw.status), sw.header_id,
                                sw.status == 429 ? sw.retry_after_s : 0);
}

net::awaitable<bool> write_events(beast::tcp_stream& stream, const Switches& sw, unsigned version,
                                  const std::vector<std::string>& events,
                                  const EventReplacer& replace) {
  bhttp::response<bhttp::empty_body> res{bhttp::status::ok, version};
  res.set(bhttp::field::content_type, "text/event-stream");
  res.set(bhttp::field::cache_control, "no-cache");
  if (!sw.header_id.empty()) res.set("x-request-id", sw.header_id);
  res.chunked(true);
  bhttp::response_serializer<bhttp::empty_body> sr{res};
  auto [ec, n] = co_await bhttp::async_write_header(stream, sr, nothrow);
  if (ec) co_return false;
  int64_t sent = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    std::optional<std::string> replaced = replace ? replace(i) : std::nullopt;
    const std::string& ev = replaced ? *replaced : events[i];
    if (sw.cut_after >= 0 && sent >= sw.cut_after) co_return false;
    if (sw.reset_after >= 0 && sent >= sw.reset_after) {
      reset(stream);
      co_return false;
    }
    if (sw.truncate_after >= 0 && sent >= sw.truncate_after) {
      // Half an event, no line end, then a clean end of the HTTP body.
      const std::string half = ev.substr(0, ev.size() / 2);
      auto [tec, tn] =
          co_await net::async_write(stream, bhttp::make_chunk(net::buffer(half)), nothrow);
      if (tec) co_return false;
      break;
    }
    // split=N: the event in N-byte HTTP chunks (a slow drip with chunk-delay-ms between).
    const size_t piece = sw.split_bytes > 0 ? static_cast<size_t>(sw.split_bytes) : ev.size();
    for (size_t at = 0; at < ev.size(); at += piece) {
      auto [wec, wn] = co_await net::async_write(
          stream, bhttp::make_chunk(net::buffer(ev.data() + at, std::min(piece, ev.size() - at))),
          nothrow);
      if (wec) co_return false;
      if (sw.split_bytes > 0 && sw.chunk_delay_ms > 0) co_await sleep_ms(sw.chunk_delay_ms);
    }
    ++sent;
    if (sent == 1 && !sw.hold.empty()) co_await wait_for_release(sw.hold);
    if (sw.split_bytes == 0 && sw.chunk_delay_ms > 0) co_await sleep_ms(sw.chunk_delay_ms);
  }
  auto [lec, ln] = co_await net::async_write(stream, bhttp::make_chunk_last(), nothrow);
  co_return !lec;
}

namespace {
// A held stream looks for its release this often.
constexpr int64_t hold_poll_ms = 10;
// Names released at most; a test releases a few.
constexpr size_t released_names_max = 4096;

bool released(std::string_view name) {
  std::lock_guard lock(stats().released_mutex);
  return stats().released.find(name) != stats().released.end();
}
}  // namespace

net::awaitable<void> wait_for_release(std::string_view name) {
  while (!released(name)) co_await sleep_ms(hold_poll_ms);
}

void release(std::string_view name) {
  std::lock_guard lock(stats().released_mutex);
  if (stats().released.size() < released_names_max) stats().released.emplace(name);
}

}  // namespace cairva::mock_provider
