// Every limit of the gateway flow, named with its unit last, each with why.
#pragma once

#include <cstddef>

namespace cairva::gateway {

// Retry-After on 503 store_unavailable: a store outage (PostgreSQL restarting, a full
// disk) is a matter of seconds to minutes; clients retry soon, not at once in a loop.
inline constexpr int store_unavailable_retry_after_s = 2;

}  // namespace cairva::gateway
