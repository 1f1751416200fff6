#include "core/adjustment.h"

#include "core/admission.h"
#include "core/settlement.h"

namespace cairva::core {

AdjustmentPlan plan_adjustment(AllocationState state, AgreementState agreement_state,
                               const Tokens& allowance, const Tokens& booked, const Tokens& delta) {
  AdjustmentPlan p;
  p.booked_after = {booked.input + delta.input, booked.output + delta.output};
  p.state = state;
  p.agreement_state = agreement_state;
  if (p.booked_after.input < 0 || p.booked_after.output < 0) return p;
  p.allowed = true;
  if (depletes(state, allowance, p.booked_after)) {
    p.state = AllocationState::depleted;
    if (agreement_state == AgreementState::in_force) p.agreement_state = AgreementState::completed;
  } else if (state == AllocationState::depleted && !is_depleted(allowance, p.booked_after)) {
    p.state = AllocationState::active;
    if (agreement_state == AgreementState::completed) p.agreement_state = AgreementState::in_force;
  }
  return p;
}

}  // namespace cairva::core
