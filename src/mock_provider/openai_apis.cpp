#include "mock_provider/openai_apis.h"

#include <simdjson.h>

#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/ids.h"
#include "base/time.h"
#include "wire/api_paths.h"

namespace cairva::mock_provider {
namespace {

namespace net = boost::asio;
namespace od = simdjson::ondemand;

using wire::responses_path;
using wire::responses_prefix;
// Responses kept for GET/DELETE /v1/responses/{id}: the oldest go first beyond this.
constexpr size_t stored_responses_max = 10000;
// Components of each embedding unless the request asks for `dimensions` (at most the max).
constexpr int64_t embedding_dimensions_default = 8;
constexpr int64_t embedding_dimensions_max = 4096;
// Every response's created_at, as chat's `created`.
constexpr int64_t created_at_s = 1700000000;

net::awaitable<bool> bad_request(beast::tcp_stream& stream, const Request& req,
                                 std::string_view why) {
  co_return co_await json_reply(
      stream, req.version(), req.keep_alive(), 400,
      R"({"error":{"message":"mock: )" + std::string(why) +
          R"(","type":"invalid_request_error","param":null,"code":null}})");
}

// ---------------------------------------------------------------- stored responses

struct Stored {
  std::string response;     // the response object as the last event or body gave it
  std::string input_items;  // its input as items: a JSON array
};

class ResponseStore {
 public:
  void put(const std::string& id, Stored s) {
    std::lock_guard lock(mu_);
    if (by_id_.insert_or_assign(id, std::move(s)).second) order_.push_back(id);
    while (order_.size() > stored_responses_max) {
      by_id_.erase(order_.front());
      order_.pop_front();
    }
  }
  std::optional<Stored> get(const std::string& id) {
    std::lock_guard lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return std::nullopt;
    return it->second;
  }
  bool erase(const std::string& id) {
    std::lock_guard lock(mu_);
    return by_id_.erase(id) > 0;  // its id leaves `order_` when its turn comes
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, Stored> by_id_;  // GUARDED_BY(mu_)
  std::deque<std::string> order_;                  // GUARDED_BY(mu_): oldest first
};

ResponseStore& stored_responses() {
  static ResponseStore s;
  return s;
}

// ---------------------------------------------------------------- Responses

struct ResponsesFacts {
  std::string model = "mock";
  bool stream = false;
  int64_t limit = -1;  // max_output_tokens; -1 when absent
  std::string input_items = "[]";
};

std::string json_text(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;  // the mock's own texts have none
    out += c;
  }
  return out + "\"";
}

// `input` as the items GET /v1/responses/{id}/input_items lists: a string is one user
// message; an array's entries are as sent.
std::string items_of(od::value v) {
  std::string_view text;
  if (v.get_string().get(text) == simdjson::SUCCESS) {
    return R"([{"id":"msg_in_0","type":"message","role":"user","content":[{"type":"input_text","text":)" +
           json_text(text) + "}]}]";
  }
  std::string_view raw;
  if (simdjson::to_json_string(v).get(raw) == simdjson::SUCCESS && raw.starts_with('['))
    return std::string(raw);
  return "[]";
}

bool read_responses_facts(const std::string& body, ResponsesFacts& out) {
  return each_member(body, [&](std::string_view key, auto value) {
    std::string_view s;
    bool b = false;
    int64_t n = 0;
    if (key == "model" && !value.get_string().get(s))
      out.model = std::string(s);
    else if (key == "stream" && !value.get_bool().get(b))
      out.stream = b;
    else if (key == "max_output_tokens" && !value.get_int64().get(n))
      out.limit = n;
    else if (key == "input") {
      od::value input;
      if (value.get(input)) return false;
      out.input_items = items_of(input);
    }
    return true;
  });
}

struct ResponseText {
  std::string id;       // resp_…
  std::string item_id;  // msg_…
  std::vector<std::string> deltas;
  std::string text;         // the deltas joined
  int64_t output = 0;       // output tokens: the model's, cut at the request's limit
  bool incomplete = false;  // the limit cut the output
};

