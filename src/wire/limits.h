// Every limit of the wire layer, named with its unit last, each with why.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/limits.h"

namespace cairva::wire {

// Nesting depth accepted in any JSON document we read. Real chat requests (tool JSON
// schemas included) stay far below it; the bound keeps recursion shallow and a hostile
// "[[[[..." body cheap to refuse.
inline constexpr int json_depth_max = 128;

// One SSE event from a provider. Chunks are a few hundred bytes; a provider sending more
// than this in one event is broken or hostile, and buffering it unbounded would let it
// exhaust memory.
inline constexpr size_t sse_event_bytes_max = size_t{1} << 20;

// Token counts reported by a provider at or above this are not believed (a sanity bound,
// far above any real context window) and the usage is treated as missing.
inline constexpr int64_t usage_tokens_max = int64_t{1} << 40;

// A provider's response id longer than this does not key a booking (the gateway books under
// its next id instead, SPEC "Accounting"): real ids are tens of bytes, and each booked one is
// stored with its event and kept in its allocation's booked set for the allocation's life.
inline constexpr size_t provider_id_bytes_max = 512;

// Parsing scratch (padded copy + simdjson parser) each thread keeps between calls. Larger
// documents use a scratch of their own, freed afterwards, so one 16 MiB body does not pin
// tens of MiB per thread.
inline constexpr size_t json_scratch_retained_bytes_max = size_t{1} << 20;

// Spare capacity after a body that lets inspect_chat_request(std::string&) parse it in
// place instead of copying it (simdjson's SIMDJSON_PADDING; checked in chat_request.cpp).
inline constexpr size_t in_place_slack_bytes = 64;

// Client-sent bounds; core::choices_max and core::output_tokens_per_choice_max keep
// n * limit far from int64 overflow.
inline constexpr int64_t choices_max = core::choices_max;
inline constexpr int64_t output_tokens_per_choice_max = core::output_tokens_per_choice_max;

// The least `max_output_tokens` the Responses API accepts (SPEC-APIS §2): a hold lowered
// under it is refused 402 rather than forwarded for the provider to reject.
inline constexpr int64_t responses_max_output_tokens_min = 16;

static_assert(usage_tokens_max <= (int64_t{1} << 62) / 2, "input + output usage must not overflow");
static_assert(json_scratch_retained_bytes_max >= sse_event_bytes_max,
              "every SSE event fits the retained scratch");

}  // namespace cairva::wire
