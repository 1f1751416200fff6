// SqliteStore's admin calls (blocking). State changes decide in memory under the
// allocation's mutex (the core's AllocationLedger says whether they are allowed) and wait
// for their write to be durable; listings read SQLite after a writer flush.
#include <algorithm>

#include "base/ids.h"
#include "store/sqlite/limits.h"
#include "store/sqlite/row_sql.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/writes.h"
#include "store/validate.h"

namespace cairva::store::sqlite {
namespace {

Error invalid(std::string message) {
  return make_error(ErrorCode::invalid_request, std::move(message));
}
Error not_found(const std::string& what, const std::string& id) {
  return make_error(ErrorCode::not_found, what + " not found: " + id);
}

}  // namespace

Result<CreatedAgreement> SqliteStore::create_agreement(const NewAgreement& a) {
  if (Status v = validate_new_agreement(a, options_.providers); !v.ok()) return v.error();
  const UnixMicros now = clock_->now();
  CreatedAgreement out;
  out.agreement = new_agreement_row(a, now);
  const std::string alloc_id = new_id("alloc");
  out.key_id = new_id("key");
  out.key_secret = new_secret();
  const std::string hash = hash_secret(out.key_secret);
  const bool open_now = a.terms.window.starts_at <= now && now < a.terms.window.ends_at;
  const auto state = open_now ? core::AllocationState::active : core::AllocationState::ready;
  if (Status s = write_and_wait(
          writes::insert_agreement(out.agreement, alloc_id, state, out.key_id, hash), true);
      !s.ok()) {
    return s.error();
  }
  auto alloc = std::make_shared<Allocation>(alloc_id, out.agreement);
  alloc->ledger.restore_states(core::AgreementState::in_force, state);
  auto key = std::make_shared<Key>(Key{out.key_id, hash, alloc_id, false});
  {
    std::unique_lock lock(map_mu_);
    allocations_[alloc_id] = alloc;
    allocation_of_agreement_[out.agreement.id] = alloc_id;
    keys_by_hash_[hash] = key;
    keys_by_id_[key->id] = key;
  }
  std::lock_guard lock(alloc->mu);
  out.allocation = status_locked(*alloc, now);
  return out;
}

Result<AgreementRow> SqliteStore::get_agreement(const std::string& agreement_id) {
  const auto alloc = find_by_agreement(agreement_id);
  if (!alloc) return not_found("agreement", agreement_id);
  std::lock_guard lock(alloc->mu);
  return agreement_locked(*alloc);
}

Result<AgreementRow> SqliteStore::cancel_agreement(const std::string& agreement_id) {
  const auto alloc = find_by_agreement(agreement_id);
  if (!alloc) return not_found("agreement", agreement_id);
  AgreementRow row;
  {
    std::lock_guard lock(alloc->mu);
    const auto before = alloc->ledger.agreement_state();
    if (!alloc->ledger.cancel()) {
      return make_error(ErrorCode::conflict,
                        "agreement is " + std::string(core::to_string(before)));
    }
    persist_states_if_changed(*alloc, alloc->ledger.state(), before);
    row = agreement_locked(*alloc);
  }
  writer_->flush();
  if (writer_->failing())
    return make_error(ErrorCode::store_unavailable, "store unavailable: writes are failing");
  return row;
}

Result<std::vector<AllocationStatus>> SqliteStore::list_allocations() {
  std::vector<std::shared_ptr<Allocation>> all;
  {
    std::shared_lock lock(map_mu_);
    for (const auto& [id, a] : allocations_) all.push_back(a);
  }
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) {
    return x->agreement.created_at != y->agreement.created_at
               ? x->agreement.created_at < y->agreement.created_at
               : x->id < y->id;
  });
  std::vector<AllocationStatus> out;
  out.reserve(all.size());
  for (const auto& a : all) {
    std::lock_guard lock(a->mu);
    const UnixMicros now = clock_->now();
    sweep_locked(*a, now);
    out.push_back(status_locked(*a, now));
  }
  return out;
}

Result<AllocationStatus> SqliteStore::get_allocation(const std::string& allocation_id) {
  const auto a = find(allocation_id);
  if (!a) return not_found("allocation", allocation_id);
  std::lock_guard lock(a->mu);
  const UnixMicros now = clock_->now();
  sweep_locked(*a, now);
  return status_locked(*a, now);
}

