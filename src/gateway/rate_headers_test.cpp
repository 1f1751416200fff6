#include "gateway/rate_headers.h"

#include <gtest/gtest.h>

#include <string>

#include "core/limits.h"

namespace cairva::gateway {
namespace {

constexpr UnixMicros now = 1'767'225'600LL * micros_per_second;

std::string head_of(const core::AllocationSnapshot& rate) {
  auto h = http::MessageHead::response(200, 11);
  add_rate_headers(h, rate);
  return h.finish(0, true);
}

core::AllocationSnapshot snapshot(int64_t rpm, int64_t tpm) {
  core::AllocationSnapshot s;
  s.terms.limits = {rpm, tpm, 10};
  s.as_of = now;
  return s;
}

TEST(RateResetHeaders, TheLimitsAndWhatTheWindowsLeaveComeFirstNeverBelowZero) {
  auto s = snapshot(3, 100);
  s.requests_last_minute = 2;
  s.oldest_start_at = now - 1;
  s.tokens_last_minute = 130;         // a booking may take the window past its limit
  s.freeing_booking_at = now - 1000;  // leaves 59.999 s from now
  const std::string text = head_of(s);
  EXPECT_NE(text.find("\r\nx-ratelimit-limit-requests: 3\r\nx-ratelimit-remaining-requests: 1\r\n"
                      "x-ratelimit-limit-tokens: 100\r\nx-ratelimit-remaining-tokens: 0\r\n"
                      "x-ratelimit-reset-requests: 0s\r\nx-ratelimit-reset-tokens: 59.999s\r\n"),
            std::string::npos)
      << text;
}

TEST(RateResetHeaders, ZeroSecondsWhileBothWindowsHaveRoom) {
  auto s = snapshot(3, 100);
  s.requests_last_minute = 2;
  s.oldest_start_at = now - 1;
  s.tokens_last_minute = 99;
  const std::string text = head_of(s);
  EXPECT_NE(text.find("\r\nx-ratelimit-reset-requests: 0s\r\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\r\nx-ratelimit-reset-tokens: 0s\r\n"), std::string::npos) << text;
}

TEST(RateResetHeaders, AFullRequestsWindowResetsWhenItsOldestStartLeaves) {
  auto s = snapshot(3, 100);
  s.requests_last_minute = 3;
  s.oldest_start_at = now - 20'500'000;  // leaves 39.5 s from now
  const std::string text = head_of(s);
  EXPECT_NE(text.find("\r\nx-ratelimit-reset-requests: 39.5s\r\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\r\nx-ratelimit-reset-tokens: 0s\r\n"), std::string::npos) << text;
}

TEST(RateResetHeaders, AFullTokensWindowResetsWhenItsFreeingBookingLeavesRoundedUpToAMillisecond) {
  auto s = snapshot(3, 100);
  s.tokens_last_minute = 150;
  s.freeing_booking_at = now - core::rate_window_us + 1;  // leaves in 1 µs: shown as 1 ms
  const std::string text = head_of(s);
  EXPECT_NE(text.find("\r\nx-ratelimit-reset-tokens: 1ms\r\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\r\nx-ratelimit-reset-requests: 0s\r\n"), std::string::npos) << text;
}

TEST(RateResetHeaders, AStartJustAdmittedIntoTheLastSlotResetsInAFullMinute) {
  auto s = snapshot(1, 100);
  s.requests_last_minute = 1;
  s.oldest_start_at = now;
  const std::string text = head_of(s);
  EXPECT_NE(text.find("\r\nx-ratelimit-reset-requests: 1m0s\r\n"), std::string::npos) << text;
}

TEST(RateResetHeaders, TheAnthropicDialectNamesTheSameInstantsInRfc3339) {
  auto s = snapshot(3, 100);
  s.requests_last_minute = 3;
  s.oldest_start_at = now - 20'500'000;  // room at now + 39.5 s
  s.tokens_last_minute = 10;             // room now
  auto h = http::MessageHead::response(429, 11);
  add_anthropic_rate_reset_headers(h, s);
  const std::string text = h.finish(0, true);
  EXPECT_NE(text.find("\r\nanthropic-ratelimit-requests-reset: 2026-01-01T00:00:39.500000Z\r\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\r\nanthropic-ratelimit-tokens-reset: 2026-01-01T00:00:00Z\r\n"),
            std::string::npos)
      << text;
}

TEST(RateResetHeaders, TheAnthropicDialectNamesNoInstantWithoutAStoresReading) {
  core::AllocationSnapshot limits_only;
  limits_only.terms.limits = {3, 100, 10};
  auto h = http::MessageHead::response(400, 11);
  add_anthropic_rate_reset_headers(h, limits_only);
  const std::string text = h.finish(0, true);
  EXPECT_EQ(text.find("anthropic-ratelimit"), std::string::npos) << text;
}

}  // namespace
}  // namespace cairva::gateway