ResponseText plan_text(const Switches& sw, const ResponsesFacts& f) {
  ResponseText t;
  t.id = sw.id.empty() ? new_id("resp") : sw.id;
  t.item_id = "msg_" + t.id;
  for (int64_t i = 0; i < sw.chunks; ++i) t.deltas.push_back("tok" + std::to_string(i) + " ");
  for (const auto& d : t.deltas) t.text += d;
  t.output = f.limit >= 0 ? std::min(f.limit, sw.output) : sw.output;
  t.incomplete = f.limit >= 0 && sw.output > f.limit;
  return t;
}

std::string responses_usage_json(const Switches& sw, const ResponseText& t) {
  const std::string input = sw.prompt.empty() ? std::to_string(prompt_tokens_default) : sw.prompt;
  const std::string output = sw.completion.empty() ? std::to_string(t.output) : sw.completion;
  std::string out = R"({"input_tokens":)" + input +
                    R"(,"input_tokens_details":{"cached_tokens":0},"output_tokens":)" + output +
                    R"(,"output_tokens_details":{"reasoning_tokens":0})";
  auto i = exact_int(input), o = exact_int(output);
  if (i && o) out += ",\"total_tokens\":" + std::to_string(*i + *o);
  return out + "}";
}

std::string output_item(const ResponseText& t, std::string_view status, std::string_view text) {
  return R"({"id":")" + t.item_id + R"(","type":"message","status":")" + std::string(status) +
         R"(","role":"assistant","content":[)" +
         (status == "in_progress"
              ? std::string()
              : R"({"type":"output_text","text":)" + json_text(text) + R"(,"annotations":[]})") +
         "]}";
}

// The response object: `final` for the terminal event and the plain body, else as
// response.created shows it (in progress, no output, no usage).
std::string response_json(const Switches& sw, const ResponsesFacts& f, const ResponseText& t,
                          bool final) {
  std::string status = "in_progress", output = "[]", usage = "null";
  std::string error = "null", incomplete = "null";
  if (final) {
    status = sw.failed ? "failed" : t.incomplete ? "incomplete" : "completed";
    if (!sw.failed) output = "[" + output_item(t, "completed", t.text) + "]";
    if (sw.failed) error = R"({"code":"server_error","message":"mock: scripted failure"})";
    if (status == "incomplete") incomplete = R"({"reason":"max_output_tokens"})";
    if (!sw.no_usage) usage = responses_usage_json(sw, t);
  }
  std::string out = "{";
  if (!sw.no_id) out += R"("id":")" + t.id + "\",";
  out +=
      R"("object":"response","created_at":)" + std::to_string(created_at_s) + R"(,"status":")" +
      status + R"(","error":)" + error + R"(,"incomplete_details":)" + incomplete +
      R"(,"instructions":null,"max_output_tokens":)" +
      (f.limit >= 0 ? std::to_string(f.limit) : "null") + R"(,"model":)" + json_text(f.model) +
      R"(,"output":)" + output +
      R"(,"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},)"
      R"("store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],)"
      R"("top_p":1.0,"truncation":"disabled","usage":)" +
      usage + R"(,"user":null,"metadata":{}})";
  return out;
}

// One event: `event: <type>` and its data with type and sequence_number first.
std::string event(std::string_view type, int64_t seq, std::string_view rest) {
  return "event: " + std::string(type) + "\ndata: {\"type\":\"" + std::string(type) +
         "\",\"sequence_number\":" + std::to_string(seq) + "," + std::string(rest) + "}\n\n";
}

