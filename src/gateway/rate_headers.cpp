#include "gateway/rate_headers.h"

#include <algorithm>

#include "base/time.h"
#include "wire/duration.h"

namespace cairva::gateway {

void add_rate_headers(http::MessageHead& h, const core::AllocationSnapshot& rate) {
  const core::Limits& l = rate.terms.limits;
  const core::RateResets resets = core::rate_resets(rate, rate.as_of);
  const http::Decimal limit_requests(l.requests_per_minute);
  const http::Decimal remaining_requests(
      std::max<int64_t>(0, l.requests_per_minute - rate.requests_last_minute));
  const http::Decimal limit_tokens(l.tokens_per_minute);
  const http::Decimal remaining_tokens(
      std::max<int64_t>(0, l.tokens_per_minute - rate.tokens_last_minute));
  const wire::DurationText reset_requests =
      wire::duration_text(core::millis_rounded_up(resets.requests_us));
  const wire::DurationText reset_tokens =
      wire::duration_text(core::millis_rounded_up(resets.tokens_us));
  h.add_formatted({{"x-ratelimit-limit-requests", limit_requests.view()},
                   {"x-ratelimit-remaining-requests", remaining_requests.view()},
                   {"x-ratelimit-limit-tokens", limit_tokens.view()},
                   {"x-ratelimit-remaining-tokens", remaining_tokens.view()},
                   {"x-ratelimit-reset-requests", reset_requests.view()},
                   {"x-ratelimit-reset-tokens", reset_tokens.view()}});
}

void add_anthropic_rate_reset_headers(http::MessageHead& h, const core::AllocationSnapshot& rate) {
  if (rate.as_of == 0) return;
  const core::RateResets resets = core::rate_resets(rate, rate.as_of);
  auto at = [&rate](int64_t us) {
    return rate.as_of + core::millis_rounded_up(us) * micros_per_milli;
  };
  h.add("anthropic-ratelimit-requests-reset", format_rfc3339(at(resets.requests_us)));
  h.add("anthropic-ratelimit-tokens-reset", format_rfc3339(at(resets.tokens_us)));
}

}  // namespace cairva::gateway
