#include "base/thread_name.h"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <string>

namespace cairva {
namespace {

constexpr size_t thread_name_bytes_max = 15;  // Linux's TASK_COMM_LEN less the NUL

}  // namespace

void name_this_thread(std::string_view name) {
  const std::string cut(name.substr(0, thread_name_bytes_max));
  (void)pthread_setname_np(pthread_self(), cut.c_str());  // only ERANGE, excluded above
}

void lower_this_threads_priority(int nice) {
  // On Linux, PRIO_PROCESS with a thread id sets that thread's nice value alone.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice);
}

}  // namespace cairva
