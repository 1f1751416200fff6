// Every tunable of the core, named with its unit last, with a one-line why.
#pragma once

#include <cstdint>

#include "base/time.h"

namespace cairva::core {

// The rate-limit windows are "the trailing 60 seconds" (seed: The three limits).
inline constexpr int64_t rate_window_s = 60;
inline constexpr int64_t rate_window_us = rate_window_s * micros_per_second;

// Output hold when a request names no limit (seed: "1,024 if you didn't set one").
inline constexpr int64_t output_hold_tokens_default = 1024;
// Requests still in flight this long become usage_pending (seed: "after 10 minutes").
inline constexpr int64_t in_flight_timeout_s_default = 600;

// Input estimate = ceil(chars / 3) + tokens + 4 * items + 8 + 1600 * media (SPEC §4).
inline constexpr int64_t estimate_chars_per_token = 3;
inline constexpr int64_t estimate_tokens_per_message = 4;
inline constexpr int64_t estimate_tokens_per_request = 8;
// One image, audio clip or file part: a fixed estimate instead of its base64 or URL
// characters, near what a provider bills a large image (SPEC §4 media_part_tokens_estimate).
inline constexpr int64_t media_part_tokens_estimate = 1600;

// Retry-After seconds per refused limit (seed: the three limits table).
inline constexpr int retry_after_s_requests_per_minute = 60;
inline constexpr int retry_after_s_tokens_per_minute = 60;
inline constexpr int retry_after_s_max_concurrency = 2;

// Largest `n` and per-choice limit accepted: keeps n * limit far from int64 overflow.
inline constexpr int64_t choices_max = 128;
inline constexpr int64_t output_tokens_per_choice_max = int64_t{1} << 40;
static_assert(choices_max * output_tokens_per_choice_max < (int64_t{1} << 62));

}  // namespace cairva::core
