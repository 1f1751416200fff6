// Adjustments (SPEC-CONSOLE §4b): a booked event is never changed; a mistake is corrected
// by a new event of signed counts that moves the allocation's booked totals. This is the
// one decision of what such a correction does to the totals and the states; both stores
// and the in-memory ledger call it.
//
// Pure: no I/O, no clock, no state.
#pragma once

#include "core/types.h"

namespace cairva::core {

struct AdjustmentPlan {
  bool allowed = false;  // false: a booked total would go below zero; nothing changes
  Tokens booked_after;
  AllocationState state = AllocationState::active;            // the allocation's, after
  AgreementState agreement_state = AgreementState::in_force;  // the agreement's, after
};

// Raising the booked totals to the allowance depletes the allocation as a booking does
// (its agreement, if in force, completed). Taking a depleted allocation's totals back below
// its allowance in both directions undoes that depletion: the allocation is active again
// (a status shows it expired once its window has ended) and a completed agreement in
// force, so the allowance a mistaken booking took can be used. Other states are kept.
AdjustmentPlan plan_adjustment(AllocationState state, AgreementState agreement_state,
                               const Tokens& allowance, const Tokens& booked, const Tokens& delta);

}  // namespace cairva::core
