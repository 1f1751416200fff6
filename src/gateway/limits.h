// Every limit of the gateway flow, named with its unit last, each with why.
#pragma once

#include <cstddef>

namespace cairva::gateway {

// Retry-After on 503 store_unavailable: a store outage (PostgreSQL restarting, a full
// disk) is a matter of seconds to minutes; clients retry soon, not at once in a loop.
inline constexpr int store_unavailable_retry_after_s = 2;
// Most of a provider's error body written to the log for operators: enough for any
// provider's error object, not a way to fill the log.
inline constexpr size_t provider_error_log_bytes_max = 2048;

}  // namespace cairva::gateway
