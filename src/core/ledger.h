// AllocationLedger: one allocation's authoritative in-memory state — trailing windows,
// holds, in-flight requests, booked provider request ids — and every transition of
// SPEC §3–§5 applied to it. Pure: no I/O, no clock, no lock of its own.
//
// Thread safety: none. REQUIRES: the owner (the embedded store, or the model test)
// holds the allocation's lock around every call.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/admission.h"
#include "core/types.h"

namespace cairva::core {

// What booking a provider usage report did (SPEC §5 "Usage reported").
enum class BookResult : uint8_t {
  booked,               // a new usage event; hold released
  duplicate,            // provider id already booked with the same counts: request booked, no event
  conflict,             // provider id already booked with other counts: request booked, no event,
                        // a conflict to record for operators
  already_settled,      // the request already has its event (or failed): nothing changes
  unknown_request,      // not a request of this allocation: nothing changes
};

struct BookOutcome {
  BookResult result = BookResult::unknown_request;
  Tokens booked_event;          // for `conflict`/`duplicate`: the counts already booked
  bool became_depleted = false; // allocation -> depleted, agreement -> completed
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
  AdmissionDecision admit(const std::string& request_id, const RequestFacts& facts, UnixMicros now);

  // --- Settlement. ---
  BookOutcome book(const std::string& request_id, const std::string& provider_request_id,
                   const Tokens& usage, UnixMicros now);
  // Provider completed without counts: usage_pending, hold kept. False if not in flight.
  bool mark_usage_pending(const std::string& request_id);
  // Provider error: hold released, nothing booked; the start still counts. False if not open.
  bool fail(const std::string& request_id);
  ReconcileOutcome reconcile(const std::string& request_id, const std::string& provider_request_id,
                             const Tokens& usage, UnixMicros now);
  // In-flight requests started at or before now - timeout become usage_pending; their
  // ids are returned so the store can persist the change.
  std::vector<std::string> sweep_stale(UnixMicros now, int64_t in_flight_timeout_s);

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

 private:
  void prune(UnixMicros now);
  void release_hold(const Tokens& hold);
  bool apply_booking(const Tokens& usage, UnixMicros now);  // returns became_depleted

  Terms terms_;
  AgreementState agreement_state_ = AgreementState::in_force;
  AllocationState state_ = AllocationState::ready;
  Tokens booked_;
  Tokens held_;
  int64_t in_flight_ = 0;
  int64_t usage_pending_ = 0;
  // Start times in the trailing window, oldest first; never more than requests_per_minute.
  std::deque<UnixMicros> starts_;
  // (booked_at, tokens) in the trailing window, oldest first, with their running sum.
  std::deque<std::pair<UnixMicros, int64_t>> bookings_;
  int64_t tokens_in_window_ = 0;
  std::unordered_map<std::string, OpenRequest> open_;
  std::unordered_map<std::string, Tokens> booked_provider_ids_;
};

}  // namespace cairva::core
