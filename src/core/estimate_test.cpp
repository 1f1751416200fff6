#include "core/estimate.h"

#include <gtest/gtest.h>

#include <limits>

#include "core/limits.h"

namespace cairva::core {
namespace {

TEST(Estimate, InputIsCharsOverThreeRoundedUpPlusFourPerMessagePlusEight) {
  EXPECT_EQ(input_estimate({.chars = 0, .messages = 0}), 8);
  EXPECT_EQ(input_estimate({.chars = 5, .messages = 1}), 2 + 4 + 8);   // "hello": SPEC vector 14
  EXPECT_EQ(input_estimate({.chars = 6, .messages = 1}), 2 + 4 + 8);   // exact multiple of 3
  EXPECT_EQ(input_estimate({.chars = 7, .messages = 1}), 3 + 4 + 8);   // rounds up
  EXPECT_EQ(input_estimate({.chars = 38, .messages = 2}), 13 + 8 + 8); // system+user vector: 29
}

TEST(Estimate, PerChoiceLimitPrefersMaxCompletionTokensThenMaxTokensThenDefault) {
  EXPECT_EQ(per_choice_limit({.max_completion_tokens = 40, .max_tokens = 500}, 1024), 40);
  EXPECT_EQ(per_choice_limit({.max_tokens = 500}, 1024), 500);
  EXPECT_EQ(per_choice_limit({}, 1024), 1024);
  EXPECT_EQ(per_choice_limit({}, 77), 77);
}

TEST(Estimate, OutputHoldDefaultsTo1024WhenNoLimitSent) {
  EXPECT_EQ(output_hold({}, output_hold_tokens_default), 1024);
}

TEST(Estimate, OutputHoldMultipliesByN) {
  EXPECT_EQ(output_hold({.max_tokens = 10, .n = 3}, 1024), 30);
  EXPECT_EQ(output_hold({.max_completion_tokens = 40, .max_tokens = 500, .n = 1}, 1024), 40);
  EXPECT_EQ(output_hold({.n = 2}, 1024), 2048);
}

TEST(Estimate, OutputHoldSaturatesInsteadOfOverflowing) {
  const int64_t huge = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_EQ(output_hold({.max_tokens = huge, .n = 3}, 1024), std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace cairva::core
