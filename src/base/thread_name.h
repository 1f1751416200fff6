// Thread attributes. Names the calling thread, so `top -H`, perf and /proc show what each thread is for
// (cairva-io-0, cairva-store, …). Linux keeps 15 bytes; longer names are cut.
#pragma once

#include <string_view>

namespace cairva {

void name_this_thread(std::string_view name);

// Lowers the calling thread's scheduling priority (Linux: a per-thread nice value, 0..19),
// for background work that must not take a core from the request path. Best effort.
void lower_this_threads_priority(int nice);

}  // namespace cairva
