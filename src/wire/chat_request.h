// Chat Completions requests (SPEC §3, §4): inspection of a client's body — validation,
// the facts admission needs, where the limit fields sit — and the splice that lowers the
// limit or asks the provider for the usage chunk.
//
// Pure functions over bytes; thread-safe (each thread parses with its own scratch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "core/estimate.h"
#include "wire/byte_span.h"

namespace cairva::wire {

// What a valid chat request asks for, and where the members a rewrite touches are.
struct ChatRequest {
  std::string model;
  bool stream = false;
  bool include_usage = false;                    // stream_options.include_usage is true
  int64_t n = 1;                                 // 1..choices_max
  std::optional<int64_t> max_tokens;             // absent or null: nullopt
  std::optional<int64_t> max_completion_tokens;  // absent or null: nullopt
  std::optional<std::string> service_tier;       // absent or null: nullopt
  core::PromptFacts prompt;                      // SPEC §4: chars, media, items = messages

  // Byte offsets into the inspected body, for rewrite_chat_request.
  size_t object_open = 0;                    // the top-level '{'
  std::optional<ByteSpan> max_tokens_value;  // set when the member is present (even null)
  std::optional<ByteSpan> max_completion_tokens_value;
  std::optional<ByteSpan> stream_options_value;  // set when present: an object or null
  bool stream_options_has_members = false;
  std::optional<ByteSpan> include_usage_value;  // inside stream_options, when present
  friend bool operator==(const ChatRequest&, const ChatRequest&) = default;
};

// Validates `body` and reads it. Errors are ErrorCode::invalid_request with a message
// naming the field ("max_tokens must be an integer >= 1"): malformed JSON, trailing
// bytes, a non-object body, nesting deeper than json_depth_max, a member repeated,
// `model` not a string, `messages` not a non-empty array of objects, `n`, `max_tokens`,
// `max_completion_tokens` not integers in range, `stream` not a boolean, `stream_options`
// not an object, `stream_options.include_usage` not a boolean, `service_tier` not a
// string. Absent and null mean the same for the optional members. `prompt` follows SPEC
// §4's one rule (estimate_walk.h): every key and string value but the top-level model's
// value, media payloads at a fixed estimate each.
Result<ChatRequest> inspect_chat_request(std::string_view body);
// The same, without copying `body` into the parser's padded buffer when it has
// SIMDJSON_PADDING (64) bytes of spare capacity: the parser reads it in place. `body` is
// unchanged on return (its spare capacity is written); reserve the slack when filling it
// to take this path. Not to be read by another thread meanwhile.
Result<ChatRequest> inspect_chat_request(std::string& body);

// The limit fields a provider may take (SPEC §8 `[[providers]] limit_field`).
inline constexpr std::string_view limit_field_max_completion_tokens = "max_completion_tokens";
inline constexpr std::string_view limit_field_max_tokens = "max_tokens";

// How the gateway changes a request before forwarding it.
struct RewritePlan {
  // The held per-choice limit (SPEC §4), lowered or not: every limit member the request
  // carries gets it, and `limit_field` is added with it when the request carries none,
  // so the provider can never produce more than was held.
  int64_t per_choice_limit = 0;
  // The provider's limit field: limit_field_max_completion_tokens or limit_field_max_tokens.
  std::string_view limit_field = limit_field_max_completion_tokens;
  // Ask the provider for the usage chunk (stream_options.include_usage = true).
  bool include_usage = false;
};

// True when rewrite_chat_request would change `request`'s body: a limit member is null or
// differs from the plan's, none is present, or include_usage is asked for.
bool rewrite_needed(const ChatRequest& request, const RewritePlan& plan);

// `body` with the plan spliced into its original bytes: the per-choice limit replaces the
// value of every limit member the client sent, null ones included (`"<limit_field>":N` is
// added when it sent none); include_usage is set inside an existing stream_options or a
// new one is added. Every other byte is unchanged. REQUIRES: `request` was inspected from
// this `body`; per_choice_limit >= 1; limit_field is one of the two names above.
std::string rewrite_chat_request(std::string_view body, const ChatRequest& request,
                                 const RewritePlan& plan);

}  // namespace cairva::wire
