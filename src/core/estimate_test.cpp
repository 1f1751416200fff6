#include "core/estimate.h"

#include <gtest/gtest.h>

#include <limits>

#include "core/limits.h"

namespace cairva::core {
namespace {

TEST(Estimate, InputIsCharsOverThreeRoundedUpPlusFourPerItemPlusEight) {
  EXPECT_EQ(input_estimate({.chars = 0, .items = 0}), 8);
  EXPECT_EQ(input_estimate({.chars = 33, .items = 1}), 11 + 4 + 8);  // "one short user message": 23
  EXPECT_EQ(input_estimate({.chars = 6, .items = 1}), 2 + 4 + 8);    // exact multiple of 3
  EXPECT_EQ(input_estimate({.chars = 7, .items = 1}), 3 + 4 + 8);    // rounds up
  EXPECT_EQ(input_estimate({.chars = 93, .items = 2}),
            31 + 8 + 8);  // "system + user, max_tokens": 47
}

TEST(Estimate, EachMediaPartAddsItsFixedEstimateAndExactTokensAddAsTheyAre) {
  EXPECT_EQ(input_estimate({.chars = 3, .items = 1, .media = 1}),
            1 + 4 + 8 + media_part_tokens_estimate);
  EXPECT_EQ(input_estimate({.items = 1, .media = 2}), 4 + 8 + 2 * 1600);
  EXPECT_EQ(input_estimate({.chars = 4, .items = 2, .tokens = 5}), 2 + 5 + 8 + 8);
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