// The Responses API's event sequence for one text message.
std::vector<std::string> response_events(const Switches& sw, const ResponsesFacts& f,
                                         const ResponseText& t) {
  std::vector<std::string> ev;
  int64_t seq = 0;
  const std::string at = R"("item_id":")" + t.item_id + R"(","output_index":0,"content_index":0,)";
  ev.push_back(event("response.created", seq++, R"("response":)" + response_json(sw, f, t, false)));
  ev.push_back(
      event("response.in_progress", seq++, R"("response":)" + response_json(sw, f, t, false)));
  ev.push_back(event("response.output_item.added", seq++,
                     R"("output_index":0,"item":)" + output_item(t, "in_progress", "")));
  ev.push_back(event("response.content_part.added", seq++,
                     at + R"("part":{"type":"output_text","text":"","annotations":[]})"));
  for (const auto& d : t.deltas) {
    ev.push_back(event("response.output_text.delta", seq++,
                       at + R"("delta":)" + json_text(d) + R"(,"logprobs":[])"));
  }
  // malformed, streaming: one event whose data is not JSON, among the deltas.
  if (sw.malformed)
    ev.push_back("event: response.output_text.delta\ndata: {\"type\": not json\n\n");
  ev.push_back(event("response.output_text.done", seq++,
                     at + R"("text":)" + json_text(t.text) + R"(,"logprobs":[])"));
  ev.push_back(event("response.content_part.done", seq++,
                     at + R"("part":{"type":"output_text","text":)" + json_text(t.text) +
                         R"(,"annotations":[]})"));
  ev.push_back(event("response.output_item.done", seq++,
                     R"("output_index":0,"item":)" + output_item(t, "completed", t.text)));
  const std::string_view terminal = sw.failed      ? "response.failed"
                                    : t.incomplete ? "response.incomplete"
                                                   : "response.completed";
  ev.push_back(event(terminal, seq++, R"("response":)" + response_json(sw, f, t, true)));
  return ev;
}

net::awaitable<bool> create_response(beast::tcp_stream& stream, const Request& req) {
  ResponsesFacts facts;
  if (!read_responses_facts(req.body(), facts))
    co_return co_await bad_request(stream, req, "body is not a JSON object");
  const Switches sw = parse_switches(facts.model);
  co_await sleep_ms(sw.delay_ms);
  if (sw.status != 200) co_return co_await scripted_error(stream, req, sw);
  const ResponseText t = plan_text(sw, facts);
  const std::string final_response = response_json(sw, facts, t, true);
  if (!sw.no_id) stored_responses().put(t.id, Stored{final_response, facts.input_items});
  if (facts.stream) {
    const bool whole =
        co_await write_events(stream, sw, req.version(), response_events(sw, facts, t));
    co_return whole&& req.keep_alive();
  }
  if (sw.malformed)
    co_return co_await json_reply(stream, req.version(), req.keep_alive(), 200,
                                  "{\"id\": truncated");
  co_return co_await json_reply(stream, req.version(), req.keep_alive(), 200, final_response,
                                sw.header_id);
}

net::awaitable<bool> not_found(beast::tcp_stream& stream, const Request& req,
                               const std::string& id) {
  co_return co_await json_reply(
      stream, req.version(), req.keep_alive(), 404,
      R"({"error":{"message":"Response with id ')" + id +
          R"(' not found.","type":"invalid_request_error","param":null,"code":null}})");
}

// GET and DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items.
net::awaitable<bool> response_object(beast::tcp_stream& stream, const Request& req) {
  const std::string_view rest = path_of(req).substr(responses_prefix.size());
  const auto slash = rest.find('/');
  const std::string id(rest.substr(0, slash));
  const bool items = slash != std::string_view::npos;
  const bool erase = req.method() == bhttp::verb::delete_;
  auto stored = stored_responses().get(id);
  if (!stored || (erase && !stored_responses().erase(id)))
    co_return co_await not_found(stream, req, id);
  std::string body;
  if (erase) {
    body = R"({"id":")" + id + R"(","object":"response","deleted":true})";
  } else if (items) {
    body = R"({"object":"list","data":)" + stored->input_items + R"(,"has_more":false})";
  } else {
    body = stored->response;
  }
  co_return co_await json_reply(stream, req.version(), req.keep_alive(), 200, std::move(body));
}

// ---------------------------------------------------------------- Embeddings

struct EmbeddingsFacts {
  std::string model = "mock";
  int64_t dimensions = embedding_dimensions_default;
  bool base64 = false;
  std::vector<std::string> items;  // each input as text (a token array's raw JSON)
  int64_t tokens = 0;              // what the usage reports, unless usage=P
};

// Roughly a token per four bytes of text, as providers' tokenizers give for English.
int64_t tokens_of_text(std::string_view text) {
  return std::max<int64_t>(1, static_cast<int64_t>(text.size() + 3) / 4);
}

