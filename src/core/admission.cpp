#include "core/admission.h"

#include <algorithm>

#include "base/assert.h"
#include "core/estimate.h"
#include "core/limits.h"

namespace cairva::core {
namespace {

Refused refused(Refusal reason) {
  switch (reason) {
    case Refusal::agreement_cancelled:
      return {reason, ErrorCode::allocation_not_active, 0, "",
              "This allocation's agreement has been cancelled; it accepts no more requests."};
    case Refusal::depleted:
      return {reason, ErrorCode::allocation_depleted, 0, "",
              "This allocation has used its full token allowance; it accepts no more requests."};
    case Refusal::expired:
      return {reason, ErrorCode::allocation_expired, 0, "",
              "This allocation's window has ended; it accepts no more requests."};
    case Refusal::window_not_open:
      return {reason, ErrorCode::allocation_not_active, 0, "",
              "This allocation's window has not opened yet."};
    case Refusal::suspended:
      return {reason, ErrorCode::allocation_not_active, 0, "",
              "This allocation is suspended by its supplier."};
    case Refusal::requests_per_minute:
      return {reason, ErrorCode::rate_limited, retry_after_s_requests_per_minute,
              "requests_per_minute",
              "Too many requests started in the last 60 seconds for this allocation's "
              "requests_per_minute limit; retry after 60 seconds."};
    case Refusal::max_concurrency:
      return {reason, ErrorCode::rate_limited, retry_after_s_max_concurrency, "max_concurrency",
              "Too many requests are in flight for this allocation's max_concurrency limit; "
              "retry when one finishes."};
    case Refusal::tokens_per_minute:
      return {reason, ErrorCode::rate_limited, retry_after_s_tokens_per_minute, "tokens_per_minute",
              "Too many tokens booked in the last 60 seconds for this allocation's "
              "tokens_per_minute limit; retry after 60 seconds."};
    case Refusal::allowance_exhausted:
      return {reason, ErrorCode::allocation_exhausted, 0, "",
              "Not enough allowance remains to hold this request's prompt and output."};
  }
  CAIRVA_ASSERT(false && "unhandled Refusal");
  return {};
}

// Step 1 (window and state). Fills the state transitions admission applies even when it
// refuses; returns the refusal, if any.
std::optional<Refusal> check_window_and_state(const AllocationSnapshot& snap, UnixMicros now,
                                              AdmissionDecision& d) {
  if (snap.agreement_state == AgreementState::cancelled) return Refusal::agreement_cancelled;
  if (snap.state == AllocationState::depleted) return Refusal::depleted;
  if (snap.state == AllocationState::expired || now >= snap.terms.window.ends_at) {
    if (snap.state != AllocationState::expired) d.new_state = AllocationState::expired;
    if (snap.agreement_state == AgreementState::in_force) {
      d.new_agreement_state = AgreementState::expired;
    }
    return Refusal::expired;
  }
  if (now < snap.terms.window.starts_at) return Refusal::window_not_open;
  if (snap.state == AllocationState::suspended) return Refusal::suspended;
  if (snap.state == AllocationState::ready) d.new_state = AllocationState::active;
  return std::nullopt;
}

// Steps 2-4: the three rate limits, in the seed's order.
std::optional<Refusal> check_rate_limits(const AllocationSnapshot& snap) {
  const Limits& limits = snap.terms.limits;
  if (snap.requests_last_minute >= limits.requests_per_minute) return Refusal::requests_per_minute;
  if (snap.in_flight >= limits.max_concurrency) return Refusal::max_concurrency;
  if (snap.tokens_last_minute >= limits.tokens_per_minute) return Refusal::tokens_per_minute;
  return std::nullopt;
}

// Step 5 (SPEC §4): the hold, lowered to fit the remaining output when needed.
std::optional<Admitted> place_hold(const AllocationSnapshot& snap, const RequestFacts& facts) {
  CAIRVA_ASSERT(facts.n >= 1 && facts.input_estimate >= 0);
  const Tokens remaining = snap.remaining();
  if (facts.input_estimate > remaining.input) return std::nullopt;
  Admitted a;
  if (!facts.holds_output) {
    a.hold = Tokens{facts.input_estimate, 0};
    return a;
  }
  if (remaining.output == 0) return std::nullopt;
  const OutputRequest out{facts.max_completion_tokens, facts.max_tokens, facts.n};
  a.per_choice_limit = per_choice_limit(out, facts.default_max_tokens);
  // per_choice * n > remaining  <=>  per_choice > floor(remaining / n), without overflow.
  const int64_t fitting_per_choice = remaining.output / facts.n;
  if (a.per_choice_limit > fitting_per_choice) {
    if (fitting_per_choice < std::max<int64_t>(1, facts.per_choice_min)) return std::nullopt;
    a.per_choice_limit = fitting_per_choice;
    a.lowered_to = fitting_per_choice;
  }
  a.hold = Tokens{facts.input_estimate, a.per_choice_limit * facts.n};
  CAIRVA_ASSERT(a.hold.input <= remaining.input && a.hold.output <= remaining.output);
  return a;
}

}  // namespace

Tokens AllocationSnapshot::remaining() const {
  return remaining_allowance(terms.allowance, booked, held);
}

Tokens remaining_allowance(const Tokens& allowance, const Tokens& booked, const Tokens& held) {
  return Tokens{std::max<int64_t>(0, allowance.input - booked.input - held.input),
                std::max<int64_t>(0, allowance.output - booked.output - held.output)};
}

AdmissionDecision decide_admission(const AllocationSnapshot& snap, const RequestFacts& facts,
                                   UnixMicros now) {
  AdmissionDecision d;
  std::optional<Refusal> refusal = check_window_and_state(snap, now, d);
  if (!refusal) refusal = check_rate_limits(snap);
  if (!refusal) {
    if (std::optional<Admitted> a = place_hold(snap, facts)) {
      d.outcome = *a;
      return d;
    }
    refusal = Refusal::allowance_exhausted;
  }
  Refused r = refused(*refusal);
  if (*refusal == Refusal::requests_per_minute || *refusal == Refusal::tokens_per_minute) {
    const RateResets resets = rate_resets(snap, now);
    const bool requests = *refusal == Refusal::requests_per_minute;
    r.retry_after_ms = millis_rounded_up(requests ? resets.requests_us : resets.tokens_us);
  }
  d.outcome = r;
  return d;
}

std::optional<Refused> refuse_by_state(const AllocationSnapshot& snap, UnixMicros now) {
  AdmissionDecision unapplied;  // the transitions admission would make; nothing applies them
  const std::optional<Refusal> refusal = check_window_and_state(snap, now, unapplied);
  if (!refusal) return std::nullopt;
  return refused(*refusal);
}

void apply_admission(AllocationSnapshot& snap, const AdmissionDecision& d) {
  if (d.new_state) snap.state = *d.new_state;
  if (d.new_agreement_state) snap.agreement_state = *d.new_agreement_state;
  if (const auto* a = std::get_if<Admitted>(&d.outcome)) {
    snap.held.input += a->hold.input;
    snap.held.output += a->hold.output;
    snap.in_flight += 1;
    // Admission refuses at requests_per_minute, so the window holds at most that many
    // starts after this one too: its oldest stays the one whose leaving frees a slot.
    if (snap.requests_last_minute == 0) snap.oldest_start_at = snap.as_of;
    snap.requests_last_minute += 1;
  }
}

RateResets rate_resets(const AllocationSnapshot& snap, UnixMicros now) {
  const Limits& limits = snap.terms.limits;
  // An entry at or before now - rate_window_us has left the window: the one deciding leaves
  // at its time + rate_window_us, which is after `now` while it is still in the window.
  auto until_left = [now](UnixMicros entry) {
    return std::max<int64_t>(0, entry + rate_window_us - now);
  };
  RateResets r;
  if (snap.requests_last_minute > 0 && snap.requests_last_minute >= limits.requests_per_minute) {
    r.requests_us = until_left(snap.oldest_start_at);
  }
  if (snap.tokens_last_minute > 0 && snap.tokens_last_minute >= limits.tokens_per_minute) {
    r.tokens_us = until_left(snap.freeing_booking_at);
  }
  return r;
}

int64_t millis_rounded_up(int64_t us) {
  CAIRVA_ASSERT(us >= 0);
  return (us + micros_per_milli - 1) / micros_per_milli;
}

AllocationState effective_state(const AllocationSnapshot& snap, UnixMicros now) {
  switch (snap.state) {
    case AllocationState::depleted:
    case AllocationState::expired:
    case AllocationState::cancelled:
      return snap.state;
    case AllocationState::ready:
    case AllocationState::active:
    case AllocationState::suspended:
      break;
  }
  if (now >= snap.terms.window.ends_at) return AllocationState::expired;
  if (snap.state == AllocationState::ready && now >= snap.terms.window.starts_at) {
    return AllocationState::active;
  }
  return snap.state;
}

AllocationState shown_state(const AllocationSnapshot& snap) {
  if (snap.agreement_state == AgreementState::cancelled) return AllocationState::cancelled;
  if (snap.agreement_state == AgreementState::completed) return AllocationState::depleted;
  return snap.state;
}

std::string state_change_refusal(bool suspend, AllocationState shown) {
  std::string m = std::string(suspend ? "cannot suspend" : "cannot resume") +
                  " an allocation that is " + std::string(to_string(shown));
  switch (shown) {
    case AllocationState::cancelled:
      return m + ": its agreement was cancelled; create a new agreement to sell more capacity";
    case AllocationState::depleted:
      return m + ": its allowance is fully booked; create a new agreement to sell more capacity";
    case AllocationState::expired:
      return m + ": its window has ended; create a new agreement to sell more capacity";
    case AllocationState::suspended:
      return m + ": it is suspended already; resume it to serve requests again";
    case AllocationState::ready:
    case AllocationState::active:
      return m + ": it is not suspended";
  }
  return m;
}

AgreementState effective_agreement_state(AgreementState state, const Window& window,
                                         UnixMicros now) {
  if (state == AgreementState::in_force && now >= window.ends_at) return AgreementState::expired;
  return state;
}

bool is_depleted(const Tokens& allowance, const Tokens& booked) {
  return booked.input >= allowance.input || booked.output >= allowance.output;
}

std::string_view refusal_name(Refusal r) {
  switch (r) {
    case Refusal::agreement_cancelled:
      return "agreement_cancelled";
    case Refusal::depleted:
      return "depleted";
    case Refusal::expired:
      return "expired";
    case Refusal::window_not_open:
      return "window_not_open";
    case Refusal::suspended:
      return "suspended";
    case Refusal::requests_per_minute:
      return "requests_per_minute";
    case Refusal::max_concurrency:
      return "max_concurrency";
    case Refusal::tokens_per_minute:
      return "tokens_per_minute";
    case Refusal::allowance_exhausted:
      return "allowance_exhausted";
  }
  return "unknown";
}

}  // namespace cairva::core
