#include "gateway/rate_headers.h"

#include "wire/duration.h"

namespace cairva::gateway {

void add_rate_reset_headers(http::MessageHead& h, const core::AllocationSnapshot& rate) {
  const core::RateResets resets = core::rate_resets(rate, rate.as_of);
  h.add("x-ratelimit-reset-requests",
        wire::duration_text(core::millis_rounded_up(resets.requests_us)).view());
  h.add("x-ratelimit-reset-tokens",
        wire::duration_text(core::millis_rounded_up(resets.tokens_us)).view());
}

}  // namespace cairva::gateway
