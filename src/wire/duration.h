// The duration notation of OpenAI's x-ratelimit-reset-requests and x-ratelimit-reset-tokens
// headers ("1s", "6m0s", "20ms", "1.5s"): Go's time.Duration notation, which clients parse
// with Go's time.ParseDuration or a port of it, here at millisecond precision.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cairva::wire {

// A duration's text, held in place: every response carries two, so none is allocated.
class DurationText {
 public:
  std::string_view view() const { return {chars_.data(), size_}; }

 private:
  friend DurationText duration_text(int64_t ms);
  // The longest: "2562047788015h12m55.807s" (INT64_MAX ms), 24 characters.
  std::array<char, 32> chars_{};
  size_t size_ = 0;
};

// "0s" for 0; under a second "<n>ms"; from a second on "[<h>h][<m>m]<s>[.<fraction>]s",
// minutes written once there are hours or minutes, the fraction's trailing zeros dropped:
// 1500 -> "1.5s", 60000 -> "1m0s", 3600001 -> "1h0m0.001s". A negative value is "0s".
DurationText duration_text(int64_t ms);

}  // namespace cairva::wire
