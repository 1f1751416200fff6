// The rate-limit headers of a response to an authenticated caller (SPEC §6), written by
// ClientExchange::head: the limits, what the trailing windows leave of them, and how long
// until each window has room again, as the core reads it from the allocation's snapshot.
#pragma once

#include "core/admission.h"
#include "http/message_head.h"

namespace cairva::gateway {

// Appends x-ratelimit-limit-requests, -remaining-requests, -limit-tokens and
// -remaining-tokens (the limits, and what the trailing windows leave of them as of the
// snapshot), then x-ratelimit-reset-requests and x-ratelimit-reset-tokens in OpenAI's
// duration notation (wire/duration.h), rounded up to the millisecond: "0s" while the window
// has room, else the time until requests_last_minute (tokens_last_minute) drops below its
// limit, read against rate.as_of (the store's `now`, which may be the database's clock).
// Every response to a caller has the six: formatted in place, added in one
// MessageHead::add_formatted.
void add_rate_headers(http::MessageHead& h, const core::AllocationSnapshot& rate);

// Appends anthropic-ratelimit-requests-reset and anthropic-ratelimit-tokens-reset: the same
// instants as RFC 3339 times (rate.as_of plus each wait, rounded up to the millisecond;
// rate.as_of itself while the window has room), for the Anthropic dialect's responses
// beside its anthropic-ratelimit-*-limit and -remaining headers (SPEC-APIS §4). Nothing
// when `rate` was not read from a store (as_of 0: the limits alone, before admission).
void add_anthropic_rate_reset_headers(http::MessageHead& h, const core::AllocationSnapshot& rate);

}  // namespace cairva::gateway
