// Store options' defaults, named once: the config file's keys and StoreOptions both start
// from these.
#pragma once

namespace cairva::store {

// PostgreSQL connections per gateway process: enough for the admissions and settlements
// that queue per allocation to share transactions, well under a server's max_connections.
inline constexpr int pool_size_default = 8;
// Upper bound on pool_size whatever the config says (PostgreSQL's max_connections is finite).
inline constexpr int pool_size_max = 256;
static_assert(pool_size_default <= pool_size_max);

}  // namespace cairva::store
