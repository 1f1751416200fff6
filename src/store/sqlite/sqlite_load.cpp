// SqliteStore::load: rebuilds the in-memory state from the tables at open (restart).
#include "core/limits.h"
#include "store/sqlite/sqlite_store.h"

namespace cairva::store::sqlite {
namespace {

Error corrupt(const std::string& what) {
  return make_error(ErrorCode::store_unavailable, "sqlite: unreadable row: " + what);
}

}  // namespace

Status SqliteStore::load() {
  Db& db = reader_;
  const UnixMicros now = clock_->now();
  const UnixMicros window_start = now - core::rate_window_us;  // entries after it count

  auto ag = db.prepare(
      "SELECT g.id, g.supplier, g.buyer, g.provider, g.starts_at, g.ends_at, g.requests_per_minute,"
      " g.tokens_per_minute, g.max_concurrency, g.input_tokens, g.output_tokens, g.state,"
      " g.created_at, a.id, a.state, a.used_input, a.used_output"
      " FROM agreements g JOIN allocations a ON a.agreement_id = g.id");
  if (!ag.ok()) return ag.error();
  for (;;) {
    auto row = ag->step();
    if (!row.ok()) return row.error();
    if (!*row) break;
    AgreementRow g;
    g.id = ag->col_text(0);
    g.supplier = ag->col_text(1);
    g.buyer = ag->col_text(2);
    g.provider = ag->col_text(3);
    g.terms.window = {ag->col_i64(4), ag->col_i64(5)};
    g.terms.limits = {ag->col_i64(6), ag->col_i64(7), ag->col_i64(8)};
    g.terms.allowance = {ag->col_i64(9), ag->col_i64(10)};
    const auto gstate = core::parse_agreement_state(ag->col_text(11));
    g.created_at = ag->col_i64(12);
    const std::string alloc_id = ag->col_text(13);
    const auto astate = core::parse_allocation_state(ag->col_text(14));
    if (!gstate || !astate) return corrupt("state of " + alloc_id);
    auto models =
        db.prepare("SELECT model FROM agreement_models WHERE agreement_id = ? ORDER BY position");
    if (!models.ok()) return models.error();
    models->text(g.id);
    for (;;) {
      auto m = models->step();
      if (!m.ok()) return m.error();
      if (!*m) break;
      g.models.push_back(models->col_text(0));
    }
    auto tiers = db.prepare(
        "SELECT tier FROM agreement_service_tiers WHERE agreement_id = ? ORDER BY position");
    if (!tiers.ok()) return tiers.error();
    tiers->text(g.id);
    for (;;) {
      auto t = tiers->step();
      if (!t.ok()) return t.error();
      if (!*t) break;
      g.service_tiers.push_back(tiers->col_text(0));
    }
    auto a = std::make_shared<Allocation>(alloc_id, g);
    a->ledger.restore_states(*gstate, *astate);
    a->ledger.restore_booked({ag->col_i64(15), ag->col_i64(16)});
    allocation_of_agreement_[g.id] = alloc_id;
    allocations_[alloc_id] = std::move(a);
  }

  // Starts in the trailing window (any state), and open requests with their holds.
  auto rq = db.prepare(
      "SELECT allocation_id, id, state, started_at, hold_input, hold_output, reported_input,"
      " reported_output, reported_provider_request_id, provider_request_id FROM requests"
      " WHERE started_at > ? OR state IN ('in_flight','usage_pending') ORDER BY started_at");
  if (!rq.ok()) return rq.error();
  rq->i64(window_start);
  for (;;) {
    auto row = rq->step();
    if (!row.ok()) return row.error();
    if (!*row) break;
    const auto it = allocations_.find(rq->col_text(0));
    if (it == allocations_.end()) return corrupt("request " + rq->col_text(1));
    const auto state = core::parse_request_state(rq->col_text(2));
    if (!state) return corrupt("state of request " + rq->col_text(1));
    const UnixMicros started = rq->col_i64(3);
    if (started > window_start) it->second->ledger.restore_start(started);
    core::OpenRequest open{
        *state, {rq->col_i64(4), rq->col_i64(5)}, started, std::nullopt, rq->col_text(9)};
    if (!rq->col_null(6))
      open.reported = core::ReportedUsage{{rq->col_i64(6), rq->col_i64(7)}, rq->col_text(8)};
    it->second->ledger.restore_open_request(rq->col_text(1), open);
  }

  // Booked provider ids (the booking key), and bookings in the trailing window.
  // Adjustments are neither a booking key nor in a trailing window (SPEC-CONSOLE §4b); the
  // used totals above include them.
  auto ev = db.prepare(
      "SELECT allocation_id, provider_request_id, input_tokens, output_tokens, booked_at"
      " FROM usage_events WHERE source != 'adjustment' ORDER BY seq");
  if (!ev.ok()) return ev.error();
  for (;;) {
    auto row = ev->step();
    if (!row.ok()) return row.error();
    if (!*row) break;
    const auto it = allocations_.find(ev->col_text(0));
    if (it == allocations_.end()) return corrupt("event of " + ev->col_text(0));
    const core::Tokens t{ev->col_i64(2), ev->col_i64(3)};
    it->second->ledger.restore_booked_provider_id(ev->col_text(1), t);
    if (ev->col_i64(4) > window_start)
      it->second->ledger.restore_booking(ev->col_i64(4), t.total());
  }

  // The latest start and booking of each allocation (Allocation::last_start): two index
  // probes each.
  for (auto& [id, a] : allocations_) {
    for (auto [sql, out] :
         {std::pair{"SELECT MAX(started_at) FROM requests WHERE allocation_id = ?", &a->last_start},
          std::pair{"SELECT MAX(booked_at) FROM usage_events WHERE allocation_id = ?",
                    &a->last_booking}}) {
      auto m = db.prepare(sql);
      if (!m.ok()) return m.error();
      m->text(id);
      auto row = m->step();
      if (!row.ok()) return row.error();
      if (*row && !m->col_null(0)) *out = m->col_i64(0);
    }
  }

  auto keys = db.prepare("SELECT id, allocation_id, secret_hash, revoked FROM api_keys");
  if (!keys.ok()) return keys.error();
  for (;;) {
    auto row = keys->step();
    if (!row.ok()) return row.error();
    if (!*row) break;
    auto k = std::make_shared<Key>(
        Key{keys->col_text(0), keys->col_text(2), keys->col_text(1), keys->col_i64(3) != 0});
    keys_by_hash_[k->hash] = k;
    keys_by_id_[k->id] = k;
  }
  return {};
}

}  // namespace cairva::store::sqlite
