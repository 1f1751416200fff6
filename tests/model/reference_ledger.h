// A deliberately naive reference for core::AllocationLedger: every request and usage
// event ever seen in plain vectors, and every figure recomputed from scratch when asked.
// Slow on purpose — it is the model the fast ledger is checked against.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/admission.h"
#include "core/ledger.h"
#include "core/types.h"

namespace cairva::model {

struct RefRequest {
  std::string id;
  core::RequestState state = core::RequestState::in_flight;
  core::Tokens hold;
  UnixMicros started_at = 0;
};

struct RefEvent {
  std::string request_id;
  std::string provider_request_id;
  core::Tokens counts;
  core::Tokens hold;  // the request's hold when it was booked, to measure overruns
  UnixMicros booked_at = 0;
};

// The reference's answer to an admission attempt.
struct RefAdmission {
  std::optional<core::Refusal> refusal;  // empty: admitted
  core::Tokens hold;
  std::optional<int64_t> lowered_to;
};

class ReferenceLedger {
 public:
  explicit ReferenceLedger(const core::Terms& terms) : terms_(terms) {}

  RefAdmission admit(const std::string& id, const core::RequestFacts& facts, UnixMicros now);
  core::BookOutcome book(const std::string& id, const std::string& provider_request_id,
                         const core::Tokens& counts, UnixMicros now);
  core::ReconcileOutcome reconcile(const std::string& id, const std::string& provider_request_id,
                                   const core::Tokens& counts, UnixMicros now);
  bool mark_usage_pending(const std::string& id);
  bool fail(const std::string& id);
  std::vector<std::string> sweep_stale(UnixMicros now, int64_t timeout_s);
  bool suspend();
  bool resume(UnixMicros now);
  bool cancel();

  // Figures, each recomputed from the vectors.
  core::Tokens booked() const;
  core::Tokens held() const;
  core::Tokens overrun() const;  // sum over events of max(0, counts - hold), per direction
  int64_t starts_in_window(UnixMicros now) const;
  int64_t tokens_in_window(UnixMicros now) const;
  int64_t count(core::RequestState s) const;
  // Microseconds from `now` until each window has room again, by brute force: the first
  // instant an entry leaves (its time + 60 s) at which the recount is under the limit.
  // 0 while it has room.
  int64_t requests_room_in(UnixMicros now) const;
  int64_t tokens_room_in(UnixMicros now) const;

  const core::Terms& terms() const { return terms_; }
  core::AgreementState agreement_state() const { return agreement_; }
  core::AllocationState state() const { return state_; }
  const std::vector<RefRequest>& requests() const { return requests_; }
  const std::vector<RefEvent>& events() const { return events_; }
  const RefRequest* find(const std::string& id) const;

 private:
  RefRequest* find_mutable(const std::string& id);
  const RefEvent* event_for_provider_id(const std::string& provider_request_id) const;
  bool add_event(RefRequest& r, const std::string& provider_request_id, const core::Tokens& counts,
                 UnixMicros now);  // returns became_depleted

  core::Terms terms_;
  core::AgreementState agreement_ = core::AgreementState::in_force;
  core::AllocationState state_ = core::AllocationState::ready;
  std::vector<RefRequest> requests_;
  std::vector<RefEvent> events_;
};

}  // namespace cairva::model
