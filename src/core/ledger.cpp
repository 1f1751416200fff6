#include "core/ledger.h"

#include <algorithm>
#include <iterator>

#include "base/assert.h"
#include "core/limits.h"

namespace cairva::core {
namespace {

// Appends `t` to a time-ordered log, never earlier than its last entry, so that a clock
// stepping back cannot unsort the log (the entry then ages out a little later).
UnixMicros ordered_time(UnixMicros t, const std::deque<UnixMicros>& log) {
  return log.empty() ? t : std::max(t, log.back());
}

bool is_open_state(RequestState s) {
  return s == RequestState::in_flight || s == RequestState::usage_pending;
}

}  // namespace

AllocationLedger::AllocationLedger(const Terms& terms) : terms_(terms) {}

// ---------------------------------------------------------------- restore

void AllocationLedger::restore_states(AgreementState agreement, AllocationState allocation) {
  agreement_state_ = agreement;
  state_ = allocation;
}

void AllocationLedger::restore_booked(const Tokens& booked) { booked_ = booked; }

void AllocationLedger::restore_start(UnixMicros started_at) {
  starts_.insert(std::upper_bound(starts_.begin(), starts_.end(), started_at), started_at);
  // Only the newest requests_per_minute starts can decide a later admission.
  while (static_cast<int64_t>(starts_.size()) > terms_.limits.requests_per_minute) {
    starts_.pop_front();
  }
}

void AllocationLedger::restore_booking(UnixMicros booked_at, int64_t tokens) {
  const auto pos = std::upper_bound(bookings_.begin(), bookings_.end(), booked_at,
                                    [](UnixMicros t, const Booking& b) { return t < b.at; });
  // Rows usually arrive in booking order, so this appends; one out of order renumbers the
  // running sums after it.
  auto it = bookings_.insert(pos, Booking{booked_at, tokens, 0});
  for (; it != bookings_.end(); ++it) {
    it->running = (it == bookings_.begin() ? 0 : std::prev(it)->running) + it->tokens;
  }
  tokens_in_window_ += tokens;
}

void AllocationLedger::restore_booked_provider_id(const std::string& provider_request_id,
                                                  const Tokens& counts) {
  booked_provider_ids_.assign(provider_request_id, counts);
}

void AllocationLedger::restore_open_request(const std::string& request_id, const OpenRequest& req) {
  if (!is_open_state(req.state)) return;  // settled requests are not the ledger's concern
  auto [it, inserted] = open_.try_emplace(request_id, Open{req, in_flight_order_.end()});
  if (!inserted) return;  // a repeated row: the first one stands
  if (!req.provider_request_id.empty()) open_provider_ids_.insert(req.provider_request_id);
  held_.input += req.hold.input;
  held_.output += req.hold.output;
  if (req.state == RequestState::usage_pending) {
    ++usage_pending_;
    return;
  }
  ++in_flight_;
  // Keep the in-flight list ordered by start; rows usually arrive in order, so the
  // search from the back is O(1) in practice.
  auto pos = in_flight_order_.end();
  while (pos != in_flight_order_.begin() && std::prev(pos)->first > req.started_at) --pos;
  it->second.in_flight_pos = in_flight_order_.insert(pos, {req.started_at, &it->first});
}

// ---------------------------------------------------------------- admission

void AllocationLedger::prune(UnixMicros now) {
  const UnixMicros cutoff = now - rate_window_us;  // entries at or before it have aged out
  while (!starts_.empty() && starts_.front() <= cutoff) starts_.pop_front();
  while (!bookings_.empty() && bookings_.front().at <= cutoff) {
    tokens_in_window_ -= bookings_.front().tokens;
    bookings_.pop_front();
  }
}

UnixMicros AllocationLedger::freeing_booking_at() const {
  CAIRVA_ASSERT(!bookings_.empty() && tokens_in_window_ >= terms_.limits.tokens_per_minute);
  // More than tokens_in_window_ - limit tokens must leave: the first booking whose running
  // total from the window's start exceeds that is the one whose leaving makes room.
  const int64_t before_window = bookings_.front().running - bookings_.front().tokens;
  const int64_t must_leave_past =
      before_window + tokens_in_window_ - terms_.limits.tokens_per_minute;
  const auto it = std::upper_bound(bookings_.begin(), bookings_.end(), must_leave_past,
                                   [](int64_t v, const Booking& b) { return v < b.running; });
  CAIRVA_ASSERT(it != bookings_.end());
  return it->at;
}

AllocationSnapshot AllocationLedger::snapshot(UnixMicros now) {
  prune(now);
  AllocationSnapshot s;
  s.agreement_state = agreement_state_;
  s.state = state_;
  s.terms = terms_;
  s.booked = booked_;
  s.held = held_;
  s.requests_last_minute = static_cast<int64_t>(starts_.size());
  s.tokens_last_minute = tokens_in_window_;
  s.in_flight = in_flight_;
  s.usage_pending = usage_pending_;
  s.as_of = now;
  if (!starts_.empty()) s.oldest_start_at = starts_.front();
  // Only a full window pays for the search (O(log n)); below the limit there is room now.
  if (tokens_in_window_ > 0 && tokens_in_window_ >= terms_.limits.tokens_per_minute) {
    s.freeing_booking_at = freeing_booking_at();
  }
  return s;
}

void AllocationLedger::apply_state_changes(const AdmissionDecision& d) {
  if (d.new_state) state_ = *d.new_state;
  if (d.new_agreement_state) agreement_state_ = *d.new_agreement_state;
}

AdmissionDecision AllocationLedger::admit(const std::string& request_id, const RequestFacts& facts,
                                          UnixMicros now) {
  const AllocationSnapshot snap = snapshot(now);
  AdmissionDecision d = decide_admission(snap, facts, now);
  apply_state_changes(d);
  if (!d.admitted()) return d;

  const Tokens hold = std::get<Admitted>(d.outcome).hold;
  CAIRVA_ASSERT(static_cast<int64_t>(starts_.size()) < terms_.limits.requests_per_minute);
  CAIRVA_ASSERT(in_flight_ < terms_.limits.max_concurrency);
  const UnixMicros counted_start = ordered_time(now, starts_);
  starts_.push_back(counted_start);
  held_.input += hold.input;
  held_.output += hold.output;
  // A hold never takes more than remains: booked + held stays within the allowance
  // (unless real counts already overran it, in which case the hold is zero there).
  CAIRVA_ASSERT(hold.input == 0 || booked_.input + held_.input <= terms_.allowance.input);
  CAIRVA_ASSERT(hold.output == 0 || booked_.output + held_.output <= terms_.allowance.output);

  auto [it, inserted] = open_.try_emplace(
      request_id,
      Open{OpenRequest{RequestState::in_flight, hold, now}, in_flight_order_.end(), counted_start});
  CAIRVA_ASSERT(inserted);  // request ids are generated unique by the gateway
  // Admission order is start order (times are taken under the allocation's lock), so the
  // in-flight list stays sorted by appending; a clock stepping back only delays a sweep.
  it->second.in_flight_pos = in_flight_order_.insert(in_flight_order_.end(), {now, &it->first});
  ++in_flight_;
  check_invariants();
  return d;
}

// ---------------------------------------------------------------- settlement

void AllocationLedger::release_hold(const Tokens& hold) {
  held_.input -= hold.input;
  held_.output -= hold.output;
}

void AllocationLedger::leave_in_flight(Open& open) {
  CAIRVA_ASSERT(open.req.state == RequestState::in_flight);
  in_flight_order_.erase(open.in_flight_pos);
  open.in_flight_pos = in_flight_order_.end();
  --in_flight_;
}

void AllocationLedger::close(OpenMap::iterator it) {
  Open& open = it->second;
  record_provider_id(open, {});
  release_hold(open.req.hold);
  if (open.req.state == RequestState::in_flight) {
    leave_in_flight(open);
  } else {
    --usage_pending_;
  }
  open_.erase(it);
}

// Sets the open request's provider id (empty: none), keeping open_provider_ids_ in step.
void AllocationLedger::record_provider_id(Open& open, std::string_view provider_request_id) {
  std::string& mine = open.req.provider_request_id;
  if (mine == provider_request_id) return;
  if (!mine.empty()) open_provider_ids_.erase(open_provider_ids_.find(mine));
  mine.assign(provider_request_id);
  if (!mine.empty()) open_provider_ids_.insert(mine);
}

bool AllocationLedger::apply_booking(const Tokens& usage, UnixMicros now) {
  booked_.input += usage.input;
  booked_.output += usage.output;
  prune(now);
  if (const int64_t tokens = usage.total(); tokens > 0) {
    const UnixMicros at = bookings_.empty() ? now : std::max(now, bookings_.back().at);
    if (!bookings_.empty() && bookings_.back().at == at) {
      bookings_.back().tokens += tokens;  // same instant: one entry keeps the log short
      bookings_.back().running += tokens;
    } else {
      const int64_t before = bookings_.empty() ? 0 : bookings_.back().running;
      bookings_.push_back(Booking{at, tokens, before + tokens});
    }
    tokens_in_window_ += tokens;
  }
  if (!depletes(state_, terms_.allowance, booked_)) return false;
  state_ = AllocationState::depleted;
  if (agreement_state_ == AgreementState::in_force) agreement_state_ = AgreementState::completed;
  return true;
}

SettlePlan AllocationLedger::settle(const std::string& request_id, const Report& report,
                                    UnixMicros now) {
  CAIRVA_ASSERT(report.usage.input >= 0 && report.usage.output >= 0);
  SettlementFacts facts{std::nullopt,     nullptr,          std::nullopt, state_,
                        agreement_state_, terms_.allowance, booked_};
  const auto it = open_.find(request_id);
  if (it == open_.end()) return plan_settlement(facts, report);
  Open& open = it->second;
  facts.state = open.req.state;
  if (open.req.reported) facts.reported = &*open.req.reported;
  bool claimed = false;
  if (report.kind == SettleKind::usage) {
    // One lookup both tests the booking key and claims it. An open request has no event
    // of its own, so an id already booked is another request's.
    const BookedIds::Claim claim =
        booked_provider_ids_.claim(report.provider_request_id, report.usage);
    claimed = claim.claimed;
    if (!claimed) facts.booked = BookedEvent{claim.booked, false};
  }
  const SettlePlan plan = plan_settlement(facts, report);
  CAIRVA_ASSERT(plan.insert_event == claimed);
  if (plan.release_hold) {
    close(it);
    if (plan.insert_event) apply_booking(report.usage, now);
  } else {
    if (plan.change_state) mark_usage_pending(request_id);
    if (plan.change_state && plan.record_provider_id && !report.provider_request_id.empty()) {
      record_provider_id(open, report.provider_request_id);
    } else if (plan.change_state && plan.outcome == BookResult::reused_id) {
      record_provider_id(open, {});  // a noted id that is another request's event is not its own
    }
    if (plan.keep_reported) {
      open.req.reported = ReportedUsage{report.usage, std::string(report.provider_request_id)};
    }
  }
  check_invariants();
  return plan;
}

BookOutcome AllocationLedger::book(const std::string& request_id,
                                   const std::string& provider_request_id, const Tokens& usage,
                                   UnixMicros now) {
  const SettlePlan p = settle(request_id, {SettleKind::usage, provider_request_id, usage}, now);
  return {p.outcome, p.booked_counts, p.depletes};
}

std::optional<Tokens> AllocationLedger::booked_counts(
    const std::string& provider_request_id) const {
  return booked_provider_ids_.find(provider_request_id);
}

bool AllocationLedger::owns_provider_request(const std::string& provider_request_id) const {
  return booked_provider_ids_.find(provider_request_id).has_value() ||
         open_provider_ids_.contains(provider_request_id);
}

bool AllocationLedger::note_provider_id(const std::string& request_id,
                                        std::string_view provider_request_id) {
  const auto it = open_.find(request_id);
  if (it == open_.end() || it->second.req.state != RequestState::in_flight) return false;
  record_provider_id(it->second, provider_request_id);
  check_invariants();
  return true;
}

bool AllocationLedger::mark_usage_pending(const std::string& request_id) {
  const auto it = open_.find(request_id);
  if (it == open_.end() || it->second.req.state != RequestState::in_flight) return false;
  leave_in_flight(it->second);
  it->second.req.state = RequestState::usage_pending;
  ++usage_pending_;
  check_invariants();
  return true;
}

bool AllocationLedger::fail(const std::string& request_id) {
  const auto it = open_.find(request_id);
  if (it == open_.end()) return false;
  close(it);  // the start stays in starts_: failed requests count for requests_per_minute
  check_invariants();
  return true;
}

bool AllocationLedger::withdraw(const std::string& request_id) {
  const auto it = open_.find(request_id);
  if (it == open_.end() || it->second.req.state != RequestState::in_flight) return false;
  // Equal entries are interchangeable; none is left once the start has aged out.
  const auto [first, last] =
      std::equal_range(starts_.begin(), starts_.end(), it->second.counted_start);
  if (first != last) starts_.erase(first);
  close(it);
  check_invariants();
  return true;
}

ReconcileOutcome AllocationLedger::reconcile(const std::string& request_id,
                                             const std::string& provider_request_id,
                                             const Tokens& usage, UnixMicros now) {
  CAIRVA_ASSERT(usage.input >= 0 && usage.output >= 0);
  ReconcileOutcome out;
  const auto it = open_.find(request_id);
  if (it == open_.end()) return out;  // unknown_request
  if (it->second.req.state != RequestState::usage_pending) {
    out.result = ReconcileResult::not_pending;
    return out;
  }
  // Claimed before the request closes: a taken id leaves the request pending.
  if (!booked_provider_ids_.claim(provider_request_id, usage).claimed) {
    out.result = ReconcileResult::provider_id_taken;
    return out;
  }
  close(it);
  out.result = ReconcileResult::booked;
  out.became_depleted = apply_booking(usage, now);
  check_invariants();
  return out;
}

std::vector<std::string> AllocationLedger::sweep_stale(UnixMicros now,
                                                       int64_t in_flight_timeout_s) {
  const UnixMicros cutoff = now - in_flight_timeout_s * micros_per_second;
  std::vector<std::string> swept;
  while (!in_flight_order_.empty() && in_flight_order_.front().first <= cutoff) {
    const std::string id = *in_flight_order_.front().second;
    const bool moved = mark_usage_pending(id);
    CAIRVA_ASSERT(moved);
    swept.push_back(id);
  }
  return swept;
}

// ---------------------------------------------------------------- corrections

AdjustmentPlan AllocationLedger::adjust(const Tokens& delta) {
  const AdjustmentPlan p =
      plan_adjustment(state_, agreement_state_, terms_.allowance, booked_, delta);
  if (!p.allowed) return p;
  booked_ = p.booked_after;
  state_ = p.state;
  agreement_state_ = p.agreement_state;
  check_invariants();
  return p;
}

// ---------------------------------------------------------------- operator changes

bool AllocationLedger::suspend() {
  if (agreement_state_ != AgreementState::in_force) return false;
  if (state_ == AllocationState::depleted || state_ == AllocationState::expired) return false;
  state_ = AllocationState::suspended;
  return true;
}

bool AllocationLedger::resume(UnixMicros now) {
  if (agreement_state_ != AgreementState::in_force) return false;
  if (state_ == AllocationState::depleted || state_ == AllocationState::expired) return false;
  if (now >= terms_.window.ends_at) return false;  // its window is over: it is expired
  state_ = now < terms_.window.starts_at ? AllocationState::ready : AllocationState::active;
  return true;
}

bool AllocationLedger::cancel() {
  if (agreement_state_ == AgreementState::cancelled) return true;
  if (agreement_state_ != AgreementState::in_force) return false;
  agreement_state_ = AgreementState::cancelled;
  return true;
}

// ---------------------------------------------------------------- reads

const OpenRequest* AllocationLedger::find_open(const std::string& request_id) const {
  const auto it = open_.find(request_id);
  return it == open_.end() ? nullptr : &it->second.req;
}

void AllocationLedger::check_invariants() const {
  CAIRVA_ASSERT(held_.input >= 0 && held_.output >= 0);
  CAIRVA_ASSERT(booked_.input >= 0 && booked_.output >= 0);
  CAIRVA_ASSERT(in_flight_ >= 0 && usage_pending_ >= 0 && tokens_in_window_ >= 0);
  CAIRVA_ASSERT(static_cast<int64_t>(in_flight_order_.size()) == in_flight_);
  CAIRVA_ASSERT(static_cast<int64_t>(open_.size()) == in_flight_ + usage_pending_);
  CAIRVA_ASSERT(open_provider_ids_.size() <= open_.size());
  CAIRVA_ASSERT(static_cast<int64_t>(starts_.size()) <= terms_.limits.requests_per_minute);
  // The running sums span exactly the window's tokens.
  CAIRVA_ASSERT(bookings_.empty() ||
                bookings_.back().running - bookings_.front().running + bookings_.front().tokens ==
                    tokens_in_window_);
}

}  // namespace cairva::core
