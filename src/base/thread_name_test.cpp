#include "base/thread_name.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <string>
#include <thread>

namespace cairva {
namespace {

std::string this_thread_name() {
  char buf[16] = {};  // Linux's TASK_COMM_LEN
  return pthread_getname_np(pthread_self(), buf, sizeof buf) == 0 ? buf : "";
}

}  // namespace

TEST(ThreadName, NamesTheCallingThreadOnlyAndCutsAt15Bytes) {
  const std::string before = this_thread_name();
  std::string seen_short, seen_long;
  std::thread([&] {
    name_this_thread("cairva-store");
    seen_short = this_thread_name();
    name_this_thread("cairva-io-123456789");
    seen_long = this_thread_name();
  }).join();
  EXPECT_EQ(seen_short, "cairva-store");
  EXPECT_EQ(seen_long, "cairva-io-12345");
  EXPECT_EQ(this_thread_name(), before);
}

}  // namespace cairva
