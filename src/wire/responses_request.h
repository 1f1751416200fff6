// Responses requests (`POST /v1/responses`, SPEC-APIS §2): inspection of a client's body —
// validation, the facts admission needs, where the limit field sits — and the splice that
// writes the held limit into `max_output_tokens`.
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

// What a valid Responses request asks for, and where its limit member is.
struct ResponsesRequest {
  std::string model;
  bool stream = false;
  std::optional<int64_t> max_output_tokens;  // absent or null: nullopt
  std::optional<std::string> service_tier;   // absent or null: nullopt
  core::PromptFacts prompt;  // SPEC §4's one rule; items = entries of input (1 for a string)

  // Byte offsets into the inspected body, for rewrite_responses_request.
  size_t object_open = 0;                           // the top-level '{'
  std::optional<ByteSpan> max_output_tokens_value;  // set when the member is present (even null)
  friend bool operator==(const ResponsesRequest&, const ResponsesRequest&) = default;
};

// Validates `body` and reads it. Errors are ErrorCode::invalid_request with a message
// naming the field: malformed JSON, trailing bytes, a non-object body, nesting deeper than
// json_depth_max, a member read by name repeated, `model` missing or not a string,
// `input` not a string or an array, `max_output_tokens` not an integer in range, `stream`
// or `background` not a boolean, `service_tier` not a string, and `background: true`
// ("background responses are not supported": their usage arrives only through later
// polling). Absent and null mean the same for the optional members; `input` is optional
// (a request may continue a stored response or use a prompt template). Every other member
// (`store`, `previous_response_id`, `include`, `reasoning`, tools…) passes through and
// counts toward the estimate.
Result<ResponsesRequest> inspect_responses_request(std::string_view body);

// True when rewrite_responses_request would change the body: max_output_tokens is absent,
// null, or not the held limit.
bool responses_rewrite_needed(const ResponsesRequest& request, int64_t per_choice_limit);

// `body` with `max_output_tokens` set to `per_choice_limit` (SPEC §4: the provider always
// receives the limit that was held): its value replaced, or `"max_output_tokens":N`
// added after the '{'. Every other byte is unchanged. REQUIRES: `request` was inspected
// from this `body`; per_choice_limit >= 1.
std::string rewrite_responses_request(std::string_view body, const ResponsesRequest& request,
                                      int64_t per_choice_limit);

}  // namespace cairva::wire
