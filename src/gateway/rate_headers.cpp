#include "gateway/rate_headers.h"

#include "base/time.h"
#include "wire/duration.h"

namespace cairva::gateway {

void add_rate_reset_headers(http::MessageHead& h, const core::AllocationSnapshot& rate) {
  const core::RateResets resets = core::rate_resets(rate, rate.as_of);
  h.add("x-ratelimit-reset-requests",
        wire::duration_text(core::millis_rounded_up(resets.requests_us)).view());
  h.add("x-ratelimit-reset-tokens",
        wire::duration_text(core::millis_rounded_up(resets.tokens_us)).view());
}

void add_anthropic_rate_reset_headers(http::MessageHead& h, const core::AllocationSnapshot& rate) {
  if (rate.as_of == 0) return;
  constexpr int64_t micros_per_milli = micros_per_second / 1000;
  const core::RateResets resets = core::rate_resets(rate, rate.as_of);
  auto at = [&rate](int64_t us) {
    return rate.as_of + core::millis_rounded_up(us) * micros_per_milli;
  };
  h.add("anthropic-ratelimit-requests-reset", format_rfc3339(at(resets.requests_us)));
  h.add("anthropic-ratelimit-tokens-reset", format_rfc3339(at(resets.tokens_us)));
}

}  // namespace cairva::gateway