// One input: a string, or a token array (its length counts exactly).
bool read_embedding_item(od::value v, EmbeddingsFacts& out) {
  std::string_view text;
  if (v.get_string().get(text) == simdjson::SUCCESS) {
    out.items.emplace_back(text);
    out.tokens += tokens_of_text(text);
    return true;
  }
  od::array tokens;
  if (v.get_array().get(tokens)) return false;
  std::string raw;
  for (auto t : tokens) {
    int64_t token = 0;
    if (t.get_int64().get(token)) return false;
    raw += std::to_string(token) + ",";
    ++out.tokens;
  }
  out.items.push_back(std::move(raw));
  return true;
}

bool read_embedding_input(od::value v, EmbeddingsFacts& out) {
  od::json_type type;
  if (v.type().get(type)) return false;
  if (type == od::json_type::string) return read_embedding_item(v, out);
  od::array arr;
  if (v.get_array().get(arr)) return false;
  std::string raw;
  bool token_array = false;
  for (auto element : arr) {
    od::value e;
    if (element.get(e)) return false;
    od::json_type et;
    if (e.type().get(et)) return false;
    if (et == od::json_type::number) {  // one token array: the whole input is one item
      int64_t token = 0;
      if (e.get_int64().get(token)) return false;
      raw += std::to_string(token) + ",";
      ++out.tokens;
      token_array = true;
    } else if (!read_embedding_item(e, out)) {
      return false;
    }
  }
  if (token_array) out.items.push_back(std::move(raw));
  return !out.items.empty();
}

bool read_embeddings_facts(const std::string& body, EmbeddingsFacts& out) {
  bool input = false;
  const bool read = each_member(body, [&](std::string_view key, auto value) {
    std::string_view s;
    int64_t n = 0;
    if (key == "model" && !value.get_string().get(s))
      out.model = std::string(s);
    else if (key == "dimensions" && !value.get_int64().get(n))
      out.dimensions = std::clamp<int64_t>(n, 1, embedding_dimensions_max);
    else if (key == "encoding_format" && !value.get_string().get(s))
      out.base64 = s == "base64";
    else if (key == "input") {
      od::value v;
      if (value.get(v)) return false;
      input = read_embedding_input(v, out);
    }
    return true;
  });
  return read && input;
}

// A deterministic unit vector for `text`: the same input always embeds the same.
std::vector<float> embed(std::string_view text, int64_t dimensions) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  std::vector<float> v(static_cast<size_t>(dimensions));
  double norm = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(std::sin(static_cast<double>(h % 1000003) + static_cast<double>(i)));
    norm += static_cast<double>(v[i]) * v[i];
  }
  const double scale = norm > 0 ? 1.0 / std::sqrt(norm) : 1.0;
  for (float& x : v) x = static_cast<float>(x * scale);
  return v;
}

