// "Run this after the handlers that are ready now", for the thread running an event loop,
// seen from code that must not depend on the loop. The gateway sets it on each of its
// event-loop threads; the embedded store's writer uses it to commit the writes a loop
// queued on that loop, once per round of ready handlers, instead of waking its journal
// thread and being woken back (two thread switches per store call).
#pragma once

#include <functional>

namespace cairva {

using RunSoon = std::function<void(std::function<void()>)>;

// `run_soon` is not owned and must outlive its use on this thread; nullptr (the default)
// on threads that run no loop.
void set_run_soon_for_this_thread(const RunSoon* run_soon);
const RunSoon* run_soon_for_this_thread();

}  // namespace cairva
