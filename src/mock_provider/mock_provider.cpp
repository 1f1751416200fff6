#include "mock_provider/mock_provider.h"

#include <simdjson.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "base/ids.h"
#include "base/time.h"
#include "http/limits.h"
#include "http/listener.h"

namespace cairva::mock_provider {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
constexpr auto nothrow = net::as_tuple(net::use_awaitable);

constexpr int64_t prompt_tokens_default = 10;
constexpr int64_t completion_tokens_default = 7;
constexpr int64_t chunks_default = 3;
constexpr size_t mock_body_bytes_max = size_t{32} << 20;
// split=N pieces: at least one byte, at most a whole event.
constexpr int64_t split_bytes_max = 1 << 20;
constexpr uint64_t oversize_announced_bytes = uint64_t{1} << 40;
// What the supplier-account errors (status=401/403/429) name, for tests to look for.
constexpr std::string_view mock_supplier_org = "org-MockSupplier7Q2";
constexpr std::string_view mock_supplier_key_fragment = "sk-proj-****k3Yz";

// A held stream (hold=NAME) looks for its release this often.
constexpr int64_t hold_poll_ms = 10;
// Names released at most; a test releases a few.
constexpr size_t released_names_max = 4096;

struct Stats {
  std::atomic<int64_t> requests{0};
  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> peak_in_flight{0};
  std::mutex last_mutex;
  std::string last_body;           // GUARDED_BY(last_mutex)
  std::string last_authorization;  // GUARDED_BY(last_mutex)
  std::mutex released_mutex;
  std::set<std::string, std::less<>> released;  // GUARDED_BY(released_mutex): hold names
};
Stats& stats() {
  static Stats s;
  return s;
}

struct InFlight {
  InFlight() {
    auto now = stats().in_flight.fetch_add(1) + 1;
    auto peak = stats().peak_in_flight.load();
    while (now > peak && !stats().peak_in_flight.compare_exchange_weak(peak, now)) {
    }
  }
  ~InFlight() { stats().in_flight.fetch_sub(1); }
};

struct Switches {
  bool no_usage = false, malformed = false, no_id = false, oversize = false;
  bool stamp = false;  // streaming: content "stamp:<steady_clock µs at send>" (bench/stream_load)
  int status = 200;
  int64_t delay_ms = 0, chunks = chunks_default, chunk_delay_ms = 0, cut_after = -1;
  int64_t reset_after = -1, truncate_after = -1, split_bytes = 0;
  int64_t retry_after_s = 3;  // a 429's Retry-After
  int64_t output = completion_tokens_default;  // per choice, before the request's limit
  std::string id, header_id, hold;
  // usage=P,C as sent (any JSON number text: negative, fractional, huge); empty = default.
  std::string prompt, completion;
};

int64_t to_int(std::string_view s) {
  int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

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
    if (key == "no-usage") sw.no_usage = true;
    else if (key == "malformed") sw.malformed = true;
    else if (key == "no-id") sw.no_id = true;
    else if (key == "oversize") sw.oversize = true;
    else if (key == "stamp") sw.stamp = true;
    else if (key == "status") sw.status = static_cast<int>(to_int(val));
    else if (key == "delay-ms") sw.delay_ms = to_int(val);
    else if (key == "chunks") sw.chunks = to_int(val);
    else if (key == "chunk-delay-ms") sw.chunk_delay_ms = to_int(val);
    else if (key == "cut-after") sw.cut_after = to_int(val);
    else if (key == "reset-after") sw.reset_after = to_int(val);
    else if (key == "truncate-after") sw.truncate_after = to_int(val);
    else if (key == "retry-after") sw.retry_after_s = to_int(val);
    else if (key == "split") sw.split_bytes = std::min(to_int(val), split_bytes_max);
    else if (key == "id") sw.id = std::string(val);
    else if (key == "header-id") sw.header_id = std::string(val);
    else if (key == "hold") sw.hold = std::string(val);
    else if (key == "output") sw.output = std::max<int64_t>(to_int(val), 0);
    else if (key == "usage") {
      const auto comma = val.find(',');
      sw.prompt = std::string(val.substr(0, comma));
      if (comma != std::string_view::npos) sw.completion = std::string(val.substr(comma + 1));
    }
  }
  return sw;
}

