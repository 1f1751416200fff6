// PostgresStore's admin calls (blocking). State changes take the allocation's row lock
// and let the core's AllocationLedger decide whether the change is allowed.
#include <algorithm>

#include "base/ids.h"
#include "core/ledger.h"
#include "store/postgres/codec.h"
#include "store/postgres/console_statements.h"
#include "store/postgres/postgres_store.h"
#include "store/postgres/statements.h"
#include "store/postgres/tx_helpers.h"
#include "store/validate.h"

namespace cairva::store::pg {
namespace {

Error invalid(std::string message) {
  return make_error(ErrorCode::invalid_request, std::move(message));
}

Result<UnixMicros> now_on(Connection& c, std::optional<UnixMicros> injected) {
  if (injected) return *injected;
  auto r = c.run(sql::read_now, Params().null());
  if (!r.ok()) return r.error();
  return get_i64(r->get(), 0, 0);
}

Result<AllocationRow> lock(Connection& c, const std::string& allocation_id) {
  auto r = c.run(sql::lock_allocation, Params().text(allocation_id));
  if (!r.ok()) return r.error();
  if (rows(*r) == 0)
    return make_error(ErrorCode::not_found, "allocation not found: " + allocation_id);
  return parse_allocation(r->get(), 0, 0);
}

Status set_states(Connection& c, const std::string& allocation_id, const AllocationRow& alloc,
                  const core::AllocationLedger& ledger) {
  auto r = c.run(sql::set_states, Params()
                                      .text(allocation_id)
                                      .text(core::to_string(ledger.state()))
                                      .text(alloc.agreement_id)
                                      .text(core::to_string(ledger.agreement_state())));
  if (!r.ok()) return r.error();
  return {};
}

}  // namespace

Result<CreatedAgreement> PostgresStore::create_agreement(const NewAgreement& a) {
  if (Status v = validate_new_agreement(a, options_.providers); !v.ok()) return v.error();
  return with_connection<CreatedAgreement>([&](Connection& c) -> Result<CreatedAgreement> {
    auto now = now_on(c, injected_now());
    if (!now.ok()) return now.error();
    CreatedAgreement out;
    out.agreement = new_agreement_row(a, *now);
    const std::string alloc_id = new_id("alloc");
    out.key_id = new_id("key");
    out.key_secret = new_secret();
    Transaction tx(c);
    if (Status s = tx.begin(); !s.ok()) return s.error();
    // Allocations commit in the order of their seq, which listings page by.
    if (auto locked = c.run(sql::creation_lock, Params().text("")); !locked.ok())
      return locked.error();
    const auto& t = a.terms;
    auto ag = c.run(sql::insert_agreement, Params()
                                               .text(out.agreement.id)
                                               .text(a.supplier)
                                               .text(a.buyer)
                                               .text(a.provider)
                                               .text(join_models(a.models))
                                               .i64(t.allowance.input)
                                               .i64(t.allowance.output)
                                               .i64(t.window.starts_at)
                                               .i64(t.window.ends_at)
                                               .i64(t.limits.requests_per_minute)
                                               .i64(t.limits.tokens_per_minute)
                                               .i64(t.limits.max_concurrency)
                                               .text("in_force")
                                               .i64(*now)
                                               .text(join_models(a.service_tiers)));
    if (!ag.ok()) return ag.error();
    auto al = c.run(sql::insert_allocation,
                    Params().text(alloc_id).text(out.agreement.id).text("ready").i64(*now));
    if (!al.ok()) return al.error();
    auto key =
        c.run(sql::insert_key,
              Params().text(out.key_id).text(alloc_id).text(hash_secret(out.key_secret)).i64(*now));
    if (!key.ok()) return key.error();
    if (Status s = tx.commit(); !s.ok()) return s.error();
    auto status = one_status_on(c, alloc_id);
    if (!status.ok()) return status.error();
    out.allocation = std::move(status).value();
    return out;
  });
}

Result<AgreementRow> PostgresStore::get_agreement(const std::string& agreement_id) {
  return with_connection<AgreementRow>([&](Connection& c) -> Result<AgreementRow> {
    auto r = c.run(sql::get_agreement, Params().text(agreement_id));
    if (!r.ok()) return r.error();
    if (rows(*r) == 0)
      return make_error(ErrorCode::not_found, "agreement not found: " + agreement_id);
    return parse_agreement(r->get(), 0);
  });
}

Result<AgreementRow> PostgresStore::cancel_agreement(const std::string& agreement_id) {
  auto done = with_connection<int>([&](Connection& c) -> Result<int> {
    auto id = c.run(sql::allocation_of_agreement, Params().text(agreement_id));
    if (!id.ok()) return id.error();
    if (rows(*id) == 0)
      return make_error(ErrorCode::not_found, "agreement not found: " + agreement_id);
    const std::string allocation_id = get_text(id->get(), 0, 0);
    Transaction tx(c);
    if (Status s = tx.begin(); !s.ok()) return s.error();
    auto alloc = lock(c, allocation_id);
    if (!alloc.ok()) return alloc.error();
    core::AllocationLedger ledger = ledger_for(*alloc, "", nullptr);
    if (!ledger.cancel()) {
      return make_error(
          ErrorCode::conflict,
          "agreement is " + std::string(core::to_string(alloc->snap.agreement_state)));
    }
    if (Status s = set_states(c, allocation_id, *alloc, ledger); !s.ok()) return s.error();
    if (Status s = tx.commit(); !s.ok()) return s.error();
    return 0;
  });
  if (!done.ok()) return done.error();
  return get_agreement(agreement_id);
}

Result<std::vector<AllocationStatus>> PostgresStore::list_allocations() {
  return with_connection<std::vector<AllocationStatus>>(
      [&](Connection& c) { return status_on(c, std::nullopt); });
}

Result<AllocationStatus> PostgresStore::get_allocation(const std::string& allocation_id) {
  return with_connection<AllocationStatus>(
      [&](Connection& c) { return one_status_on(c, allocation_id); });
}

Result<AllocationStatus> PostgresStore::suspend_allocation(const std::string& allocation_id) {
  return with_connection<AllocationStatus>(
      [&](Connection& c) { return change_state_on(c, allocation_id, true); });
}

Result<AllocationStatus> PostgresStore::resume_allocation(const std::string& allocation_id) {
  return with_connection<AllocationStatus>(
      [&](Connection& c) { return change_state_on(c, allocation_id, false); });
}

Result<AllocationStatus> PostgresStore::change_state_on(Connection& c,
                                                        const std::string& allocation_id,
                                                        bool suspend) {
  Transaction tx(c);
  if (Status s = tx.begin(); !s.ok()) return s.error();
  auto alloc = lock(c, allocation_id);
  if (!alloc.ok()) return alloc.error();
  auto now = now_on(c, injected_now());  // after the lock
  if (!now.ok()) return now.error();
  // The ledger starts from the state admission would see now (a window that has ended is
  // expired even if no admission has written that yet).
  AllocationRow effective = *alloc;
  effective.snap.state = core::effective_state(alloc->snap, *now);
  core::AllocationLedger ledger = ledger_for(effective, "", nullptr);
  const bool allowed = suspend ? ledger.suspend() : ledger.resume(*now);
  if (!allowed) {
    return make_error(ErrorCode::conflict,
                      core::state_change_refusal(suspend, core::shown_state(effective.snap)));
  }
  if (Status s = set_states(c, allocation_id, *alloc, ledger); !s.ok()) return s.error();
  if (Status s = tx.commit(); !s.ok()) return s.error();
  return one_status_on(c, allocation_id);
}

Result<CreatedKey> PostgresStore::create_key(const std::string& allocation_id) {
  return with_connection<CreatedKey>([&](Connection& c) -> Result<CreatedKey> {
    auto exists = c.run(sql::allocation_exists, Params().text(allocation_id));
    if (!exists.ok()) return exists.error();
    if (rows(*exists) == 0)
      return make_error(ErrorCode::not_found, "allocation not found: " + allocation_id);
    auto now = now_on(c, injected_now());
    if (!now.ok()) return now.error();
    CreatedKey out{new_id("key"), new_secret()};
    // An allocation's keys commit in the order of their seq, which its key listing pages by.
    Transaction tx(c);
    if (Status s = tx.begin(); !s.ok()) return s.error();
    if (auto locked = c.run(sql::creation_lock, Params().text(allocation_id)); !locked.ok())
      return locked.error();
    auto r = c.run(
        sql::insert_key,
        Params().text(out.key_id).text(allocation_id).text(hash_secret(out.key_secret)).i64(*now));
    if (!r.ok()) return r.error();
    if (Status s = tx.commit(); !s.ok()) return s.error();
    return out;
  });
}

Result<ApiKeyRow> PostgresStore::revoke_key(const std::string& key_id) {
  return with_connection<ApiKeyRow>([&](Connection& c) -> Result<ApiKeyRow> {
    auto r = c.run(sql::revoke_key, Params().text(key_id));
    if (!r.ok()) return r.error();
    if (rows(*r) == 0) return make_error(ErrorCode::not_found, "key not found: " + key_id);
    forget_key(key_id);  // other processes' caches: their admissions read `revoked`
    return ApiKeyRow{get_text(r->get(), 0, 0), get_text(r->get(), 0, 1), true};
  });
}

Result<RequestRow> PostgresStore::get_request(const std::string& request_id) {
  return with_connection<RequestRow>([&](Connection& c) -> Result<RequestRow> {
    auto r = c.run(sql::get_request, Params().text(request_id));
    if (!r.ok()) return r.error();
    if (rows(*r) == 0) return make_error(ErrorCode::not_found, "request not found: " + request_id);
    return parse_request(r->get(), 0);
  });
}

Result<UsageEventRow> PostgresStore::reconcile(const Reconciliation& r) {
  if (r.usage.input < 0 || r.usage.output < 0) return invalid("token counts must be integers >= 0");
  if (r.evidence.empty()) return invalid("evidence: must be a non-empty string");
  return with_connection<UsageEventRow>([&](Connection& c) { return reconcile_on(c, r); });
}

Result<UsageEventRow> PostgresStore::reconcile_on(Connection& c, const Reconciliation& r) {
  auto owner = c.run(sql::allocation_of_request, Params().text(r.request_id));
  if (!owner.ok()) return owner.error();
  if (rows(*owner) == 0)
    return make_error(ErrorCode::not_found, "request not found: " + r.request_id);
  const std::string allocation_id = get_text(owner->get(), 0, 0);
  Transaction tx(c);
  if (Status s = tx.begin(); !s.ok()) return s.error();
  if (auto marked = c.exec(sql::mark_row_writer); !marked.ok()) return marked.error();
  auto alloc = lock(c, allocation_id);
  if (!alloc.ok()) return alloc.error();
  auto req = read_locked_request(c, r.request_id, allocation_id, injected_now());
  if (!req.ok()) return req.error();
  if (!req->has_value())
    return make_error(ErrorCode::not_found, "request not found: " + r.request_id);
  const LockedRequest& rq = **req;
  const auto usage = reconciled_usage(r, rq.open.reported);
  if (!usage.ok()) return usage.error();
  if (rq.state == core::RequestState::usage_pending) {
    if (Status s = check_hold_ratio(*usage, rq.open.hold, r.force); !s.ok()) return s.error();
  }
  core::AllocationLedger ledger = ledger_for(*alloc, r.request_id, &rq);
  const std::string provider_request_id =
      rq.provider_request_id.empty() ? r.request_id : rq.provider_request_id;
  auto prior = booked_counts(c, allocation_id, provider_request_id);
  if (!prior.ok()) return prior.error();
  if (prior->has_value()) ledger.restore_booked_provider_id(provider_request_id, **prior);
  const core::ReconcileOutcome out =
      ledger.reconcile(r.request_id, provider_request_id, *usage, rq.now);
  switch (out.result) {
    case core::ReconcileResult::booked:
      break;
    case core::ReconcileResult::not_pending:
    case core::ReconcileResult::unknown_request:  // the ledger forgets settled requests
      return make_error(
          ErrorCode::not_pending,
          "request is " + std::string(core::to_string(rq.state)) + ", not usage_pending");
    case core::ReconcileResult::provider_id_taken:
      return make_error(ErrorCode::conflict,
                        "provider request id already booked: " + provider_request_id);
  }
  UsageEventRow event{new_id("evt"),
                      allocation_id,
                      r.request_id,
                      provider_request_id,
                      *usage,
                      core::EventSource::reconciliation,
                      core::Finality::confirmed,
                      r.evidence,
                      rq.now};
  auto w = write_booking(c, &tx, allocation_id, *alloc, ledger, event.id, r.request_id,
                         provider_request_id, *usage, event.source, event.finality, r.evidence,
                         rq.now, rq.open.hold);
  if (!w.ok()) return w.error();
  // Looked up above under the allocation's row lock, which every booking takes.
  if (!*w)
    return make_error(ErrorCode::conflict,
                      "provider request id already booked: " + provider_request_id);
  return event;
}

}  // namespace cairva::store::pg
