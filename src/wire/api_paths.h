// Request paths of the OpenAI-dialect APIs that more than one side serves: the gateway
// routes them and the mock provider answers them, so both read the same names.
#pragma once

#include <string_view>

namespace cairva::wire {

// POST creates a response.
inline constexpr std::string_view responses_path = "/v1/responses";
// A stored response: this prefix, its id, and optionally "/input_items".
inline constexpr std::string_view responses_prefix = "/v1/responses/";
static_assert(responses_prefix.starts_with(responses_path));

}  // namespace cairva::wire