struct ChatFacts {
  std::string model = "mock";
  bool stream = false;
  bool include_usage = false;
  int64_t limit = -1;
  int64_t n = 1;
};

bool read_facts(const std::string& body, ChatFacts& out) {
  thread_local simdjson::ondemand::parser parser;
  simdjson::padded_string padded(body);
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc)) return false;
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj)) return false;
  int64_t max_tokens = -1, max_completion = -1;
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return false;
    auto value = field.value();
    if (key == "model") {
      std::string_view m;
      if (!value.get_string().get(m)) out.model = std::string(m);
    } else if (key == "stream") {
      bool b = false;
      if (!value.get_bool().get(b)) out.stream = b;
    } else if (key == "max_tokens") {
      int64_t v;
      if (!value.get_int64().get(v)) max_tokens = v;
    } else if (key == "max_completion_tokens") {
      int64_t v;
      if (!value.get_int64().get(v)) max_completion = v;
    } else if (key == "n") {
      int64_t v;
      if (!value.get_int64().get(v)) out.n = v;
    } else if (key == "stream_options") {
      simdjson::ondemand::object so;
      if (!value.get_object().get(so)) {
        bool b = false;
        if (!so["include_usage"].get_bool().get(b)) out.include_usage = b;
      }
    }
  }
  out.limit = max_completion >= 0 ? max_completion : max_tokens;
  return true;
}

// Random, as real providers' ids are (OpenAI's chatcmpl-… are): a counter would make every
// booking key land at the end of an index and hide what random keys cost a store.
std::string response_id(const Switches& sw) {
  if (!sw.id.empty()) return sw.id;
  return new_id("chatcmpl");
}

