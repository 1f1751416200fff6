// Thread attributes. Names the calling thread, so `top -H`, perf and /proc show what each thread is
// for (cairva-io-0, cairva-store, …). Linux keeps 15 bytes; longer names are cut.
#pragma once

#include <string_view>

namespace cairva {

void name_this_thread(std::string_view name);

}  // namespace cairva
