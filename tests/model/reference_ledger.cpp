#include "reference_ledger.h"

#include <algorithm>

namespace cairva::model {

using core::AgreementState;
using core::AllocationState;
using core::Refusal;
using core::RequestState;
using core::Tokens;

namespace {
constexpr int64_t kWindowUs = 60 * micros_per_second;  // "the trailing 60 seconds"

bool is_open(RequestState s) {
  return s == RequestState::in_flight || s == RequestState::usage_pending;
}
}  // namespace

const RefRequest* ReferenceLedger::find(const std::string& id) const {
  for (const RefRequest& r : requests_) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

RefRequest* ReferenceLedger::find_mutable(const std::string& id) {
  return const_cast<RefRequest*>(find(id));
}

const RefEvent* ReferenceLedger::event_for_provider_id(const std::string& pid) const {
  for (const RefEvent& e : events_) {
    if (e.provider_request_id == pid) return &e;
  }
  return nullptr;
}

Tokens ReferenceLedger::booked() const {
  Tokens t;
  for (const RefEvent& e : events_) {
    t.input += e.counts.input;
    t.output += e.counts.output;
  }
  return t;
}

Tokens ReferenceLedger::held() const {
  Tokens t;
  for (const RefRequest& r : requests_) {
    if (!is_open(r.state)) continue;
    t.input += r.hold.input;
    t.output += r.hold.output;
  }
  return t;
}

Tokens ReferenceLedger::overrun() const {
  Tokens t;
  for (const RefEvent& e : events_) {
    t.input += std::max<int64_t>(0, e.counts.input - e.hold.input);
    t.output += std::max<int64_t>(0, e.counts.output - e.hold.output);
  }
  return t;
}

int64_t ReferenceLedger::starts_in_window(UnixMicros now) const {
  int64_t n = 0;
  for (const RefRequest& r : requests_) n += r.started_at > now - kWindowUs;
  return n;
}

int64_t ReferenceLedger::tokens_in_window(UnixMicros now) const {
  int64_t n = 0;
  for (const RefEvent& e : events_) {
    if (e.booked_at > now - kWindowUs) n += e.counts.input + e.counts.output;
  }
  return n;
}

int64_t ReferenceLedger::requests_room_in(UnixMicros now) const {
  if (starts_in_window(now) < terms_.limits.requests_per_minute) return 0;
  std::vector<UnixMicros> leaving;
  for (const RefRequest& r : requests_) {
    if (r.started_at > now - kWindowUs) leaving.push_back(r.started_at + kWindowUs);
  }
  std::sort(leaving.begin(), leaving.end());
  for (UnixMicros t : leaving) {
    if (starts_in_window(t) < terms_.limits.requests_per_minute) return t - now;
  }
  return -1;  // cannot be: every start leaves
}

int64_t ReferenceLedger::tokens_room_in(UnixMicros now) const {
  if (tokens_in_window(now) < terms_.limits.tokens_per_minute) return 0;
  std::vector<UnixMicros> leaving;
  for (const RefEvent& e : events_) {
    if (e.booked_at > now - kWindowUs) leaving.push_back(e.booked_at + kWindowUs);
  }
  std::sort(leaving.begin(), leaving.end());
  for (UnixMicros t : leaving) {
    if (tokens_in_window(t) < terms_.limits.tokens_per_minute) return t - now;
  }
  return -1;
}

int64_t ReferenceLedger::count(RequestState s) const {
  int64_t n = 0;
  for (const RefRequest& r : requests_) n += r.state == s;
  return n;
}

RefAdmission ReferenceLedger::admit(const std::string& id, const core::RequestFacts& facts,
                                    UnixMicros now) {
  RefAdmission a;
  auto refuse = [&](Refusal r) {
    a.refusal = r;
    return a;
  };
  if (agreement_ == AgreementState::cancelled) return refuse(Refusal::agreement_cancelled);
  if (state_ == AllocationState::depleted) return refuse(Refusal::depleted);
  if (state_ == AllocationState::expired || now >= terms_.window.ends_at) {
    state_ = AllocationState::expired;
    if (agreement_ == AgreementState::in_force) agreement_ = AgreementState::expired;
    return refuse(Refusal::expired);
  }
  if (now < terms_.window.starts_at) return refuse(Refusal::window_not_open);
  if (state_ == AllocationState::suspended) return refuse(Refusal::suspended);
  if (state_ == AllocationState::ready) state_ = AllocationState::active;
  if (starts_in_window(now) >= terms_.limits.requests_per_minute) {
    return refuse(Refusal::requests_per_minute);
  }
  if (count(RequestState::in_flight) >= terms_.limits.max_concurrency) {
    return refuse(Refusal::max_concurrency);
  }
  if (tokens_in_window(now) >= terms_.limits.tokens_per_minute) {
    return refuse(Refusal::tokens_per_minute);
  }
  const Tokens b = booked();
  const Tokens h = held();
  const int64_t rem_in = std::max<int64_t>(0, terms_.allowance.input - b.input - h.input);
  const int64_t rem_out = std::max<int64_t>(0, terms_.allowance.output - b.output - h.output);
  int64_t per_choice =
      facts.max_completion_tokens.value_or(facts.max_tokens.value_or(facts.default_max_tokens));
  if (facts.input_estimate > rem_in) return refuse(Refusal::allowance_exhausted);
  if (per_choice * facts.n > rem_out) {
    per_choice = rem_out / facts.n;
    if (per_choice == 0) return refuse(Refusal::allowance_exhausted);
    a.lowered_to = per_choice;
  }
  if (rem_out == 0) return refuse(Refusal::allowance_exhausted);
  a.hold = Tokens{facts.input_estimate, per_choice * facts.n};
  requests_.push_back(RefRequest{id, RequestState::in_flight, a.hold, now});
  return a;
}

bool ReferenceLedger::add_event(RefRequest& r, const std::string& pid, const Tokens& counts,
                                UnixMicros now) {
  events_.push_back(RefEvent{r.id, pid, counts, r.hold, now});
  r.state = RequestState::booked;
  const Tokens b = booked();
  const bool used_up = b.input >= terms_.allowance.input || b.output >= terms_.allowance.output;
  const bool can_deplete = state_ == AllocationState::ready || state_ == AllocationState::active ||
                           state_ == AllocationState::suspended;
  if (!used_up || !can_deplete) return false;
  state_ = AllocationState::depleted;
  if (agreement_ == AgreementState::in_force) agreement_ = AgreementState::completed;
  return true;
}

core::BookOutcome ReferenceLedger::book(const std::string& id, const std::string& pid,
                                        const Tokens& counts, UnixMicros now) {
  core::BookOutcome out;
  RefRequest* r = find_mutable(id);
  if (r == nullptr || !is_open(r->state)) return out;
  if (const RefEvent* e = event_for_provider_id(pid)) {
    // Another request's event (an open request has none): pending, its hold kept.
    out.result = core::BookResult::reused_id;
    out.booked_event = e->counts;
    r->state = RequestState::usage_pending;
    return out;
  }
  out.result = core::BookResult::booked;
  out.became_depleted = add_event(*r, pid, counts, now);
  return out;
}

core::ReconcileOutcome ReferenceLedger::reconcile(const std::string& id, const std::string& pid,
                                                  const Tokens& counts, UnixMicros now) {
  core::ReconcileOutcome out;
  RefRequest* r = find_mutable(id);
  if (r == nullptr || !is_open(r->state)) return out;
  if (r->state != RequestState::usage_pending) {
    out.result = core::ReconcileResult::not_pending;
  } else if (event_for_provider_id(pid) != nullptr) {
    out.result = core::ReconcileResult::provider_id_taken;
  } else {
    out.result = core::ReconcileResult::booked;
    out.became_depleted = add_event(*r, pid, counts, now);
  }
  return out;
}

bool ReferenceLedger::mark_usage_pending(const std::string& id) {
  RefRequest* r = find_mutable(id);
  if (r == nullptr || r->state != RequestState::in_flight) return false;
  r->state = RequestState::usage_pending;
  return true;
}

bool ReferenceLedger::fail(const std::string& id) {
  RefRequest* r = find_mutable(id);
  if (r == nullptr || !is_open(r->state)) return false;
  r->state = RequestState::failed;
  return true;
}

std::vector<std::string> ReferenceLedger::sweep_stale(UnixMicros now, int64_t timeout_s) {
  std::vector<std::string> swept;
  for (RefRequest& r : requests_) {  // admission order is start order
    if (r.state == RequestState::in_flight && r.started_at <= now - timeout_s * micros_per_second) {
      r.state = RequestState::usage_pending;
      swept.push_back(r.id);
    }
  }
  return swept;
}

bool ReferenceLedger::suspend() {
  if (agreement_ != AgreementState::in_force) return false;
  if (state_ == AllocationState::depleted || state_ == AllocationState::expired) return false;
  state_ = AllocationState::suspended;
  return true;
}

bool ReferenceLedger::resume(UnixMicros now) {
  if (agreement_ != AgreementState::in_force) return false;
  if (state_ == AllocationState::depleted || state_ == AllocationState::expired) return false;
  if (now >= terms_.window.ends_at) return false;
  state_ = now < terms_.window.starts_at ? AllocationState::ready : AllocationState::active;
  return true;
}

bool ReferenceLedger::cancel() {
  if (agreement_ == AgreementState::cancelled) return true;
  if (agreement_ != AgreementState::in_force) return false;
  agreement_ = AgreementState::cancelled;
  return true;
}

}  // namespace cairva::model
