// Reading a provider's `usage` object, shared by every API's response and stream readers.
#pragma once

#include <optional>

#include "core/types.h"
#include "wire/json.h"
#include "wire/usage_fields.h"

namespace cairva::wire {

// Consumes `v`. Returns the counts when `v` is an object whose counts named by `fields`
// are integers in [0, usage_tokens_max], else nullopt; `e` receives a JSON syntax error
// met on the way.
std::optional<core::Tokens> read_usage(json::od::value v, int depth, simdjson::error_code& e,
                                       const UsageFields& fields = chat_usage_fields);

}  // namespace cairva::wire