Result<AllocationStatus> SqliteStore::change_state(const std::string& allocation_id, bool suspend) {
  const auto a = find(allocation_id);
  if (!a) return not_found("allocation", allocation_id);
  AllocationStatus status;
  {
    std::lock_guard lock(a->mu);
    const UnixMicros now = clock_->now();
    const auto before = a->ledger.state();
    const auto before_agreement = a->ledger.agreement_state();
    // Start from the state admission would see now: a window that has ended is expired.
    const auto effective = core::effective_state(a->ledger.snapshot(now), now);
    if (effective != before) a->ledger.restore_states(before_agreement, effective);
    const bool allowed = suspend ? a->ledger.suspend() : a->ledger.resume(now);
    if (!allowed) {
      persist_states_if_changed(*a, before, before_agreement);
      core::AllocationSnapshot shown = a->ledger.snapshot(now);
      shown.state = effective;
      return make_error(ErrorCode::conflict,
                        core::state_change_refusal(suspend, core::shown_state(shown)));
    }
    persist_states_if_changed(*a, before, before_agreement);
    status = status_locked(*a, now);
  }
  writer_->flush();
  if (writer_->failing())
    return make_error(ErrorCode::store_unavailable, "store unavailable: writes are failing");
  return status;
}

Result<AllocationStatus> SqliteStore::suspend_allocation(const std::string& allocation_id) {
  return change_state(allocation_id, true);
}

Result<AllocationStatus> SqliteStore::resume_allocation(const std::string& allocation_id) {
  return change_state(allocation_id, false);
}

Result<CreatedKey> SqliteStore::create_key(const std::string& allocation_id) {
  if (!find(allocation_id)) return not_found("allocation", allocation_id);
  CreatedKey out{new_id("key"), new_secret()};
  const std::string hash = hash_secret(out.key_secret);
  if (Status s =
          write_and_wait(writes::insert_key(out.key_id, allocation_id, hash, clock_->now()), true);
      !s.ok()) {
    return s.error();
  }
  auto key = std::make_shared<Key>(Key{out.key_id, hash, allocation_id, false});
  std::unique_lock lock(map_mu_);
  keys_by_hash_[hash] = key;
  keys_by_id_[key->id] = key;
  return out;
}

Result<ApiKeyRow> SqliteStore::revoke_key(const std::string& key_id) {
  ApiKeyRow row;
  {
    std::unique_lock lock(map_mu_);
    const auto it = keys_by_id_.find(key_id);
    if (it == keys_by_id_.end()) return not_found("key", key_id);
    it->second->revoked = true;  // refused from this instant, before the write is durable
    row = ApiKeyRow{key_id, it->second->allocation_id, true};
  }
  if (Status s = write_and_wait(writes::revoke_key(key_id), false); !s.ok()) return s.error();
  return row;
}

Result<RequestRow> SqliteStore::get_request(const std::string& request_id) {
  return read<RequestRow>([&](Db& db) -> Result<RequestRow> {
    auto s = db.prepare(std::string(request_columns) + " WHERE id = ?");
    if (!s.ok()) return s.error();
    s->text(request_id);
    auto row = s->step();
    if (!row.ok()) return row.error();
    if (!*row) return not_found("request", request_id);
    return parse_request(*s);
  });
}

Result<UsageEventRow> SqliteStore::reconcile(const Reconciliation& r) {
  if (r.usage.input < 0 || r.usage.output < 0) return invalid("token counts must be integers >= 0");
  if (r.evidence.empty()) return invalid("evidence: must be a non-empty string");
  auto req = get_request(r.request_id);
  if (!req.ok()) return req.error();
  const auto alloc = find(req->allocation_id);
  if (!alloc) return not_found("request", r.request_id);
  auto usage = reconciled_usage(r, req->reported_usage);
  if (!usage.ok()) return usage.error();
  if (req->state == core::RequestState::usage_pending) {
    if (Status s = check_hold_ratio(*usage, req->hold, r.force); !s.ok()) return s.error();
  }
  const std::string provider_request_id =
      req->provider_request_id.empty() ? r.request_id : req->provider_request_id;
  UsageEventRow event;
  {
    std::lock_guard lock(alloc->mu);
    const UnixMicros now = booking_time_locked(*alloc);
    const auto before = alloc->ledger.state();
    const auto before_agreement = alloc->ledger.agreement_state();
    const core::ReconcileOutcome out =
        alloc->ledger.reconcile(r.request_id, provider_request_id, *usage, now);
    switch (out.result) {
      case core::ReconcileResult::booked:
        break;
      case core::ReconcileResult::not_pending:
      case core::ReconcileResult::unknown_request:  // the ledger forgets settled requests
        return make_error(ErrorCode::not_pending,
                          "request " + r.request_id + " is not usage_pending");
      case core::ReconcileResult::provider_id_taken:
        return make_error(ErrorCode::conflict,
                          "provider request id already booked: " + provider_request_id);
    }
    event = UsageEventRow{new_time_ordered_id("evt"), alloc->id,  r.request_id,
                          provider_request_id,        *usage,     core::EventSource::reconciliation,
                          core::Finality::confirmed,  r.evidence, now};
    writer_->enqueue({WriteOp::Kind::durable, {writes::book(event)}, {}, {}});
    persist_states_if_changed(*alloc, before, before_agreement);
  }
  writer_->flush();
  if (writer_->failing())
    return make_error(ErrorCode::store_unavailable, "store unavailable: writes are failing");
  return event;
}

}  // namespace cairva::store::sqlite
