// Server-sent events from a streaming provider (SPEC §5 "Streaming"): an incremental
// parser fed the stream in arbitrary pieces, and the per-stream relay that decides what of
// it the client sees and reads the provider id and usage on the way.
//
// Neither class is thread-safe: one per stream, used by the stream's own coroutine.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "core/types.h"

namespace cairva::wire {

// One complete event. The views point into the parser and stay valid until its next call.
struct SseEvent {
  std::string_view raw;   // the event's bytes as received, through its closing blank line
  std::string_view data;  // its data lines' values joined by '\n'
  std::string_view name;  // its `event:` field's value (the last one); empty when none
  bool has_data = false;  // false for an event of comments or other fields only

  bool is_done() const { return has_data && data == "[DONE]"; }
};

// Splits a byte stream into events per the SSE rules: lines end in CRLF, LF or CR (a
// CRLF may be split between two pushes), a blank line ends an event, ':' starts a
// comment, "data:" lines accumulate. An event still incomplete at the end of the stream is
// dropped, as the SSE rules say.
class SseParser {
 public:
  // Appends bytes received from the stream.
  void push(std::string_view bytes);
  // The next complete event; nullopt when more bytes are needed; an error when the
  // incomplete event already holds more than sse_event_bytes_max bytes.
  Result<std::optional<SseEvent>> next();
  // Bytes received but not yet returned in an event.
  size_t pending_bytes() const { return buffer_.size() - event_start_; }

 private:
  // The first CR or LF at or after `from`, or npos.
  size_t find_line_end(size_t from) const;
  void take_line(std::string_view line);
  Error too_large() const;

  std::string buffer_;      // unreturned bytes; the front may hold the last returned event
  size_t event_start_ = 0;  // where the current event begins in buffer_
  size_t line_start_ = 0;   // where the next unscanned line begins in buffer_
  size_t scanned_ = 0;      // buffer_ before this holds no line end past line_start_
  std::string data_;        // the current event's data; reused, so no allocation per event
  std::string name_;        // the current event's `event:` value; reused likewise
  bool has_data_ = false;
  bool returned_ = false;  // data_ belongs to the event last returned
};

// Pushes `bytes` into `parser` and hands each event it completes to relay(event), which
// returns false to stop. True when every complete event was relayed; false when the parser
// refused an event (sse_event_bytes_max) or relay stopped.
template <class Relay>
bool relay_events(SseParser& parser, std::string_view bytes, Relay&& relay) {
  parser.push(bytes);
  for (;;) {
    auto next = parser.next();
    if (!next) return false;
    if (!next->has_value()) return true;
    if (!relay(**next)) return false;
  }
}

// Relays one provider stream to one client (SPEC §5). For each event it appends to `out`
// what the client must receive:
// - the provider's bytes unchanged, for most events;
// - for a client that did not ask for usage: the usage-only chunk (empty choices and a
//   usage object) dropped, and the `usage` member removed from every other chunk;
// - for a client that asked: `"usage_source":"provider"` added to the usage chunk.
// `data: [DONE]` is held back until finish(), so the gateway settles the usage before the
// client sees the end of the stream.
class StreamRelay {
 public:
  explicit StreamRelay(bool client_wants_usage) : client_wants_usage_(client_wants_usage) {}

  // Feeds bytes from the provider and appends the client's bytes to `out` (which the
  // caller reuses across calls). Returns false when an event exceeds
  // sse_event_bytes_max: the stream must then be treated as cut off.
  [[nodiscard]] bool feed(std::string_view bytes, std::string& out);

  // Ends the client's stream, whether the provider sent [DONE], closed, or was cut off:
  // appends the pending-usage chunk when the client asked for usage and none came, then
  // `data: [DONE]`. Later calls append nothing.
  void finish(std::string& out);
  // Ends the client's stream of one the gateway cut (an in-flight timeout, an event over
  // the bound, the provider's connection lost): the pending-usage chunk as finish() does,
  // but no `data: [DONE]`, so that the client can tell the stream is truncated; the caller
  // then appends its error event. Later calls append nothing.
  void finish_cut(std::string& out);

  // The first chunk's "id" (unescaped); empty when none came.
  std::string_view provider_id() const { return provider_id_; }
  // The counts of the first valid usage chunk.
  const std::optional<core::Tokens>& usage() const { return usage_; }
  bool done_seen() const { return done_seen_; }

 private:
  void relay(const SseEvent& event, std::string& out);

  SseParser parser_;
  bool client_wants_usage_;
  bool done_seen_ = false;
  bool finished_ = false;
  std::string provider_id_;
  // Raw JSON of the first chunk's id, created and model, for the pending-usage chunk.
  std::string id_json_;
  std::string created_json_;
  std::string model_json_;
  std::optional<core::Tokens> usage_;
};

}  // namespace cairva::wire
