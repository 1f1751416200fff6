// The Anthropic Messages API's codec (wire/codec.h; SPEC-APIS §2): a non-streamed body's
// `id` (`msg_…`) and `usage` at its top level; a stream of named SSE events in which
// `message_start` carries the id and the input counts, `message_delta` the cumulative
// output count (and, from some models, input counts again), and `message_stop` ends the
// message; errors in Anthropic's shape, a cut stream's as `event: error`.
//
// Booked input = input_tokens + cache_creation_input_tokens + cache_read_input_tokens
// (cache counts absent or null count 0); booked output = output_tokens.
//
// Neither type holds state shared between streams; a relay is one stream's, used by its
// own coroutine.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "base/error_code.h"
#include "base/result.h"
#include "core/types.h"
#include "wire/completion.h"
#include "wire/sse.h"

namespace cairva::wire {

// The usage counts a message reported, each field's latest value.
struct MessageUsageCounts {
  std::optional<int64_t> input, cache_creation, cache_read, output;
  // A field was present with a value that is no count (negative, fractional, beyond
  // usage_tokens_max, not a number), or repeated in one object: the usage is not believed.
  bool invalid = false;

  // The booked counts: input plus both cache counts, and output; nullopt when invalid or
  // when input_tokens or output_tokens never came.
  std::optional<core::Tokens> tokens() const;
};

// Reads a provider's Messages body (id, usage). `usage` is set only when usage's counts
// are valid (MessageUsageCounts::tokens); anything else counts as usage missing. A body
// that is not a valid JSON object is an ErrorCode::provider_unavailable error.
Result<CompletionInfo> read_message(std::string_view body);

// Relays one Messages stream to its client. Every event passes through as it arrives and
// unchanged, except:
// - `message_delta` gets `"usage_source"` added to its object, and is held back, with
//   whatever follows it, until finish(): only then is it known whether the stream ends
//   with `message_stop` and its usage is booked ("provider") or not ("pending");
// - `message_stop` is held back until finish(), so that the gateway settles the usage
//   before the client sees the message end (as Chat Completions' [DONE] is);
// - nothing after `message_stop` is relayed (the API sends nothing after it).
// Events are told apart by their `event:` name; one without a name is read for its
// data's `type`. An event whose data is not a JSON object passes through untouched.
class MessagesStreamRelay {
 public:
  // A Messages stream always reports usage: the flag has no say here.
  explicit MessagesStreamRelay(bool /*client_wants_usage*/) {}

  // Feeds bytes from the provider and appends the client's bytes to `out`. False when an
  // event, or what is held back after message_delta, exceeds sse_event_bytes_max: the
  // stream must then be treated as cut off.
  [[nodiscard]] bool feed(std::string_view bytes, std::string& out);
  // Ends a whole stream: the held message_delta (usage_source "provider" when usage() is
  // set, else "pending") and message_stop, if it came. Later calls append nothing.
  void finish(std::string& out);
  // Ends a stream the gateway cut: the held message_delta as finish() gives it, never
  // message_stop (the caller's error event follows). Later calls append nothing.
  void finish_cut(std::string& out);

  // message_start's message.id (unescaped); empty when none came.
  std::string_view provider_id() const { return provider_id_; }
  // The booked counts, once message_stop came with valid usage (SPEC-APIS §2).
  const std::optional<core::Tokens>& usage() const { return usage_; }
  // message_stop came: a connection lost afterwards lost nothing.
  bool done_seen() const { return stop_seen_; }

 private:
  bool relay(const SseEvent& event, std::string& out);
  // Appends `bytes` to what the client gets: the held tail once message_delta is held.
  bool pass(std::string_view bytes, std::string& out);
  void release_held(std::string& out);

  SseParser parser_;
  bool stop_seen_ = false;
  bool finished_ = false;
  std::string provider_id_;
  MessageUsageCounts counts_;
  std::optional<core::Tokens> usage_;
  // The held message_delta, rebuilt as one data line, and what followed it: usage_source
  // goes in at held_split_ (before the delta's closing brace).
  std::string held_;
  size_t held_split_ = 0;
  bool holding_ = false;
  bool held_has_members_ = false;  // the delta's object was not empty: a comma goes first
  std::string stop_;               // message_stop as received, until finish()
};

struct MessagesCodec {
  using Response = CompletionInfo;
  using Relay = MessagesStreamRelay;

  static Result<CompletionInfo> read_response(std::string_view body) { return read_message(body); }
  // usage_source at the top level; `"usage":null` with "pending" (SPEC §5).
  static std::string with_usage_source(std::string_view body, const CompletionInfo& read) {
    return wire::with_usage_source(body, read, !read.usage.has_value());
  }
  // `event: error` with `{"type":"error","error":{…}}`: Anthropic's own stream error,
  // which the Anthropic SDKs raise as an APIError.
  static void append_stream_error(std::string& out, ErrorCode code, std::string_view message);
};

}  // namespace cairva::wire
