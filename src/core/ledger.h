// AllocationLedger: one allocation's authoritative in-memory state — trailing windows,
// holds, in-flight requests, booked provider request ids — and every transition of
// SPEC §3–§5 applied to it. Pure: no I/O, no clock, no lock of its own.
//
// Thread safety: none. REQUIRES: the owner (the embedded store, or the model test)
// holds the allocation's lock around every call.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/adjustment.h"
#include "core/admission.h"
#include "core/booked_ids.h"
#include "core/settlement.h"
#include "core/types.h"

namespace cairva::core {

// A usage report's settlement (settle()), as book() returns it.
struct BookOutcome {
  BookResult result = BookResult::unknown_request;
  Tokens booked_event;           // duplicate, conflict, reused_id: the counts already booked
  bool became_depleted = false;  // allocation -> depleted, agreement -> completed
};

enum class ReconcileResult : uint8_t { booked, not_pending, unknown_request, provider_id_taken };

struct ReconcileOutcome {
  ReconcileResult result = ReconcileResult::unknown_request;
  bool became_depleted = false;
};

// One request the ledger still tracks (in_flight or usage_pending).
struct OpenRequest {
  RequestState state = RequestState::in_flight;
  Tokens hold;
  UnixMicros started_at = 0;
  std::optional<ReportedUsage> reported;  // counts kept unbooked (core/settlement.h)
  // The provider's id for it, once a settlement recorded one (usage_pending); empty before.
  std::string provider_request_id;
};

class AllocationLedger {
 public:
  // A new allocation (state `ready`, agreement `in_force`, nothing booked).
  explicit AllocationLedger(const Terms& terms);

  // --- Rebuilding from a store (restart). Call before any admission. ---
  void restore_states(AgreementState agreement, AllocationState allocation);
  void restore_booked(const Tokens& booked);
  // A request start inside the trailing window (any final state).
  void restore_start(UnixMicros started_at);
  // A booking inside the trailing window.
  void restore_booking(UnixMicros booked_at, int64_t tokens);
  void restore_booked_provider_id(const std::string& provider_request_id, const Tokens& counts);
  // An open (in_flight or usage_pending) request and its hold.
  void restore_open_request(const std::string& request_id, const OpenRequest& req);

  // --- Admission. ---
  AllocationSnapshot snapshot(UnixMicros now);
  // Decides and, when admitted, records the start, the hold and the in-flight count.
  // In-flight counts exclude stale requests once swept: call sweep_stale first (O(1)
  // when nothing is stale). REQUIRES: `request_id` never admitted before.
  AdmissionDecision admit(const std::string& request_id, const RequestFacts& facts, UnixMicros now);

  // --- Settlement. ---
  // Settles an open request as plan_settlement decides (core/settlement.h) and returns
  // the plan, whose effects the store persists. The ledger forgets a request once it is
  // booked or failed: settling it again plans it as unknown_request (the store, which
  // keeps request rows, plans it again from its row). REQUIRES: usage >= 0.
  SettlePlan settle(const std::string& request_id, const Report& report, UnixMicros now);
  // settle() of a usage report.
  BookOutcome book(const std::string& request_id, const std::string& provider_request_id,
                   const Tokens& usage, UnixMicros now);
  // The counts booked under a provider request id, if any.
  std::optional<Tokens> booked_counts(const std::string& provider_request_id) const;
  // Whether the id is this allocation's: booked under it, or recorded by an open request
  // (Store::owns_provider_request).
  bool owns_provider_request(const std::string& provider_request_id) const;
  // The provider's id of a request still in flight, seen before its settlement
  // (Store::note_provider_id): recorded as a settlement records one. False (nothing
  // changes) unless the request is in flight.
  bool note_provider_id(const std::string& request_id, std::string_view provider_request_id);
  // Provider completed without counts: usage_pending, hold kept. False if not in flight.
  bool mark_usage_pending(const std::string& request_id);
  // Provider error: hold released, nothing booked; the start still counts. False if not open.
  bool fail(const std::string& request_id);
  // The store could not record the start, so the request was never forwarded: the
  // admission is undone whole — hold released, not in flight, and its start no longer
  // counts for requests_per_minute. False unless in flight.
  bool withdraw(const std::string& request_id);
  ReconcileOutcome reconcile(const std::string& request_id, const std::string& provider_request_id,
                             const Tokens& usage, UnixMicros now);
  // In-flight requests started at or before now - timeout become usage_pending; their
  // ids are returned so the store can persist the change.
  std::vector<std::string> sweep_stale(UnixMicros now, int64_t in_flight_timeout_s);

