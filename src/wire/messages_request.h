// Anthropic Messages requests (`POST /v1/messages`, SPEC-APIS §2; `POST
// /v1/messages/count_tokens`, §3): inspection of a client's body — validation, the facts
// admission needs, where the limit members sit — and the splice that writes the held limit
// into `max_tokens` and, when that limit falls to the thinking budget, lowers the budget
// under it.
//
// Pure functions over bytes; thread-safe (each thread parses with its own scratch).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "core/estimate.h"
#include "wire/byte_span.h"

namespace cairva::wire {

// Anthropic's least `thinking.budget_tokens`: a budget the gateway would have to lower
// under it makes the request refused (402 allocation_exhausted) rather than forwarded to a
// provider that must reject it (SPEC-APIS §2).
inline constexpr int64_t thinking_budget_tokens_min = 1024;

// Which call a body is for: count_tokens takes no max_tokens.
enum class MessagesCall : uint8_t { create, count_tokens };

// What a valid Messages request asks for, and where its limit members are.
struct MessagesRequest {
  std::string model;
  bool stream = false;
  std::optional<int64_t> max_tokens;        // required for create; absent or null: nullopt
  std::optional<int64_t> thinking_budget;   // thinking.budget_tokens; absent or null: nullopt
  std::optional<std::string> service_tier;  // absent or null: nullopt
  core::PromptFacts prompt;                 // SPEC §4's one rule; items = entries of messages

  // Byte offsets into the inspected body, for rewrite_messages_request.
  std::optional<ByteSpan> max_tokens_value;     // set when max_tokens is present
  std::optional<ByteSpan> budget_tokens_value;  // set when thinking.budget_tokens is present
  friend bool operator==(const MessagesRequest&, const MessagesRequest&) = default;
};

// Validates `body` and reads it. Errors are ErrorCode::invalid_request with a message
// naming the field: malformed JSON, trailing bytes, a non-object body, nesting deeper than
// json_depth_max, a member read by name repeated, `model` missing or not a string,
// `messages` missing or not a non-empty array of objects, `max_tokens` missing (create
// only: "max_tokens is required", as Anthropic answers) or not an integer in range,
// `stream` not a boolean, `thinking` not an object, `thinking.budget_tokens` not an
// integer in range, `service_tier` not a string. Absent and null mean the same for the
// optional members. Every other member (system, tools, metadata…) passes through and
// counts toward the estimate.
Result<MessagesRequest> inspect_messages_request(std::string_view body,
                                                 MessagesCall call = MessagesCall::create);

// The least per-choice limit admission may lower `max_tokens` to
// (core::RequestFacts::per_choice_min): 1 without a thinking budget; with one, above the
// budget or above thinking_budget_tokens_min, whichever is less, so that the lowered budget
// (max_tokens − 1) is never under what the request asked or under the provider's minimum.
int64_t messages_per_choice_min(const MessagesRequest& request);

// True when rewrite_messages_request would change the body: the held limit is not the
// request's max_tokens.
bool messages_rewrite_needed(const MessagesRequest& request, int64_t per_choice_limit);

// `body` with `max_tokens` set to `per_choice_limit` (the held limit, SPEC §4) and, when
// that lowered it to or under `thinking.budget_tokens`, the budget set to
// per_choice_limit − 1. Every other byte is unchanged. REQUIRES: `request` was inspected
// from this `body` as a create call; per_choice_limit <= its max_tokens (admission never
// holds more than was asked) and, when less, >= messages_per_choice_min(request).
std::string rewrite_messages_request(std::string_view body, const MessagesRequest& request,
                                     int64_t per_choice_limit);

}  // namespace cairva::wire
