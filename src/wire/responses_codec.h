// The Responses API's codec (wire/codec.h; SPEC-APIS §2): a non-streamed body's `id`
// (`resp_…`) and `usage` (input_tokens, output_tokens) at its top level; a stream of named
// SSE events whose terminal one (`response.completed`, `response.incomplete`,
// `response.failed`) carries the response and its usage; errors that end a stream as
// `event: error`.
//
// Neither type holds state shared between streams; a relay is one stream's, used by its
// own coroutine.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/error_code.h"
#include "base/result.h"
#include "core/types.h"
#include "wire/completion.h"
#include "wire/sse.h"

namespace cairva::wire {

// Relays one Responses stream to its client. Every event passes through as it arrives
// and unchanged, except:
// - the terminal event gets `"usage_source":"provider"` (or `"pending"` when its
//   response's usage is missing or invalid) added to its `response` object, and is held
//   back until finish(), so that the gateway settles the usage before the client sees the
//   stream end (as Chat Completions' [DONE] is);
// - nothing after a terminal event is relayed (the API sends nothing after it).
// The provider id is the `response.id` of the first event carrying a response
// (`response.created`). Events are told apart by their `event:` name; one without a name
// is read for its data's `type`.
class ResponsesStreamRelay {
 public:
  // The client's stream_options have no say here: the terminal event always carries usage.
  explicit ResponsesStreamRelay(bool /*client_wants_usage*/) {}

  // Feeds bytes from the provider and appends the client's bytes to `out`. False when an
  // event exceeds sse_event_bytes_max: the stream must then be treated as cut off.
  [[nodiscard]] bool feed(std::string_view bytes, std::string& out);
  // Ends a whole stream: appends the held terminal event, if one came. Later calls append
  // nothing.
  void finish(std::string& out);
  // Ends a stream the gateway cut: nothing is appended (the caller's error event follows),
  // and the held terminal event, if any, is never sent.
  void finish_cut(std::string& out);

  std::string_view provider_id() const { return provider_id_; }
  // The terminal event's response.usage, when valid.
  const std::optional<core::Tokens>& usage() const { return usage_; }
  // A terminal event came: a connection lost afterwards lost nothing.
  bool done_seen() const { return terminal_seen_; }

 private:
  void relay(const SseEvent& event, std::string& out);

  SseParser parser_;
  bool terminal_seen_ = false;
  bool finished_ = false;
  std::string provider_id_;
  std::optional<core::Tokens> usage_;
  std::string terminal_;  // the terminal event as the client gets it, held until finish()
};

struct ResponsesCodec {
  using Response = CompletionInfo;
  using Relay = ResponsesStreamRelay;

  // `id` and `usage.input_tokens` / `usage.output_tokens` at the body's top level.
  static Result<CompletionInfo> read_response(std::string_view body) {
    return read_completion(body, responses_usage_fields);
  }
  // usage_source at the top level; `"usage":null` with "pending" (SPEC §5).
  static std::string with_usage_source(std::string_view body, const CompletionInfo& read) {
    return wire::with_usage_source(body, read, !read.usage.has_value());
  }
  // `event: error` with `{"type":"error","code":…,"message":…,"param":null}`: the
  // Responses API's own stream error, which the OpenAI SDKs raise as an APIError.
  static void append_stream_error(std::string& out, ErrorCode code, std::string_view message);
};

}  // namespace cairva::wire
