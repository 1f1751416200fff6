#include "store/bulk_reconcile.h"

#include <unordered_map>

#include "store/validate.h"

namespace cairva::store {
namespace {

Error invalid_item(size_t i, const std::string& why) {
  return make_error(ErrorCode::invalid_request, "items[" + std::to_string(i) + "]: " + why);
}

// What the first pass found for an item.
struct Target {
  enum class Kind : uint8_t { none, pending, booked, other } kind = Kind::none;
  std::string allocation_id;
  std::string request_id;   // may be empty for a booking found by provider id
  std::string booking_key;  // the provider request id it is (or would be) booked under
  core::Tokens hold;        // pending
  core::Tokens counts;      // booked: the event's
};

std::string key_of(const std::string& allocation_id, const std::string& booking_key) {
  return allocation_id + '\n' + booking_key;
}

Result<Target> by_request(Store& store, const BulkItem& item) {
  auto row = store.get_request(item.request_id);
  if (!row.ok()) {
    if (row.error().code == ErrorCode::not_found) return Target{};
    return row.error();
  }
  Target t;
  t.allocation_id = row->allocation_id;
  t.request_id = row->id;
  t.booking_key = row->provider_request_id.empty() ? row->id : row->provider_request_id;
  t.hold = row->hold;
  switch (row->state) {
    case core::RequestState::usage_pending:
      t.kind = Target::Kind::pending;
      return t;
    case core::RequestState::booked: {
      auto found = store.find_bookings(row->allocation_id, t.booking_key);
      if (!found.ok()) return found.error();
      t.kind = found->empty() ? Target::Kind::other : Target::Kind::booked;
      if (!found->empty()) t.counts = found->front().counts;
      return t;
    }
    case core::RequestState::in_flight:
    case core::RequestState::failed:
      t.kind = Target::Kind::other;
      return t;
  }
  return t;
}

Result<Target> by_provider_id(Store& store, const BulkItem& item, size_t i) {
  auto booked = store.find_bookings(item.allocation_id, item.provider_request_id);
  if (!booked.ok()) return booked.error();
  if (booked->size() > 1) {
    return invalid_item(i, "provider_request_id " + item.provider_request_id + " is booked in " +
                               std::to_string(booked->size()) +
                               " allocations; name the one with allocation_id");
  }
  Target t;
  t.booking_key = item.provider_request_id;
  if (booked->size() == 1) {
    const BookedMatch& m = booked->front();
    t.kind = Target::Kind::booked;
    t.allocation_id = m.allocation_id;
    t.request_id = m.request_id;
    t.counts = m.counts;
    return t;
  }
  auto pending = store.find_pending(item.allocation_id, item.provider_request_id);
  if (!pending.ok()) return pending.error();
  if (pending->empty()) return t;
  for (const auto& r : *pending) {
    if (r.allocation_id != pending->front().allocation_id) {
      return invalid_item(
          i, "provider_request_id " + item.provider_request_id +
                 " names pending requests of several allocations; name the one with allocation_id");
    }
  }
  const RequestRow& r = pending->front();  // the oldest
  t.kind = Target::Kind::pending;
  t.allocation_id = r.allocation_id;
  t.request_id = r.id;
  t.hold = r.hold;
  return t;
}

}  // namespace

std::string_view to_string(BulkOutcome o) {
  switch (o) {
    case BulkOutcome::booked:
      return "booked";
    case BulkOutcome::already_booked:
      return "already_booked";
    case BulkOutcome::conflict:
      return "conflict";
    case BulkOutcome::not_found:
      return "not_found";
    case BulkOutcome::not_pending:
      return "not_pending";
  }
  return "not_found";
}

namespace {

// Pass 1: every item's request, read only; the whole call refused for a bad item.
Result<std::vector<Target>> resolve(Store& store, const BulkReconciliation& call) {
  std::vector<Target> targets;
  targets.reserve(call.items.size());
  for (size_t i = 0; i < call.items.size(); ++i) {
    BulkItem item = call.items[i];
    if (item.request_id.empty() == item.provider_request_id.empty()) {
      return invalid_item(i, "give exactly one of request_id and provider_request_id");
    }
    if (item.usage.input < 0 || item.usage.output < 0)
      return invalid_item(i, "token counts must be integers >= 0");
    if (!item.allocation_id) item.allocation_id = call.allocation_id;
    auto t = item.request_id.empty() ? by_provider_id(store, item, i) : by_request(store, item);
    if (!t.ok()) return t.error();
    if (t->kind == Target::Kind::pending) {
      if (Status s = check_hold_ratio(item.usage, t->hold, call.force); !s.ok()) {
        return invalid_item(i, s.error().message);
      }
    }
    targets.push_back(std::move(t).value());
  }
  return targets;
}

// Pass 2: each item in order, on what pass 1 found and what the items before it booked;
// a real run books through Store::reconcile and collects the conflicts to record.
class Decider {
 public:
  Decider(Store& store, const BulkReconciliation& call)
      : store_(store), call_(call), out_(call.items.size()) {}

