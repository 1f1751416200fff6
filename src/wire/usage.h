// Reading a provider's `usage` object, shared by the completion and SSE readers.
#pragma once

#include <optional>

#include "core/types.h"
#include "wire/json.h"

namespace cairva::wire {

// Consumes `v`. Returns the counts when `v` is an object whose prompt_tokens and
// completion_tokens are integers in [0, usage_tokens_max], else nullopt; `e` receives a
// JSON syntax error met on the way.
std::optional<core::Tokens> read_usage(json::od::value v, int depth, simdjson::error_code& e);

}  // namespace cairva::wire
