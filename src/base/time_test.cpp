#include "base/time.h"

#include <gtest/gtest.h>

namespace cairva {

TEST(Rfc3339, RoundTripsWholeSecondsAndMicros) {
  const auto t = parse_rfc3339("2026-11-30T19:12:08Z");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(format_rfc3339(*t), "2026-11-30T19:12:08Z");
  EXPECT_EQ(format_rfc3339(*t + 5), "2026-11-30T19:12:08.000005Z");
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:00Z"), 0);
}

TEST(Rfc3339, MillisAreAlwaysThreeDigitsTruncated) {
  const auto t = *parse_rfc3339("2026-11-30T19:12:08Z");
  EXPECT_EQ(format_rfc3339_millis(t), "2026-11-30T19:12:08.000Z");
  EXPECT_EQ(format_rfc3339_millis(t + 5), "2026-11-30T19:12:08.000Z");
  EXPECT_EQ(format_rfc3339_millis(t + 123'999), "2026-11-30T19:12:08.123Z");
  EXPECT_EQ(format_rfc3339_millis(t + 999'999), "2026-11-30T19:12:08.999Z");
  EXPECT_EQ(format_rfc3339_millis(-1), "1969-12-31T23:59:59.999Z");
}

TEST(Rfc3339, AppliesOffsets) {
  EXPECT_EQ(parse_rfc3339("2026-01-01T01:00:00+01:00"), parse_rfc3339("2026-01-01T00:00:00Z"));
  EXPECT_EQ(parse_rfc3339("2026-01-01T00:00:00.5Z"),
            *parse_rfc3339("2026-01-01T00:00:00Z") + 500000);
}

TEST(Rfc3339, RejectsMalformed) {
  EXPECT_FALSE(parse_rfc3339("2026-13-01T00:00:00Z"));
  EXPECT_FALSE(parse_rfc3339("2026-01-01 00:00"));
  EXPECT_FALSE(parse_rfc3339("2026-01-01T00:00:00"));
  EXPECT_FALSE(parse_rfc3339("2026-01-01T00:00:00Zjunk"));
  EXPECT_FALSE(parse_rfc3339(""));
}

TEST(ManualClock, MovesOnlyWhenTold) {
  ManualClock c(1000);
  EXPECT_EQ(c.now(), 1000);
  c.advance_seconds(2);
  EXPECT_EQ(c.now(), 1000 + 2 * micros_per_second);
}

// A thread waiting for a deadline on the clock hears each move, and nothing after unwatch.
TEST(ManualClock, CallsItsWatchersOnEveryMoveUntilUnwatched) {
  ManualClock c(0);
  int moves = 0;
  const uint64_t id = c.watch([&] { ++moves; });
  c.advance_micros(5);
  c.advance_seconds(1);
  c.set(7);
  EXPECT_EQ(moves, 3);
  c.unwatch(id);
  c.advance_micros(1);
  EXPECT_EQ(moves, 3);
  SystemClock real;
  EXPECT_EQ(real.watch([&] { ++moves; }), 0u);  // real time passes by itself
}

}  // namespace cairva