  Status decide(size_t i, const Target& t) {
    switch (t.kind) {
      case Target::Kind::none:
        out_[i].outcome = BulkOutcome::not_found;
        return {};
      case Target::Kind::other:
        out_[i].outcome = BulkOutcome::not_pending;
        return {};
      case Target::Kind::booked:
        compare(i, t, t.counts, t.request_id);
        return {};
      case Target::Kind::pending:
        return book(i, t);
    }
    return {};
  }

  std::vector<BulkResult>& results() { return out_; }
  std::vector<ConflictRow>& conflicts() { return conflicts_; }

 private:
  struct Booked {
    core::Tokens counts;
    std::string request_id;
  };

  // Against the event already booked: the same counts are nothing new, others a conflict.
  void compare(size_t i, const Target& t, const core::Tokens& counts,
               const std::string& request_id) {
    const core::Tokens& usage = call_.items[i].usage;
    if (usage == counts) {
      out_[i].outcome = BulkOutcome::already_booked;
      return;
    }
    out_[i].outcome = BulkOutcome::conflict;
    conflicts_.push_back(
        ConflictRow{"", t.allocation_id, request_id, t.booking_key, usage, counts, 0});
  }

  Status book(size_t i, const Target& t) {
    const core::Tokens& usage = call_.items[i].usage;
    const std::string key = key_of(t.allocation_id, t.booking_key);
    if (const auto it = booked_here_.find(key); it != booked_here_.end()) {
      compare(i, t, it->second.counts, it->second.request_id);
      return {};
    }
    if (call_.dry_run) {
      out_[i].outcome = BulkOutcome::booked;
      booked_here_.emplace(key, Booked{usage, t.request_id});
      return {};
    }
    auto event =
        store_.reconcile(Reconciliation{t.request_id, usage, call_.evidence, false, call_.force});
    if (event.ok()) {
      out_[i] = {BulkOutcome::booked, std::move(event).value()};
      booked_here_.emplace(key, Booked{usage, t.request_id});
      return {};
    }
    switch (event.error().code) {
      case ErrorCode::not_pending:  // settled since pass 1
      case ErrorCode::not_found:
        out_[i].outcome = BulkOutcome::not_pending;
        return {};
      case ErrorCode::conflict: {  // its provider request id is another request's event
        auto found = store_.find_bookings(t.allocation_id, t.booking_key);
        if (!found.ok()) return found.error();
        if (found->empty()) {
          out_[i].outcome = BulkOutcome::not_pending;
          return {};
        }
        // This request has no event of its own: a conflict whatever the counts.
        out_[i].outcome = BulkOutcome::conflict;
        conflicts_.push_back(ConflictRow{"", t.allocation_id, t.request_id, t.booking_key, usage,
                                         found->front().counts, 0});
        return {};
      }
      default:
        return event.error();
    }
  }

  Store& store_;
  const BulkReconciliation& call_;
  std::vector<BulkResult> out_;
  std::vector<ConflictRow> conflicts_;
  std::unordered_map<std::string, Booked> booked_here_;  // key_of(allocation, booking key)
};

}  // namespace

Result<std::vector<BulkResult>> reconcile_bulk(Store& store, const BulkReconciliation& call) {
  if (call.evidence.empty())
    return make_error(ErrorCode::invalid_request, "evidence: must be a non-empty string");
  if (call.items.size() > reconciliation_items_max) {
    return make_error(ErrorCode::invalid_request,
                      "items: at most " + std::to_string(reconciliation_items_max) +
                          " per call, got " + std::to_string(call.items.size()));
  }
  auto targets = resolve(store, call);
  if (!targets.ok()) return targets.error();
  Decider decider(store, call);
  for (size_t i = 0; i < call.items.size(); ++i) {
    if (Status s = decider.decide(i, (*targets)[i]); !s.ok()) return s.error();
  }
  if (!call.dry_run && !decider.conflicts().empty()) {
    auto recorded = store.record_conflicts(std::move(decider.conflicts()));
    if (!recorded.ok()) return recorded.error();
  }
  return std::move(decider.results());
}

}  // namespace cairva::store