// The whole of `s` as a decimal int64, else nullopt.
std::optional<int64_t> exact_int(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string usage_json(const Switches& sw, const ChatFacts& f) {
  const std::string prompt = sw.prompt.empty() ? std::to_string(prompt_tokens_default) : sw.prompt;
  std::string completion = sw.completion;
  if (completion.empty()) {
    completion = std::to_string(
        (f.limit >= 0 ? std::min(f.limit, sw.output) : sw.output) *
        std::max<int64_t>(f.n, 1));
  }
  std::string out = "{\"prompt_tokens\":" + prompt + ",\"completion_tokens\":" + completion;
  // total_tokens only when both counts are integers (a scripted "1.5" has no honest total).
  auto p = exact_int(prompt), c = exact_int(completion);
  if (p && c) out += ",\"total_tokens\":" + std::to_string(*p + *c);
  return out + "}";
}

std::string id_member(const Switches& sw, const std::string& id) {
  return sw.no_id ? std::string() : "\"id\":\"" + id + "\",";
}

std::string completion_body(const Switches& sw, const ChatFacts& f) {
  std::string body = "{" + id_member(sw, response_id(sw)) +
                     "\"object\":\"chat.completion\",\"created\":1700000000,\"model\":\"" + f.model +
                     "\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
                     "\"Hello from the mock provider.\"},\"finish_reason\":\"stop\"}]";
  if (!sw.no_usage) body += ",\"usage\":" + usage_json(sw, f);
  body += "}";
  return body;
}

net::awaitable<void> sleep_ms(int64_t ms) {
  if (ms <= 0) co_return;
  net::steady_timer t(co_await net::this_coro::executor, std::chrono::milliseconds(ms));
  co_await t.async_wait(nothrow);
}

bool released(std::string_view name) {
  std::lock_guard lock(stats().released_mutex);
  return stats().released.find(name) != stats().released.end();
}

// hold=NAME: waits until POST /mock/release/NAME.
net::awaitable<void> wait_for_release(std::string_view name) {
  while (!released(name)) co_await sleep_ms(hold_poll_ms);
}

// Closes with a TCP RST (linger 0) instead of a FIN: a connection reset by the peer.
void reset(beast::tcp_stream& stream) {
  boost::system::error_code ignored;
  stream.socket().set_option(net::socket_base::linger(true, 0), ignored);
  stream.socket().close(ignored);
}

// Streams the SSE reply. Returns false when the connection must close.
net::awaitable<bool> stream_reply(beast::tcp_stream& stream, const Switches& sw, const ChatFacts& f, unsigned version) {
  http::response<http::empty_body> res{http::status::ok, version};
  res.set(http::field::content_type, "text/event-stream");
  res.set(http::field::cache_control, "no-cache");
  if (!sw.header_id.empty()) res.set("x-request-id", sw.header_id);
  res.chunked(true);
  http::response_serializer<http::empty_body> sr{res};
  auto [ec, n] = co_await http::async_write_header(stream, sr, nothrow);
  if (ec) co_return false;
  const std::string id = response_id(sw);
  const std::string null_usage = f.include_usage && !sw.no_usage ? ",\"usage\":null" : "";
  auto chunk = [&](const std::string& delta, const std::string& finish) {
    return "data: {" + id_member(sw, id) + "\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"" +
           f.model + "\",\"choices\":[{\"index\":0,\"delta\":" + delta + ",\"finish_reason\":" + finish + "}]" +
           null_usage + "}\n\n";
  };
  std::vector<std::string> events;
  events.push_back(chunk("{\"role\":\"assistant\",\"content\":\"\"}", "null"));
  for (int64_t i = 0; i < sw.chunks; ++i) events.push_back(chunk("{\"content\":\"tok" + std::to_string(i) + " \"}", "null"));
  // malformed, streaming: one event whose data is not JSON, among the content events.
  if (sw.malformed) events.push_back("data: {\"id\": not json\n\n");
  events.push_back(chunk("{}", "\"stop\""));
  if (f.include_usage && !sw.no_usage) {
    events.push_back("data: {" + id_member(sw, id) +
                     "\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"" + f.model +
                     "\",\"choices\":[],\"usage\":" + usage_json(sw, f) + "}\n\n");
  }
  events.push_back("data: [DONE]\n\n");
  int64_t sent = 0;
  std::string stamped;
  for (const auto& built : events) {
    // stamp: a content event carries the time it is written, for per-chunk latency.
    const bool content = sent >= 1 && sent <= sw.chunks;
    if (sw.stamp && content) {
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
      stamped = chunk("{\"content\":\"stamp:" + std::to_string(us) + " \"}", "null");
    }
    const std::string& ev = sw.stamp && content ? stamped : built;
    if (sw.cut_after >= 0 && sent >= sw.cut_after) co_return false;
    if (sw.reset_after >= 0 && sent >= sw.reset_after) {
      reset(stream);
      co_return false;
    }
    if (sw.truncate_after >= 0 && sent >= sw.truncate_after) {
      // Half an event, no line end, then a clean end of the HTTP body.
      const std::string half = ev.substr(0, ev.size() / 2);
      auto [tec, tn] = co_await net::async_write(stream, http::make_chunk(net::buffer(half)), nothrow);
      if (tec) co_return false;
      break;
    }
    // split=N: the event in N-byte HTTP chunks (a slow drip with chunk-delay-ms between).
    const size_t piece = sw.split_bytes > 0 ? static_cast<size_t>(sw.split_bytes) : ev.size();
    for (size_t at = 0; at < ev.size(); at += piece) {
      auto [wec, wn] = co_await net::async_write(
          stream, http::make_chunk(net::buffer(ev.data() + at, std::min(piece, ev.size() - at))), nothrow);
      if (wec) co_return false;
      if (sw.split_bytes > 0 && sw.chunk_delay_ms > 0) co_await sleep_ms(sw.chunk_delay_ms);
    }
    ++sent;
    if (sent == 1 && !sw.hold.empty()) co_await wait_for_release(sw.hold);
    if (sw.split_bytes == 0 && sw.chunk_delay_ms > 0) co_await sleep_ms(sw.chunk_delay_ms);
  }
  auto [lec, ln] = co_await net::async_write(stream, http::make_chunk_last(), nothrow);
  co_return !lec;
}

template <class Body>
net::awaitable<bool> send(beast::tcp_stream& stream, http::response<Body>& res) {
  res.prepare_payload();
  auto [ec, n] = co_await http::async_write(stream, res, nothrow);
  co_return !ec && res.keep_alive();
}

net::awaitable<bool> json_reply(beast::tcp_stream& stream, unsigned version, bool keep_alive, int status, std::string body,
                                const std::string& header_id = {}, int64_t retry_after_s = 0) {
  http::response<http::string_body> res{static_cast<http::status>(status), version};
  res.set(http::field::content_type, "application/json");
  if (!header_id.empty()) res.set("x-request-id", header_id);
  if (retry_after_s > 0) res.set(http::field::retry_after, std::to_string(retry_after_s));
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  co_return co_await send(stream, res);
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
           ". You can find your API key at https://platform.openai.com/account/api-keys. (organization " + org +
           R"j()","type":"invalid_request_error","param":null,"code":"invalid_api_key"}})j";
  }
  if (status == 403) {
    return R"j({"error":{"message":"Project proj_MockSupplier9 in organization )j" + org + " (key " + key +
           R"j() does not have access to this model","type":"invalid_request_error","param":null,"code":"model_not_found"}})j";
  }
  if (status == 429) {
    return R"j({"error":{"message":"Rate limit reached for gpt-4o in organization )j" + org +
           R"j( on tokens per min (TPM): Limit 30000, Used 29500, Requested 1200.","type":"tokens","param":null,"code":"rate_limit_exceeded"}})j";
  }
  return R"j({"error":{"message":"mock: scripted error","type":"mock_error","code":"mock_)j" + std::to_string(status) +
         "\"}}";
}

