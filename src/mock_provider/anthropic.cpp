#include "mock_provider/anthropic.h"

#include <simdjson.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "base/ids.h"

namespace cairva::mock_provider {
namespace {

namespace net = boost::asio;

constexpr int64_t cache_creation_tokens_default = 2;
constexpr int64_t cache_read_tokens_default = 4;
// What the supplier-account errors (status=401/403/429) name, for tests to look for.
constexpr std::string_view supplier_org = "org-MockSupplier7Q2";
constexpr std::string_view supplier_key_fragment = "sk-ant-api03-****k3Yz";

// `s` as a JSON string literal. Header values and models are printable text; control
// bytes are escaped all the same.
std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The fields of the last API request, for tests of what the gateway passed on.
struct LastFields {
  std::mutex mutex;
  std::string x_api_key, authorization, version, beta, target;  // GUARDED_BY(mutex)
};
LastFields& last_fields() {
  static LastFields f;
  return f;
}

struct MessagesFacts {
  std::string model = "mock";
  bool stream = false;
  int64_t max_tokens = -1;
};

bool read_facts(const std::string& body, MessagesFacts& out) {
  return each_member(body, [&](std::string_view key, auto value) {
    if (key == "model") {
      std::string_view m;
      if (!value.get_string().get(m)) out.model = std::string(m);
    } else if (key == "stream") {
      bool b = false;
      if (!value.get_bool().get(b)) out.stream = b;
    } else if (key == "max_tokens") {
      int64_t v = 0;
      if (!value.get_int64().get(v)) out.max_tokens = v;
    }
    return true;
  });
}

// What one answer reports: its id and its usage counts as JSON number text.
struct Plan {
  std::string id;
  std::string input, cache_creation, cache_read, output;
  std::string stop_reason;
};

Plan plan_for(const Switches& sw, const MessagesFacts& f) {
  Plan p;
  p.id = sw.id.empty() ? new_id("msg") : sw.id;
  p.input = sw.prompt.empty() ? std::to_string(prompt_tokens_default) : sw.prompt;
  p.cache_creation = std::to_string(cache_creation_tokens_default);
  p.cache_read = std::to_string(cache_read_tokens_default);
  // cache=W,R, after the model's '?' (the shared switches pass over it).
  const auto q = f.model.find('?');
  std::string_view rest =
      q == std::string::npos ? std::string_view() : std::string_view(f.model).substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view item = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (!item.starts_with("cache=")) continue;
    const std::string_view counts = item.substr(6);
    const auto comma = counts.find(',');
    p.cache_creation = std::string(counts.substr(0, comma));
    if (comma != std::string_view::npos) p.cache_read = std::string(counts.substr(comma + 1));
  }
  const bool cut = f.max_tokens >= 0 && f.max_tokens < sw.output;
  p.output = sw.completion.empty() ? std::to_string(cut ? f.max_tokens : sw.output) : sw.completion;
  p.stop_reason = cut ? "max_tokens" : "end_turn";
  return p;
}

std::string usage_json(const Plan& p, std::string_view output) {
  return "{\"input_tokens\":" + p.input + ",\"cache_creation_input_tokens\":" + p.cache_creation +
         ",\"cache_read_input_tokens\":" + p.cache_read +
         ",\"output_tokens\":" + std::string(output) + "}";
}

std::string id_member(const Switches& sw, const Plan& p) {
  return sw.no_id ? std::string() : "\"id\":" + json_string(p.id) + ",";
}

std::string message_body(const Switches& sw, const MessagesFacts& f, const Plan& p) {
  std::string body =
      "{" + id_member(sw, p) +
      "\"type\":\"message\",\"role\":\"assistant\",\"model\":" + json_string(f.model) +
      ",\"content\":[{\"type\":\"text\",\"text\":\"Hello from the mock "
      "provider.\"}],\"stop_reason\":" +
      json_string(p.stop_reason) + ",\"stop_sequence\":null";
  if (!sw.no_usage) body += ",\"usage\":" + usage_json(p, p.output);
  return body + "}";
}

// An error in Anthropic's shape. Errors about the supplier's account (401, 403, 429) name
// its organisation and a fragment of its key: the gateway must never pass either on.
std::string error_body(int status, std::string_view model) {
  const std::string org(supplier_org);
  const std::string key(supplier_key_fragment);
  std::string type = "api_error";
  std::string message = "mock: scripted error " + std::to_string(status);
  switch (status) {
    case 400:
      type = "invalid_request_error";
      break;
    case 401:
      type = "authentication_error",
      message = "invalid x-api-key " + key + " (organization " + org + ")";
      break;
    case 403:
      type = "permission_error", message = "Your organization " + org + " (key " + key +
                                           ") does not have access to this model";
      break;
    case 404:
      type = "not_found_error", message = "model: " + std::string(model);
      break;
    case 413:
      type = "request_too_large";
      break;
    case 429:
      type = "rate_limit_error";
      message = "This request would exceed the rate limit for your organization (" + org +
                ") of 50,000 input tokens per minute.";
      break;
    case 529:
      type = "overloaded_error", message = "Overloaded";
      break;
    default:
      break;
  }
  return "{\"type\":\"error\",\"error\":{\"type\":" + json_string(type) +
         ",\"message\":" + json_string(message) + "}}";
}

// A JSON answer with Anthropic's request-id header (header-id=TEXT, else a fresh one).
net::awaitable<bool> reply(beast::tcp_stream& stream, const Request& req, int status,
                           std::string body, const Switches& sw, int64_t retry_after_s = 0) {
  bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), req.version()};
  res.set(bhttp::field::content_type, "application/json");
  res.set("request-id", sw.header_id.empty() ? new_id("req") : sw.header_id);
  if (retry_after_s > 0) res.set(bhttp::field::retry_after, std::to_string(retry_after_s));
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  auto [ec, n] = co_await bhttp::async_write(stream, res, nothrow);
  co_return !ec && res.keep_alive();
}