std::string base64(const std::vector<float>& v) {
  static constexpr char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());  // little-endian float32, as OpenAI sends
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t chunk = 0;
    for (size_t k = 0; k < 3; ++k)
      chunk = (chunk << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? alphabet[(chunk >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::string embeddings_body(const Switches& sw, const EmbeddingsFacts& f) {
  std::string data;
  for (size_t i = 0; i < f.items.size(); ++i) {
    const std::vector<float> v = embed(f.items[i], f.dimensions);
    std::string embedding;
    if (f.base64) {
      embedding = "\"" + base64(v) + "\"";
    } else {
      for (const float x : v) embedding += (embedding.empty() ? "" : ",") + std::to_string(x);
      embedding = "[" + embedding + "]";
    }
    data += std::string(i ? "," : "") + R"({"object":"embedding","index":)" + std::to_string(i) +
            R"(,"embedding":)" + embedding + "}";
  }
  std::string body = R"({"object":"list","data":[)" + data + R"(],"model":)" + json_text(f.model);
  if (!sw.no_usage) {
    const std::string prompt = sw.prompt.empty() ? std::to_string(f.tokens) : sw.prompt;
    body += R"(,"usage":{"prompt_tokens":)" + prompt + R"(,"total_tokens":)" + prompt + "}";
  }
  return body + "}";
}

net::awaitable<bool> create_embeddings(beast::tcp_stream& stream, const Request& req) {
  EmbeddingsFacts facts;
  if (!read_embeddings_facts(req.body(), facts)) {
    co_return co_await bad_request(stream, req, "input must be a string, strings, or token arrays");
  }
  const Switches sw = parse_switches(facts.model);
  co_await sleep_ms(sw.delay_ms);
  if (sw.status != 200) co_return co_await scripted_error(stream, req, sw);
  if (sw.malformed)
    co_return co_await json_reply(stream, req.version(), req.keep_alive(), 200,
                                  "{\"object\": truncated");
  // The body has no id: OpenAI's x-request-id header is the request's (SPEC-APIS §2).
  const std::string request_id = sw.header_id.empty() ? new_id("req") : sw.header_id;
  co_return co_await json_reply(stream, req.version(), req.keep_alive(), 200,
                                embeddings_body(sw, facts), request_id);
}

// ---------------------------------------------------------------- Models

constexpr std::array<std::string_view, 2> listed_models = {"mock-model-a", "mock-model-b"};

// Anthropic's GET /v1/models list: one page holding every model.
std::string anthropic_models_body() {
  const std::string created = format_rfc3339(created_at_s * micros_per_second);
  std::string data;
  for (const std::string_view id : listed_models) {
    data += std::string(data.empty() ? "" : ",") + R"({"type":"model","id":")" + std::string(id) +
            R"(","display_name":")" + std::string(id) + R"(","created_at":")" + created + R"("})";
  }
  return R"({"data":[)" + data + R"(],"has_more":false,"first_id":")" +
         std::string(listed_models.front()) + R"(","last_id":")" +
         std::string(listed_models.back()) + R"("})";
}

// GET /v1/models in the dialect it is asked in: Anthropic's API requires anthropic-version
// on every call, OpenAI's never sees one.
net::awaitable<bool> list_models(beast::tcp_stream& stream, const Request& req) {
  if (req.find("anthropic-version") != req.end()) {
    co_return co_await json_reply(stream, req.version(), req.keep_alive(), 200,
                                  anthropic_models_body());
  }
  std::string data;
  for (const std::string_view id : listed_models) {
    data += std::string(data.empty() ? "" : ",") + R"({"id":")" + std::string(id) +
            R"(","object":"model","created":)" + std::to_string(created_at_s) +
            R"(,"owned_by":"mock"})";
  }
  co_return co_await json_reply(stream, req.version(), req.keep_alive(), 200,
                                R"({"object":"list","data":[)" + data + "]}");
}

enum class Api : uint8_t { none, responses, response_object, embeddings, models };

Api api_of(const Request& req) {
  const std::string_view path = path_of(req);
  const bool post = req.method() == bhttp::verb::post;
  const bool get = req.method() == bhttp::verb::get;
  if (post && path == responses_path) return Api::responses;
  if (post && path == "/v1/embeddings") return Api::embeddings;
  if (get && path == "/v1/models") return Api::models;
  if ((get || req.method() == bhttp::verb::delete_) && path.starts_with(responses_prefix) &&
      path.size() > responses_prefix.size()) {
    const std::string_view rest = path.substr(responses_prefix.size());
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos) return Api::response_object;
    if (get && slash > 0 && rest.substr(slash) == "/input_items") return Api::response_object;
  }
  return Api::none;
}

}  // namespace

bool is_openai_api(const Request& req) { return api_of(req) != Api::none; }

net::awaitable<bool> serve_openai_api(beast::tcp_stream& stream, const Request& req) {
  Served served(req);
  switch (api_of(req)) {
    case Api::responses:
      co_return co_await create_response(stream, req);
    case Api::response_object:
      co_return co_await response_object(stream, req);
    case Api::embeddings:
      co_return co_await create_embeddings(stream, req);
    case Api::models:
      co_return co_await list_models(stream, req);
    case Api::none:
      break;
  }
  co_return co_await bad_request(stream, req, "not an OpenAI API path");
}

}  // namespace cairva::mock_provider
