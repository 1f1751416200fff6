#include "base/thread_name.h"

#include <pthread.h>

#include <string>

namespace cairva {
namespace {

constexpr size_t thread_name_bytes_max = 15;  // Linux's TASK_COMM_LEN less the NUL

}  // namespace

void name_this_thread(std::string_view name) {
  const std::string cut(name.substr(0, thread_name_bytes_max));
  (void)pthread_setname_np(pthread_self(), cut.c_str());  // only ERANGE, excluded above
}

}  // namespace cairva
