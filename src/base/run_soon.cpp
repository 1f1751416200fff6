#include "base/run_soon.h"

namespace cairva {
namespace {

thread_local const RunSoon* this_threads_run_soon = nullptr;

}  // namespace

void set_run_soon_for_this_thread(const RunSoon* run_soon) { this_threads_run_soon = run_soon; }

const RunSoon* run_soon_for_this_thread() { return this_threads_run_soon; }

}  // namespace cairva