net::awaitable<bool> scripted(beast::tcp_stream& stream, const Request& req, const Switches& sw,
                              std::string_view model) {
  co_return co_await reply(stream, req, sw.status, error_body(sw.status, model), sw,
                           sw.status == 429 ? sw.retry_after_s : 0);
}

std::string event(std::string_view name, std::string_view data) {
  return "event: " + std::string(name) + "\ndata: " + std::string(data) + "\n\n";
}

// The real event sequence, with the shared stream faults (write_events).
net::awaitable<bool> stream_reply(beast::tcp_stream& stream, const Switches& sw,
                                  const MessagesFacts& f, const Plan& p, unsigned version) {
  std::vector<std::string> events;
  const std::string start_usage = sw.no_usage ? std::string() : ",\"usage\":" + usage_json(p, "1");
  events.push_back(event(
      "message_start",
      "{\"type\":\"message_start\",\"message\":{" + id_member(sw, p) +
          "\"type\":\"message\",\"role\":\"assistant\",\"model\":" + json_string(f.model) +
          ",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null" + start_usage + "}}"));
  events.push_back(event(
      "content_block_start",
      R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"));
  events.push_back(event("ping", R"({"type": "ping"})"));
  for (int64_t i = 0; i < sw.chunks; ++i) {
    events.push_back(event(
        "content_block_delta",
        R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tok)" +
            std::to_string(i) + " \"}}"));
  }
  // malformed, streaming: one event whose data is not JSON, among the content events.
  if (sw.malformed) events.push_back(event("content_block_delta", "{\"id\": not json"));
  events.push_back(event("content_block_stop", R"({"type":"content_block_stop","index":0})"));
  // Cumulative usage, input counts included, as Anthropic's current models send it.
  const std::string delta_usage =
      sw.no_usage ? std::string() : ",\"usage\":" + usage_json(p, p.output);
  events.push_back(
      event("message_delta",
            "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":" + json_string(p.stop_reason) +
                ",\"stop_sequence\":null}" + delta_usage + "}"));
  events.push_back(event("message_stop", R"({"type":"message_stop"})"));
  co_return co_await write_events(stream, sw, version, events);
}

net::awaitable<bool> bad_body(beast::tcp_stream& stream, const Request& req,
                              std::string_view message) {
  co_return co_await reply(
      stream, req, 400,
      "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":" +
          json_string(message) + "}}",
      Switches{});
}

net::awaitable<bool> messages(beast::tcp_stream& stream, const Request& req) {
  Served served(req);
  MessagesFacts f;
  if (!read_facts(req.body(), f))
    co_return co_await bad_body(stream, req, "mock: body is not a JSON object");
  if (f.max_tokens < 1) co_return co_await bad_body(stream, req, "max_tokens: Field required");
  const Switches sw = parse_switches(f.model);
  co_await sleep_ms(sw.delay_ms);
  if (sw.oversize && !f.stream) co_return co_await write_oversize(stream, sw.status);
  if (sw.status != 200) co_return co_await scripted(stream, req, sw, f.model);
  const Plan p = plan_for(sw, f);
  if (f.stream)
    co_return co_await stream_reply(stream, sw, f, p, req.version()) && req.keep_alive();
  if (sw.malformed) co_return co_await reply(stream, req, 200, "{\"id\": truncated", sw);
  const std::string body = message_body(sw, f, p);
  if (sw.reset_after >= 0) co_return co_await write_then_reset(stream, body, sw.reset_after);
  co_return co_await reply(stream, req, 200, body, sw);
}

net::awaitable<bool> count_tokens(beast::tcp_stream& stream, const Request& req) {
  Served served(req);
  MessagesFacts f;
  if (!read_facts(req.body(), f))
    co_return co_await bad_body(stream, req, "mock: body is not a JSON object");
  const Switches sw = parse_switches(f.model);
  co_await sleep_ms(sw.delay_ms);
  if (sw.status != 200) co_return co_await scripted(stream, req, sw, f.model);
  const std::string input = sw.prompt.empty() ? std::to_string(prompt_tokens_default) : sw.prompt;
  co_return co_await reply(stream, req, 200, "{\"input_tokens\":" + input + "}", sw);
}

net::awaitable<bool> last(beast::tcp_stream& stream, const Request& req) {
  std::string body;
  {
    LastFields& l = last_fields();
    std::lock_guard lock(l.mutex);
    body = "{\"x-api-key\":" + json_string(l.x_api_key) +
           ",\"authorization\":" + json_string(l.authorization) +
           ",\"anthropic-version\":" + json_string(l.version) +
           ",\"anthropic-beta\":" + json_string(l.beta) + ",\"target\":" + json_string(l.target) +
           "}";
  }
  co_return co_await json_reply(stream, req.version(), req.keep_alive(), 200, std::move(body));
}

}  // namespace

