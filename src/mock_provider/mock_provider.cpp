#include "mock_provider/mock_provider.h"

#include <simdjson.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/ids.h"
#include "base/time.h"
#include "http/limits.h"
#include "http/listener.h"
#include "mock_provider/anthropic.h"
#include "mock_provider/mock_common.h"
#include "mock_provider/openai_apis.h"

namespace cairva::mock_provider {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

constexpr size_t mock_body_bytes_max = size_t{32} << 20;

struct ChatFacts {
  std::string model = "mock";
  bool stream = false;
  bool include_usage = false;
  int64_t limit = -1;
  int64_t n = 1;
};

bool read_facts(const std::string& body, ChatFacts& out) {
  int64_t max_tokens = -1, max_completion = -1;
  const bool read = each_member(body, [&](std::string_view key, auto value) {
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
    return true;
  });
  if (!read) return false;
  out.limit = max_completion >= 0 ? max_completion : max_tokens;
  return true;
}

// Random, as real providers' ids are (OpenAI's chatcmpl-… are): a counter would make every
// booking key land at the end of an index and hide what random keys cost a store.
std::string response_id(const Switches& sw) {
  if (!sw.id.empty()) return sw.id;
  return new_id("chatcmpl");
}

std::string usage_json(const Switches& sw, const ChatFacts& f) {
  const std::string prompt = sw.prompt.empty() ? std::to_string(prompt_tokens_default) : sw.prompt;
  std::string completion = sw.completion;
  if (completion.empty()) {
    completion = std::to_string((f.limit >= 0 ? std::min(f.limit, sw.output) : sw.output) *
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
                     "\"object\":\"chat.completion\",\"created\":1700000000,\"model\":\"" +
                     f.model +
                     "\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
                     "\"Hello from the mock provider.\"},\"finish_reason\":\"stop\"}]";
  if (!sw.no_usage) body += ",\"usage\":" + usage_json(sw, f);
  body += "}";
  return body;
}

// Streams the SSE reply. Returns false when the connection must close.
net::awaitable<bool> stream_reply(beast::tcp_stream& stream, const Switches& sw, const ChatFacts& f,
                                  unsigned version) {
  const std::string id = response_id(sw);
  const std::string null_usage = f.include_usage && !sw.no_usage ? ",\"usage\":null" : "";
  auto chunk = [&](const std::string& delta, const std::string& finish) {
    return "data: {" + id_member(sw, id) +
           "\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"" + f.model +
           "\",\"choices\":[{\"index\":0,\"delta\":" + delta + ",\"finish_reason\":" + finish +
           "}]" + null_usage + "}\n\n";
  };
  std::vector<std::string> events;
  events.push_back(chunk("{\"role\":\"assistant\",\"content\":\"\"}", "null"));
  for (int64_t i = 0; i < sw.chunks; ++i)
    events.push_back(chunk("{\"content\":\"tok" + std::to_string(i) + " \"}", "null"));
  // malformed, streaming: one event whose data is not JSON, among the content events.
  if (sw.malformed) events.push_back("data: {\"id\": not json\n\n");
  events.push_back(chunk("{}", "\"stop\""));
  if (f.include_usage && !sw.no_usage) {
    events.push_back("data: {" + id_member(sw, id) +
                     "\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"" +
                     f.model + "\",\"choices\":[],\"usage\":" + usage_json(sw, f) + "}\n\n");
  }
  events.push_back("data: [DONE]\n\n");
  // stamp: a content event carries the time it is written, for per-chunk latency.
  EventReplacer stamped;
  if (sw.stamp) {
    stamped = [&](size_t i) -> std::optional<std::string> {
      if (i < 1 || static_cast<int64_t>(i) > sw.chunks) return std::nullopt;
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
      return chunk("{\"content\":\"stamp:" + std::to_string(us) + " \"}", "null");
    };
  }
  co_return co_await write_events(stream, sw, version, events, stamped);
}

net::awaitable<bool> chat(beast::tcp_stream& stream, http::request<http::string_body>& req) {
  Served served(req);
  ChatFacts facts;
  if (!read_facts(req.body(), facts)) {
    co_return co_await json_reply(
        stream, req.version(), req.keep_alive(), 400,
        R"({"error":{"message":"mock: body is not a JSON object","type":"invalid_request_error"}})");
  }
  const Switches sw = parse_switches(facts.model);
  co_await sleep_ms(sw.delay_ms);
  if (sw.oversize && !facts.stream) co_return co_await write_oversize(stream, sw.status);
  if (sw.status != 200) co_return co_await scripted_error(stream, req, sw);
  if (facts.stream)
    co_return co_await stream_reply(stream, sw, facts, req.version()) && req.keep_alive();
  if (sw.malformed)
    co_return co_await json_reply(stream, req.version(), req.keep_alive(), 200,
                                  "{\"id\": truncated");
  if (sw.reset_after >= 0) {
    const std::string body = completion_body(sw, facts);
    co_return co_await write_then_reset(stream, body, sw.reset_after);
  }
  co_return co_await json_reply(stream, req.version(), req.keep_alive(), 200,
                                completion_body(sw, facts), sw.header_id);
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
    if (!target.starts_with("/mock/")) remember_fields(req);
    if (req.method() == http::verb::post && target.ends_with("/chat/completions")) {
      keep = co_await chat(stream, req);
    } else if (is_openai_api(req)) {
      keep = co_await serve_openai_api(stream, req);
    } else if (is_anthropic_api(req)) {
      keep = co_await serve_anthropic_api(stream, req);
    } else if (target == "/mock/stats") {
      keep = co_await json_reply(
          stream, req.version(), req.keep_alive(), 200,
          "{\"requests\":" + std::to_string(stats().requests.load()) +
              ",\"in_flight\":" + std::to_string(stats().in_flight.load()) +
              ",\"peak_in_flight\":" + std::to_string(stats().peak_in_flight.load()) + "}");
    } else if (target == "/mock/reset" && req.method() == http::verb::post) {
      stats().requests = 0;
      stats().peak_in_flight = stats().in_flight.load();
      keep = co_await json_reply(stream, req.version(), req.keep_alive(), 200, "{\"reset\":true}");
    } else if (target.starts_with("/mock/release/") && req.method() == http::verb::post) {
      release(target.substr(std::string_view("/mock/release/").size()));
      keep =
          co_await json_reply(stream, req.version(), req.keep_alive(), 200, "{\"released\":true}");
    } else if (target == "/mock/last") {
      http::response<http::string_body> res{http::status::ok, req.version()};
      res.set(http::field::content_type, "application/json");
      {
        std::lock_guard lock(stats().last_mutex);
        res.set("x-mock-authorization", stats().last_authorization);
        res.set("x-mock-target", stats().last_target);
        res.body() = stats().last_body.empty() ? "null" : stats().last_body;
      }
      res.keep_alive(req.keep_alive());
      res.prepare_payload();
      auto [wec, wn] = co_await http::async_write(stream, res, nothrow);
      keep = !wec && res.keep_alive();
    } else {
      keep =
          co_await json_reply(stream, req.version(), req.keep_alive(), 404,
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
  (void)cairva::http::raise_open_files_limit(mock_connections_max +
                                             cairva::http::file_descriptors_reserve);
  auto budget = std::make_shared<cairva::http::ConnectionBudget>(
      cairva::http::ConnectionLimits{mock_connections_max, 0});
  std::vector<std::unique_ptr<net::io_context>> loops;
  tcp::endpoint bound = *endpoint;
  for (int i = 0; i < threads; ++i) {
    loops.push_back(std::make_unique<net::io_context>(1));
    auto r = cairva::http::start_listener(
        *loops.back(), bound, true, budget,
        [](tcp::socket s, const std::shared_ptr<cairva::http::Connection>&) {
          return session(std::move(s));
        });
    if (!r) {
      std::fprintf(stderr, "mock-provider: %s\n", r.error().message.c_str());
      return 1;
    }
    bound = r->endpoint;
  }
  std::printf("mock-provider listening on %s:%u\n", bound.address().to_string().c_str(),
              bound.port());
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