net::awaitable<bool> chat(beast::tcp_stream& stream, http::request<http::string_body>& req) {
  InFlight in_flight;
  stats().requests.fetch_add(1);
  {
    std::lock_guard lock(stats().last_mutex);
    stats().last_body = req.body();
    stats().last_authorization = std::string(req[http::field::authorization]);
  }
  ChatFacts facts;
  if (!read_facts(req.body(), facts)) {
    co_return co_await json_reply(stream, req.version(), req.keep_alive(), 400,
                                  R"({"error":{"message":"mock: body is not a JSON object","type":"invalid_request_error"}})");
  }
  const Switches sw = parse_switches(facts.model);
  co_await sleep_ms(sw.delay_ms);
  if (sw.oversize && !facts.stream) {
    // A header announcing 1 TiB and a few bytes of it, then the connection closes: a gateway
    // that read on would see a cut-off body, one that checked the length refuses first.
    const std::string head = "HTTP/1.1 " + std::to_string(sw.status) +
                             " X\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(oversize_announced_bytes) + "\r\n\r\n{\"id\":";
    (void)co_await net::async_write(stream, net::buffer(head), nothrow);
    co_return false;
  }
  if (sw.status != 200) {
    co_return co_await json_reply(stream, req.version(), req.keep_alive(), sw.status, error_body(sw.status),
                                  sw.header_id, sw.status == 429 ? sw.retry_after_s : 0);
  }
  if (facts.stream) co_return co_await stream_reply(stream, sw, facts, req.version()) && req.keep_alive();
  if (sw.malformed) co_return co_await json_reply(stream, req.version(), req.keep_alive(), 200, "{\"id\": truncated");
  if (sw.reset_after >= 0) {
    // Non-streaming: the headers and the first reset-after bytes of the body, then a reset.
    const std::string body = completion_body(sw, facts);
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n" +
                             body.substr(0, std::min<size_t>(body.size(), static_cast<size_t>(sw.reset_after)));
    (void)co_await net::async_write(stream, net::buffer(head), nothrow);  // reset either way
    reset(stream);
    co_return false;
  }
  co_return co_await json_reply(stream, req.version(), req.keep_alive(), 200, completion_body(sw, facts), sw.header_id);
}

net::awaitable<void> session(tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(mock_body_bytes_max);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, nothrow);
    if (ec) co_return;
    auto& req = parser.get();
    const std::string_view target = req.target();
    bool keep = true;
    if (req.method() == http::verb::post && target.ends_with("/chat/completions")) {
      keep = co_await chat(stream, req);
    } else if (target == "/mock/stats") {
      keep = co_await json_reply(stream, req.version(), req.keep_alive(), 200,
                                 "{\"requests\":" + std::to_string(stats().requests.load()) +
                                     ",\"in_flight\":" + std::to_string(stats().in_flight.load()) +
                                     ",\"peak_in_flight\":" + std::to_string(stats().peak_in_flight.load()) + "}");
    } else if (target == "/mock/reset" && req.method() == http::verb::post) {
      stats().requests = 0;
      stats().peak_in_flight = stats().in_flight.load();
      keep = co_await json_reply(stream, req.version(), req.keep_alive(), 200, "{\"reset\":true}");
    } else if (target.starts_with("/mock/release/") && req.method() == http::verb::post) {
      {
        std::lock_guard lock(stats().released_mutex);
        if (stats().released.size() < released_names_max) {
          stats().released.emplace(target.substr(std::string_view("/mock/release/").size()));
        }
      }
      keep = co_await json_reply(stream, req.version(), req.keep_alive(), 200, "{\"released\":true}");
    } else if (target == "/mock/last") {
      http::response<http::string_body> res{http::status::ok, req.version()};
      res.set(http::field::content_type, "application/json");
      {
        std::lock_guard lock(stats().last_mutex);
        res.set("x-mock-authorization", stats().last_authorization);
        res.body() = stats().last_body;
      }
      res.keep_alive(req.keep_alive());
      keep = co_await send(stream, res);
    } else {
      keep = co_await json_reply(stream, req.version(), req.keep_alive(), 404,
                                 R"({"error":{"message":"mock: unknown path","type":"not_found"}})");
    }
    if (!keep) break;
  }
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace

int run(const Options& options) {
  auto endpoint = cairva::http::parse_listen_address(options.listen);
  if (!endpoint) {
    std::fprintf(stderr, "mock-provider: --listen: %s\n", endpoint.error().message.c_str());
    return 2;
  }
  const int threads = std::max(1, options.threads);
  // The mock serves tests and benchmarks: as many connections as the descriptors hold.
  constexpr int64_t mock_connections_max = 20000;
  (void)cairva::http::raise_open_files_limit(mock_connections_max + cairva::http::file_descriptors_reserve);
  auto budget =
      std::make_shared<cairva::http::ConnectionBudget>(cairva::http::ConnectionLimits{mock_connections_max, 0});
  std::vector<std::unique_ptr<net::io_context>> loops;
  tcp::endpoint bound = *endpoint;
  for (int i = 0; i < threads; ++i) {
    loops.push_back(std::make_unique<net::io_context>(1));
    auto r = cairva::http::start_listener(*loops.back(), bound, true, budget,
                                          [](tcp::socket s, std::shared_ptr<cairva::http::Connection>) {
                                            return session(std::move(s));
                                          });
    if (!r) {
      std::fprintf(stderr, "mock-provider: %s\n", r.error().message.c_str());
      return 1;
    }
    bound = r->endpoint;
  }
  std::printf("mock-provider listening on %s:%u\n", bound.address().to_string().c_str(), bound.port());
  std::fflush(stdout);
  net::signal_set signals(*loops[0], SIGINT, SIGTERM);
  signals.async_wait([&](auto, int) {
    for (auto& l : loops) l->stop();
  });
  std::vector<std::thread> workers;
  for (int i = 1; i < threads; ++i) workers.emplace_back([&, i] { loops[i]->run(); });
  loops[0]->run();
  for (auto& w : workers) w.join();
  return 0;
}

}  // namespace cairva::mock_provider
