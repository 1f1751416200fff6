// What every API the fake provider serves shares (mock_provider.h lists the switches):
// the switches read from a request's model, the counters GET /mock/stats shows, replies
// (JSON, scripted errors) and an SSE writer that applies the stream faults.
//
// Internal to cairva_mock_provider. Everything here is safe from any event loop's thread.
#pragma once

#include <simdjson.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "http/executor.h"

namespace cairva::mock_provider {

namespace beast = boost::beast;
namespace bhttp = beast::http;
using Request = bhttp::request<bhttp::string_body>;

using http::nothrow;

inline constexpr int64_t prompt_tokens_default = 10;
inline constexpr int64_t completion_tokens_default = 7;
inline constexpr int64_t chunks_default = 3;
// split=N pieces: at least one byte, at most a whole event.
inline constexpr int64_t split_bytes_max = 1 << 20;
// What the oversize script's Content-Length announces (1 TiB): past any body limit.
inline constexpr uint64_t oversize_announced_bytes = uint64_t{1} << 40;

struct Stats {
  std::atomic<int64_t> requests{0};  // every API request served (not /mock/…)
  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> peak_in_flight{0};
  std::mutex last_mutex;
  std::string last_body;           // GUARDED_BY(last_mutex)
  std::string last_authorization;  // GUARDED_BY(last_mutex)
  std::string last_target;         // GUARDED_BY(last_mutex): method and target
  std::mutex released_mutex;
  std::set<std::string, std::less<>> released;  // GUARDED_BY(released_mutex): hold names
};
Stats& stats();

// Counts one API request in flight for its life, and records it as the last request.
class Served {
 public:
  explicit Served(const Request& req);
  ~Served();
  Served(const Served&) = delete;
  Served& operator=(const Served&) = delete;
};

struct Switches {
  bool no_usage = false, malformed = false, no_id = false, oversize = false;
  bool stamp = false;   // streaming: content "stamp:<steady_clock µs at send>" (bench/stream_load)
  bool failed = false;  // responses: the response fails (status "failed", response.failed)
  int status = 200;
  int64_t delay_ms = 0, chunks = chunks_default, chunk_delay_ms = 0, cut_after = -1;
  int64_t reset_after = -1, truncate_after = -1, split_bytes = 0;
  int64_t retry_after_s = 3;                   // a 429's Retry-After
  int64_t output = completion_tokens_default;  // per choice, before the request's limit
  std::string id, header_id, hold;
  // usage=P,C as sent (any JSON number text: negative, fractional, huge); empty = default.
  std::string prompt, completion;
};

// A request target's path: what precedes any '?'.
inline std::string_view path_of(const Request& req) {
  const std::string_view target = req.target();
  return target.substr(0, target.find('?'));
}

// Runs fn(key, value) on each top-level member of the JSON object `body`, in order, while
// fn returns true (`value` is a simdjson_result: reading a wrong type is an error, not a
// throw). False when `body` is not a JSON object or fn returned false. The fake reads only
// the members it answers by; refusing bad input is the gateway's job.
template <class Fn>
bool each_member(const std::string& body, Fn&& fn) {
  thread_local simdjson::ondemand::parser parser;
  simdjson::padded_string padded(body);
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc)) return false;
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj)) return false;
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return false;
    if (!fn(key, field.value())) return false;
  }
  return true;
}

// The switches after a '?' in `model`.
Switches parse_switches(std::string_view model);

// The whole of `s` as a decimal int64, else nullopt.
std::optional<int64_t> exact_int(std::string_view s);

boost::asio::awaitable<void> sleep_ms(int64_t ms);
// hold=NAME: waits until POST /mock/release/NAME.
boost::asio::awaitable<void> wait_for_release(std::string_view name);
// POST /mock/release/NAME: every stream held with hold=NAME goes on (and later ones pass).
void release(std::string_view name);
// Closes with a TCP RST (linger 0) instead of a FIN: a connection reset by the peer.
void reset(beast::tcp_stream& stream);

// Writes a JSON reply. Returns false when the connection must close.
boost::asio::awaitable<bool> json_reply(beast::tcp_stream& stream, unsigned version,
                                        bool keep_alive, int status, std::string body,
                                        const std::string& header_id = {},
                                        int64_t retry_after_s = 0);
// The scripted error of status=N: errors about the supplier's account (401, 403, 429)
// worded as OpenAI words them, naming the supplier's organisation and a key fragment.
std::string error_body(int status);
// Answers the status=N switch: its error body, with Retry-After on a 429.
boost::asio::awaitable<bool> scripted_error(beast::tcp_stream& stream, const Request& req,
                                            const Switches& sw);

// oversize: a head announcing oversize_announced_bytes with `status` and a few bytes of
// the body, then the connection closes: a gateway that read on would see a cut-off body,
// one that checked the length refuses first. Returns false: the connection must close.
boost::asio::awaitable<bool> write_oversize(beast::tcp_stream& stream, int status);
// reset-after=N on a body that is not streamed: the head and the first N bytes of `body`,
// then a TCP reset. Returns false: the connection is gone.
boost::asio::awaitable<bool> write_then_reset(beast::tcp_stream& stream, std::string_view body,
                                              int64_t reset_after);

// Streams `events` (each a whole SSE event) with the switches' faults: cut-after,
// reset-after, truncate-after, split, chunk-delay-ms, after the response head (with
// x-request-id from header-id). `replace(i)`, when set, may give event i's bytes as it is
// written (nullopt: as built). Returns false when the connection must close.
using EventReplacer = std::function<std::optional<std::string>(size_t i)>;
boost::asio::awaitable<bool> write_events(beast::tcp_stream& stream, const Switches& sw,
                                          unsigned version, const std::vector<std::string>& events,
                                          const EventReplacer& replace = {});

}  // namespace cairva::mock_provider