void remember_fields(const Request& req) {
  LastFields& l = last_fields();
  std::lock_guard lock(l.mutex);
  l.x_api_key = std::string(req["x-api-key"]);
  l.authorization = std::string(req[bhttp::field::authorization]);
  l.version = std::string(req["anthropic-version"]);
  // Every line, joined as a list field's lines are: the gateway must pass on each one.
  l.beta.clear();
  for (auto [it, end] = req.equal_range("anthropic-beta"); it != end; ++it) {
    if (!l.beta.empty()) l.beta += ", ";
    l.beta += std::string(it->value());
  }
  l.target = std::string(req.method_string()) + " " + std::string(req.target());
}

bool is_anthropic_api(const Request& req) {
  const std::string_view path = path_of(req);
  if (req.method() == bhttp::verb::get) return path == "/mock/anthropic/last";
  return req.method() == bhttp::verb::post &&
         (path.ends_with("/messages") || path.ends_with("/messages/count_tokens"));
}

net::awaitable<bool> serve_anthropic_api(beast::tcp_stream& stream, const Request& req) {
  const std::string_view path = path_of(req);
  if (path == "/mock/anthropic/last") co_return co_await last(stream, req);
  if (path.ends_with("/count_tokens")) co_return co_await count_tokens(stream, req);
  co_return co_await messages(stream, req);
}

}  // namespace cairva::mock_provider
