// Names the calling thread, so `top -H`, perf and /proc show what each thread is for
// (cairva-io-0, cairva-store, …). Linux keeps 15 bytes; longer names are cut.
#pragma once

#include <string>
#include <string_view>

namespace cairva {

void name_this_thread(std::string_view name);
// The calling thread's name (empty if it cannot be read).
std::string this_thread_name();

}  // namespace cairva
