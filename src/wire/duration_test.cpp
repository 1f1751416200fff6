#include "wire/duration.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace cairva::wire {
namespace {

TEST(DurationText, ZeroIsZeroSeconds) {
  EXPECT_EQ(duration_text(0).view(), "0s");
  EXPECT_EQ(duration_text(-5).view(), "0s");
}

TEST(DurationText, UnderASecondIsWholeMilliseconds) {
  EXPECT_EQ(duration_text(1).view(), "1ms");
  EXPECT_EQ(duration_text(20).view(), "20ms");
  EXPECT_EQ(duration_text(999).view(), "999ms");
}

TEST(DurationText, SecondsCarryAFractionWithoutTrailingZeros) {
  EXPECT_EQ(duration_text(1000).view(), "1s");
  EXPECT_EQ(duration_text(1500).view(), "1.5s");
  EXPECT_EQ(duration_text(1005).view(), "1.005s");
  EXPECT_EQ(duration_text(1050).view(), "1.05s");
  EXPECT_EQ(duration_text(8640).view(), "8.64s");
  EXPECT_EQ(duration_text(59999).view(), "59.999s");
}

// OpenAI's documented samples: "1s" and "6m0s".
TEST(DurationText, MinutesAndHoursAsGoWritesThem) {
  EXPECT_EQ(duration_text(60000).view(), "1m0s");
  EXPECT_EQ(duration_text(360000).view(), "6m0s");
  EXPECT_EQ(duration_text(61250).view(), "1m1.25s");
  EXPECT_EQ(duration_text(3600000).view(), "1h0m0s");
  EXPECT_EQ(duration_text(3600001).view(), "1h0m0.001s");
  EXPECT_EQ(duration_text(90061000).view(), "25h1m1s");
}

TEST(DurationText, TheLongestFitsInPlace) {
  EXPECT_EQ(duration_text(INT64_MAX).view(), "2562047788015h12m55.807s");
}

}  // namespace
}  // namespace cairva::wire
