// `cairva serve`: opens the store, starts one event loop per core on the public
// listener, the admin listener on its own loop, and the stale-request sweeper.
#pragma once

#include "config/config.h"
#include "store/store.h"

namespace cairva::gateway {

// Runs until SIGINT/SIGTERM. Returns the process exit code.
int run_serve(const config::Config& config, store::StoreOptions store_options);

}  // namespace cairva::gateway
