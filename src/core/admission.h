// Admission (SPEC §3, §4): a pure decision over an allocation's state at `now`.
// Stores compute the AllocationSnapshot under the allocation's lock (the embedded store
// from its in-memory AllocationLedger, PostgreSQL from its tables) and apply the returned
// changes in the same critical section.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "base/error_code.h"
#include "base/time.h"
#include "core/limits.h"
#include "core/types.h"

namespace cairva::core {

// Everything admission reads about one allocation, as of `now`.
struct AllocationSnapshot {
  AgreementState agreement_state = AgreementState::in_force;
  AllocationState state = AllocationState::ready;
  Terms terms;
  Tokens booked;                     // sum of usage events
  Tokens held;                       // sum of holds of in_flight and usage_pending requests
  int64_t requests_last_minute = 0;  // admitted requests with started_at > now - 60 s
  int64_t tokens_last_minute = 0;    // input+output of events with booked_at > now - 60 s
  int64_t in_flight = 0;             // in_flight requests not yet stale
  int64_t usage_pending = 0;
  // When each trailing window has room again (rate_resets) is read from the entries that
  // leave it, each rate_window_us after its own time, against `as_of`.
  UnixMicros as_of = 0;  // the `now` the windows were taken at
  // The oldest start in the window. The window never holds more than requests_per_minute
  // starts (admission refuses at that count), so once it holds that many, a slot frees when
  // this one leaves. Meaningful when requests_last_minute > 0; a store may leave it unset
  // while fewer starts than the admissions it decides on this snapshot would fill the
  // window (PostgreSQL reads it only then).
  UnixMicros oldest_start_at = 0;
  // The booking whose leaving takes tokens_last_minute below tokens_per_minute: the oldest
  // whose running total over the window's bookings exceeds tokens_last_minute -
  // tokens_per_minute. Meaningful when tokens_last_minute >= tokens_per_minute.
  UnixMicros freeing_booking_at = 0;

  // max(0, allowance - booked - held), per direction.
  Tokens remaining() const;
};

// What the request asks for, read by the wire layer.
struct RequestFacts {
  int64_t input_estimate = 0;
  std::optional<int64_t> max_completion_tokens;
  std::optional<int64_t> max_tokens;
  int64_t n = 1;
  int64_t default_max_tokens = output_hold_tokens_default;
  // False for an API that produces no output tokens (Embeddings, SPEC-APIS §2): the hold
  // has no output part and no output allowance need remain.
  bool holds_output = true;
  // The least per-choice limit the provider accepts after the gateway lowered it
  // (Responses' max_output_tokens 16; Messages with a thinking budget 1025): lowering
  // under it is refused 402 allocation_exhausted instead of forwarding a request the
  // provider must reject because of the rewrite (SPEC-APIS §2).
  int64_t per_choice_min = 1;
};

// Why a request was refused, declared in the seed's check order: when several checks
// fail, the lowest enumerator is the answer.
enum class Refusal : uint8_t {
  agreement_cancelled,  // 403 allocation_not_active
  depleted,             // 402 allocation_depleted
  expired,              // 403 allocation_expired (now >= ends_at, or already expired)
  window_not_open,      // 403 allocation_not_active (now < starts_at)
  suspended,            // 403 allocation_not_active
  requests_per_minute,  // 429 rate_limited, Retry-After 60
  max_concurrency,      // 429 rate_limited, Retry-After 2
  tokens_per_minute,    // 429 rate_limited, Retry-After 60
  allowance_exhausted,  // 402 allocation_exhausted
};

struct Refused {
  Refusal reason;
  ErrorCode code;            // the wire code
  int retry_after_s = 0;     // 0 when no Retry-After header applies
  std::string_view limit;    // "requests_per_minute" | "tokens_per_minute" | "max_concurrency" | ""
  std::string_view message;  // human text for the error body
  // requests_per_minute, tokens_per_minute: how long until the refused window has room,
  // in whole milliseconds rounded up (retry-after-ms). 0 for every other refusal: when a
  // request in flight finishes is not known.
  int64_t retry_after_ms = 0;
};

struct Admitted {
  Tokens hold;                        // input estimate, per-choice limit * n
  int64_t per_choice_limit = 0;       // what the provider is asked for, per choice
  std::optional<int64_t> lowered_to;  // set when the limit was lowered to fit
};

struct AdmissionDecision {
  std::variant<Admitted, Refused> outcome;
  // State changes the store applies even when refused (ready->active, ->expired).
  std::optional<AllocationState> new_state;
  std::optional<AgreementState> new_agreement_state;

  bool admitted() const { return std::holds_alternative<Admitted>(outcome); }
};

// Pure. REQUIRES: the caller holds the allocation's lock while it computes `snap`,
// calls this, and applies the result.
AdmissionDecision decide_admission(const AllocationSnapshot& snap, const RequestFacts& facts,
                                   UnixMicros now);

// Step 1 alone (window and state), for calls that book nothing and count toward no limit
// (SPEC-APIS §3: GET /v1/models, the stored response objects): the refusal admission would
// answer at `now`, or nullopt. Applies no transition: such calls change nothing.
std::optional<Refused> refuse_by_state(const AllocationSnapshot& snap, UnixMicros now);

// Applies `d` to `snap` as the store records it: the state changes, and for an admission
// its hold, one more request in flight and one more start in the last minute, started at
// `snap.as_of`. The next decision on the same lock hold is taken on the result (several
// admissions in one transaction); it is also the snapshot a response's x-ratelimit-*
// headers show. REQUIRES: snap.as_of is the decision's `now`.
void apply_admission(AllocationSnapshot& snap, const AdmissionDecision& d);

// How long from `now` until each trailing window has room again, in microseconds: until
// requests_last_minute drops below requests_per_minute, and tokens_last_minute below
// tokens_per_minute. 0 while the window has room.
struct RateResets {
  int64_t requests_us = 0;
  int64_t tokens_us = 0;
};
RateResets rate_resets(const AllocationSnapshot& snap, UnixMicros now);

// `us` in whole milliseconds, rounded up: a client that waits that long finds the room.
// REQUIRES: us >= 0.
int64_t millis_rounded_up(int64_t us);

// The allocation's state as shown at `now` by status endpoints (ready->active and
// ->expired as admission would apply them, without applying them).
AllocationState effective_state(const AllocationSnapshot& snap, UnixMicros now);

// The allocation's state as every reader is shown it (admin API, CLI, the buyer's status,
// /metrics; SPEC §2): `cancelled` once its agreement is cancelled, `depleted` once it is
// completed, else `snap.state` (already the effective one). Never stored.
AllocationState shown_state(const AllocationSnapshot& snap);

// Why an operator's suspend or resume was refused, saying what can be done instead. `shown`
// is shown_state() of the allocation at the time.
std::string state_change_refusal(bool suspend, AllocationState shown);

// The agreement's state as shown at `now`: an in_force agreement whose window has ended
// is expired (SPEC §7: "becomes expired when its window ends unused").
AgreementState effective_agreement_state(AgreementState state, const Window& window,
                                         UnixMicros now);

// True when `booked` has reached the allowance in either direction (SPEC §5 Depletion).
bool is_depleted(const Tokens& allowance, const Tokens& booked);

// max(0, allowance - booked - held), per direction (SPEC §4).
Tokens remaining_allowance(const Tokens& allowance, const Tokens& booked, const Tokens& held);

// The enumerator's name ("max_concurrency", ...), for logs, metrics and test output.
std::string_view refusal_name(Refusal r);

}  // namespace cairva::core
