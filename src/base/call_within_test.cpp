#include "base/call_within.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace cairva {
namespace {

using std::chrono::steady_clock;

TEST(CallWithin, GivesTheAnswerOfACallThatReturns) {
  const auto r = call_within([] { return 42; }, steady_clock::now() + std::chrono::seconds(60));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, 42);
}

TEST(CallWithin, StopsWaitingAtTheDeadlineForACallThatHasNotReturned) {
  // The call cannot return before the gate opens, which happens only after call_within has.
  auto gate = std::make_shared<std::promise<void>>();
  auto opened = gate->get_future().share();
  const auto r = call_within(
      [opened] {
        opened.wait();
        return 1;
      },
      steady_clock::now() + std::chrono::milliseconds(20));
  EXPECT_FALSE(r.has_value());
  gate->set_value();  // the abandoned call returns, and its thread ends
}

TEST(CallWithin, RethrowsWhatTheCallThrew) {
  auto throwing = []() -> int { throw std::runtime_error("resolver broke"); };
  EXPECT_THROW((void)call_within(throwing, steady_clock::now() + std::chrono::seconds(60)),
               std::runtime_error);
}

}  // namespace
}  // namespace cairva