  // --- Corrections (core/adjustment.h). ---
  // Moves the booked totals by `delta` and the states as plan_adjustment decides; nothing
  // when the plan is not allowed. An adjustment counts toward no trailing window.
  AdjustmentPlan adjust(const Tokens& delta);

  // --- Operator state changes. Each returns false when the current state forbids it. ---
  bool suspend();
  bool resume(UnixMicros now);
  bool cancel();

  // --- Reads. ---
  const Terms& terms() const { return terms_; }
  AgreementState agreement_state() const { return agreement_state_; }
  AllocationState state() const { return state_; }
  const Tokens& booked() const { return booked_; }
  const Tokens& held() const { return held_; }
  const OpenRequest* find_open(const std::string& request_id) const;
  // In-flight requests not yet swept as stale; usage_pending requests.
  int64_t in_flight() const { return in_flight_; }
  int64_t usage_pending() const { return usage_pending_; }

 private:
  // An open request and, while it is in flight, its place in `in_flight_order_`.
  struct Open {
    OpenRequest req;
    std::list<std::pair<UnixMicros, const std::string*>>::iterator in_flight_pos;
    UnixMicros counted_start = 0;  // its entry in `starts_` (0: restored, none of its own)
  };
  using OpenMap = std::unordered_map<std::string, Open>;

  // A booking in the trailing window. `running` is the sum of `tokens` over the log's
  // entries up to and including this one (from any base: only differences are read), so
  // the booking whose leaving frees room is found by binary search.
  struct Booking {
    UnixMicros at = 0;
    int64_t tokens = 0;
    int64_t running = 0;
  };

  void prune(UnixMicros now);
  // The booked_at of the oldest booking whose leaving takes the window's tokens below
  // tokens_per_minute. REQUIRES: tokens_in_window_ >= tokens_per_minute > 0.
  UnixMicros freeing_booking_at() const;
  void release_hold(const Tokens& hold);
  bool apply_booking(const Tokens& usage, UnixMicros now);  // returns became_depleted
  void apply_state_changes(const AdmissionDecision& d);
  void leave_in_flight(Open& open);
  void close(OpenMap::iterator it);  // releases the hold and forgets the request
  void record_provider_id(Open& open, std::string_view provider_request_id);
  void check_invariants() const;

  Terms terms_;
  AgreementState agreement_state_ = AgreementState::in_force;
  AllocationState state_ = AllocationState::ready;
  Tokens booked_;
  Tokens held_;
  int64_t in_flight_ = 0;
  int64_t usage_pending_ = 0;
  // Start times in the trailing window, oldest first; never more than requests_per_minute
  // (admission refuses at that count, and restore keeps only the newest that many, which
  // leaves every later count "min(true count, limit)": all admission compares).
  std::deque<UnixMicros> starts_;
  // Bookings in the trailing window, oldest first, and their sum. One entry per booking
  // instant in the window; each booking closes one open request.
  std::deque<Booking> bookings_;
  int64_t tokens_in_window_ = 0;
  // Open requests. In flight ones are at most max_concurrency (plus restored ones);
  // usage_pending ones hold allowance, so they are bounded by the allowance.
  OpenMap open_;
  // The provider ids open requests recorded (OpenRequest::provider_request_id), one entry
  // each: at most one per open request, for owns_provider_request.
  std::unordered_multiset<std::string> open_provider_ids_;
  // In-flight requests, oldest start first (keys point into `open_`), so the stale
  // sweep and its no-op case are O(1) per request. Size == in_flight_.
  std::list<std::pair<UnixMicros, const std::string*>> in_flight_order_;
  // One entry per usage event: the booking key's uniqueness (SPEC §5). Kept for the
  // allocation's life (the embedded store has no other copy since schema 3), so compact:
  // 20 bytes a slot (core/booked_ids.h).
  BookedIds booked_provider_ids_;
};

}  // namespace cairva::core
