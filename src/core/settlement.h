// Settlement (SPEC §5): the one decision of what settling a request does. Given what a
// store read under the allocation's lock — the request's state, the event already booked
// under the reported provider id, the allocation's totals — and the gateway's report, it
// returns the outcome and the effects the store persists, in one transaction. Both stores
// and the in-memory ledger call it; none of them decides anything of its own.
//
// Pure: no I/O, no clock, no state.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/types.h"

namespace cairva::core {

// What the gateway reports about a request it admitted.
enum class SettleKind : uint8_t {
  usage,           // the provider reported counts: book them
  usage_missing,   // the provider completed without counts: usage_pending, hold kept
  failed,          // provider error: hold released, nothing booked
  usage_unbooked,  // counts the store could not book: usage_pending, hold kept, counts kept
};

// What a settlement did. Stored nowhere: metrics name them (metrics/metrics.cpp).
enum class BookResult : uint8_t {
  booked,           // a new usage event; hold released
  duplicate,        // the request's own event reported again, same counts: nothing written
  conflict,         // the request's own event reported again with other counts: a conflict row
  already_settled,  // the request is booked or failed (under another id): nothing written
  unknown_request,  // not a request of this allocation: nothing written
  reused_id,        // the id is another request's event: usage_pending, hold kept, a conflict
                    // row and the counts kept on the request
  pending,          // usage_pending (counts missing, or kept unbooked), hold kept
  failed,           // failed, hold released
};

struct Report {
  SettleKind kind = SettleKind::failed;
  std::string_view provider_request_id;  // usage: the booking key; else kept when non-empty
  Tokens usage;                          // usage and usage_unbooked
};

// The event booked under the report's provider id.
struct BookedEvent {
  Tokens counts;
  bool by_this_request = false;
};

struct SettlementFacts {
  std::optional<RequestState> state;        // nullopt: not a request of the allocation
  const ReportedUsage* reported = nullptr;  // counts already kept on the request, if any
  std::optional<BookedEvent> booked;        // usage reports: the event under the id, if any
  // The allocation, for depletion.
  AllocationState allocation_state = AllocationState::active;
  AgreementState agreement_state = AgreementState::in_force;
  Tokens allowance;
  Tokens booked_total;
};

// The effects to persist, in this order, in one transaction.
struct SettlePlan {
  BookResult outcome = BookResult::unknown_request;
  RequestState request_state = RequestState::failed;  // after the settlement
  bool insert_event = false;  // the report as a provider event; request booked; totals raised
  bool release_hold = false;  // with insert_event, or the request failed
  bool change_state = false;  // the request becomes request_state (insert_event: booked)
  // With change_state: the report's provider id (when not empty) becomes the request's,
  // under which a reconciliation books. Not an id another request's event holds.
  bool record_provider_id = false;
  bool record_conflict = false;  // a conflict row: the report's counts against booked_counts
  bool keep_reported = false;    // the request's reported_usage becomes the report
  Tokens booked_counts;  // the event already booked under the id (duplicate, conflict, reused_id)
  // With insert_event: the allocation reached its allowance and becomes depleted; its
  // agreement, if in force, completed.
  bool depletes = false;
  bool completes_agreement = false;
};

SettlePlan plan_settlement(const SettlementFacts& facts, const Report& report);

// The provider id a settlement writes on the request ("" keeps the one it has): the
// report's when `plan` records it; for a reused id that moves the request to usage_pending,
// the gateway's own `request_id`, so that an id noted while the request ran
// (Store::note_provider_id), which is another request's event, never stays the booking key a
// reconciliation would use.
std::string_view recorded_provider_id(const SettlePlan& plan, std::string_view reported_provider_id,
                                      std::string_view request_id);

// Whether an allocation in `state` becomes depleted once `booked_total` is booked.
bool depletes(AllocationState state, const Tokens& allowance, const Tokens& booked_total);

}  // namespace cairva::core
