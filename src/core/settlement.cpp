#include "core/settlement.h"

#include "core/admission.h"

namespace cairva::core {
namespace {

bool is_open(RequestState s) {
  return s == RequestState::in_flight || s == RequestState::usage_pending;
}

// The report's counts kept on the open request (usage_pending, hold kept), unless they
// are kept already: a retried settlement writes nothing twice.
SettlePlan keep_reported(SettlePlan p, const SettlementFacts& f, const Report& r) {
  const bool kept = f.reported && f.reported->counts == r.usage &&
                    f.reported->provider_request_id == r.provider_request_id;
  p.request_state = RequestState::usage_pending;
  if (kept) return p;
  p.change_state = *f.state == RequestState::in_flight;
  p.keep_reported = true;
  p.record_conflict = p.outcome == BookResult::reused_id;
  p.record_provider_id = p.change_state && !p.record_conflict;
  return p;
}

}  // namespace

std::string_view recorded_provider_id(const SettlePlan& plan, std::string_view reported_provider_id,
                                      std::string_view request_id) {
  if (plan.record_provider_id) return reported_provider_id;
  if (plan.outcome == BookResult::reused_id && plan.change_state) return request_id;
  return {};
}

bool depletes(AllocationState state, const Tokens& allowance, const Tokens& booked_total) {
  const bool can_deplete = state == AllocationState::ready || state == AllocationState::active ||
                           state == AllocationState::suspended;
  return can_deplete && is_depleted(allowance, booked_total);
}

SettlePlan plan_settlement(const SettlementFacts& f, const Report& r) {
  SettlePlan p;
  if (!f.state) return p;  // unknown_request
  p.request_state = *f.state;
  if (r.kind == SettleKind::usage && f.booked && f.booked->by_this_request) {
    // The request's own event reported again (a retried settlement): never booked twice.
    p.booked_counts = f.booked->counts;
    p.outcome = f.booked->counts == r.usage ? BookResult::duplicate : BookResult::conflict;
    p.record_conflict = p.outcome == BookResult::conflict;
    return p;
  }
  if (!is_open(*f.state)) {
    p.outcome = BookResult::already_settled;
    return p;
  }
  switch (r.kind) {
    case SettleKind::usage:
      if (f.booked) {
        // Another request's event: a provider that reused an id never makes a request free.
        p.outcome = BookResult::reused_id;
        p.booked_counts = f.booked->counts;
        return keep_reported(p, f, r);
      }
      p.outcome = BookResult::booked;
      p.request_state = RequestState::booked;
      p.insert_event = p.release_hold = p.change_state = p.record_provider_id = true;
      p.depletes =
          depletes(f.allocation_state, f.allowance,
                   {f.booked_total.input + r.usage.input, f.booked_total.output + r.usage.output});
      p.completes_agreement = p.depletes && f.agreement_state == AgreementState::in_force;
      return p;
    case SettleKind::usage_unbooked:
      p.outcome = BookResult::pending;
      return keep_reported(p, f, r);
    case SettleKind::usage_missing:
      p.outcome = BookResult::pending;
      p.change_state = p.record_provider_id = *f.state == RequestState::in_flight;
      p.request_state = RequestState::usage_pending;
      return p;
    case SettleKind::failed:
      p.outcome = BookResult::failed;
      p.request_state = RequestState::failed;
      p.change_state = p.release_hold = p.record_provider_id = true;
      return p;
  }
  return p;
}

}  // namespace cairva::core
