// Workers: jobs under one key run one at a time and in order; other work runs beside them.
#include "store/postgres/workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cairva::store::pg {
namespace {

TEST(Workers, JobsUnderOneKeyRunOneAtATimeInOrder) {
  std::mutex mu;
  std::vector<int> order;
  std::atomic<int> running{0}, overlaps{0};
  std::atomic<int> other{0};
  {
    Workers w(4);
    for (int i = 0; i < 200; ++i) {  // more than a turn: the key's jobs are re-queued
      ASSERT_TRUE(w.post_in_order("alloc_a", [&, i] {
        if (running.fetch_add(1) != 0) ++overlaps;
        {
          std::lock_guard lock(mu);
          order.push_back(i);
        }
        std::this_thread::yield();
        running.fetch_sub(1);
      }));
      ASSERT_TRUE(w.post_in_order("alloc_" + std::to_string(i % 7 + 1), [&] { ++other; }));
      ASSERT_TRUE(w.post([&] { ++other; }));
    }
  }  // drains and joins
  EXPECT_EQ(overlaps.load(), 0);
  ASSERT_EQ(order.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_EQ(other.load(), 400);
}

// A key's job waiting on the database does not hold up other keys: here it waits for a
// job of another key, which must run meanwhile.
TEST(Workers, OtherKeysRunWhileAKeysJobWaits) {
  Workers w(2);
  std::promise<void> released;
  std::promise<bool> finished;
  ASSERT_TRUE(w.post_in_order("alloc_a", [&] {
    // Bounded, so that a broken Workers fails the test instead of hanging it.
    finished.set_value(released.get_future().wait_for(std::chrono::seconds(30)) ==
                       std::future_status::ready);
  }));
  ASSERT_TRUE(w.post_in_order("alloc_b", [&] { released.set_value(); }));
  EXPECT_TRUE(finished.get_future().get());
}

}  // namespace
}  // namespace cairva::store::pg
