// SqliteStore's calls for operating at volume (SPEC-CONSOLE §2, §4, §4b): usage series,
// bulk reconciliation's lookups and conflicts, adjustments.
#include <unordered_map>
#include <unordered_set>

#include "base/ids.h"
#include "store/sqlite/row_sql.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/writes.h"
#include "store/usage_series.h"

namespace cairva::store::sqlite {
namespace {

Error unavailable(const std::string& why) { return make_error(ErrorCode::store_unavailable, why); }

// Every probe of a series in one read transaction: one snapshot, even while the applier
// commits.
Result<UsageReads> read_series(Db& db, const UsageQuery& q) {
  UsageReads reads = usage_reads_for(q);
  const std::vector<UnixMicros> bounds = usage_boundaries(q);
  for (size_t i = 0; i < bounds.size(); ++i) {
    auto e = db.cached(
        "SELECT cum_input, cum_output FROM usage_events WHERE allocation_id = ? AND booked_at < ?"
        " ORDER BY booked_at DESC, seq DESC LIMIT 1");
    if (!e.ok()) return e.error();
    e->text(q.allocation_id).i64(bounds[i]);
    auto row = e->step();
    if (!row.ok()) return row.error();
    if (*row) reads.booked_before[i] = {e->col_i64(0), e->col_i64(1)};
  }
  for (size_t i = 0; i < bounds.size(); ++i) {
    auto r = db.cached(
        "SELECT start_ordinal FROM requests WHERE allocation_id = ? AND started_at < ?"
        " ORDER BY started_at DESC, start_ordinal DESC LIMIT 1");
    if (!r.ok()) return r.error();
    r->text(q.allocation_id).i64(bounds[i]);
    auto row = r->step();
    if (!row.ok()) return row.error();
    if (*row) reads.started_before[i] = r->col_i64(0);
  }
  auto u = db.prepare(
      "SELECT (started_at - ?2) / ?4, state = 'failed', COUNT(*) FROM requests INDEXED BY "
      "requests_unsettled"
      " WHERE allocation_id = ?1 AND started_at >= ?2 AND started_at < ?3"
      " AND (state = 'failed' OR state = 'usage_pending') GROUP BY 1, 2");
  if (!u.ok()) return u.error();
  u->text(q.allocation_id).i64(q.from).i64(q.to).i64(q.bucket_us);
  for (;;) {
    auto row = u->step();
    if (!row.ok()) return row.error();
    if (!*row) break;
    const auto bucket = static_cast<size_t>(u->col_i64(0));
    if (bucket >= reads.failed.size()) continue;
    (u->col_i64(1) != 0 ? reads.failed : reads.pending)[bucket] = u->col_i64(2);
  }
  return reads;
}

}  // namespace

void SqliteStore::usage_series(UsageQuery q, Callback<UsageSeries> done) {
  if (Status s = check_usage_query(q); !s.ok()) {
    done(s.error());
    return;
  }
  if (!find(q.allocation_id)) {
    done(make_error(ErrorCode::not_found, "allocation not found: " + q.allocation_id));
    return;
  }
  // The callback is the caller's; a full queue answers at once, on this thread.
  auto shared = std::make_shared<Callback<UsageSeries>>(std::move(done));
  const bool queued =
      read_worker_->post([this, q = std::move(q), shared] { (*shared)(read_usage_series(q)); });
  if (!queued) (*shared)(unavailable("store unavailable: too many reads waiting"));
}

Result<UsageSeries> SqliteStore::read_usage_series(const UsageQuery& q) {
  return read<UsageSeries>([&](Db& db) -> Result<UsageSeries> {
    if (Status s = db.exec("BEGIN"); !s.ok()) return s.error();
    auto reads = read_series(db, q);
    (void)db.exec("COMMIT");
    if (!reads.ok()) return reads.error();
    return assemble_usage(q, *reads);
  });
}

Result<std::vector<BookedMatch>> SqliteStore::find_bookings(
    const std::optional<std::string>& allocation_id, const std::string& provider_request_id) {
  std::vector<std::shared_ptr<Allocation>> scope;
  if (allocation_id) {
    if (auto a = find(*allocation_id)) scope.push_back(std::move(a));
  } else {
    std::shared_lock lock(map_mu_);
    for (const auto& [id, a] : allocations_) scope.push_back(a);
  }
  std::vector<BookedMatch> out;
  for (const auto& a : scope) {
    std::lock_guard lock(a->mu);
    if (auto counts = a->ledger.booked_counts(provider_request_id))
      out.push_back({a->id, "", *counts});
  }
  return out;
}

Result<std::vector<RequestRow>> SqliteStore::find_pending(
    const std::optional<std::string>& allocation_id, const std::string& provider_request_id) {
  return read<std::vector<RequestRow>>([&](Db& db) -> Result<std::vector<RequestRow>> {
    auto s = db.prepare(std::string(request_columns) +
                        " INDEXED BY requests_pending_provider WHERE provider_request_id = ?1"
                        " AND (?2 IS NULL OR allocation_id = ?2) AND state = 'usage_pending'"
                        " ORDER BY started_at, start_ordinal");
    if (!s.ok()) return s.error();
    s->text(provider_request_id).opt_text(allocation_id);
    std::vector<RequestRow> out;
    for (;;) {
      auto row = s->step();
      if (!row.ok()) return row.error();
      if (!*row) return out;
      if (out.size() == list_page_rows_max)
        return out;  // a provider id reused that often is a finding anyway
      out.push_back(parse_request(*s));
    }
  });
}

Result<int64_t> SqliteStore::record_conflicts(std::vector<ConflictRow> conflicts) {
  // Conflicts found by provider request id name no request yet. No index finds an event by
  // that id (migration 3 dropped it from the booking path), so each allocation's events
  // are read once for all of its conflicts.
  std::unordered_map<std::string, std::unordered_set<std::string>>
      wanted;  // allocation -> provider ids
  for (const auto& c : conflicts) {
    if (c.request_id.empty()) wanted[c.allocation_id].insert(c.provider_request_id);
  }
  std::unordered_map<std::string, std::string> request_of;  // allocation \n provider id -> request
  for (const auto& entry : wanted) {
    // Named, not a structured binding: the lambda below captures them (clang 14 cannot).
    const std::string& allocation = entry.first;
    const std::unordered_set<std::string>& ids = entry.second;
    auto found = read<int>([&](Db& db) -> Result<int> {
      auto s = db.prepare(
          "SELECT provider_request_id, request_id FROM usage_events WHERE allocation_id = ?"
          " AND source != 'adjustment'");
      if (!s.ok()) return s.error();
      s->text(allocation);
      for (;;) {
        auto row = s->step();
        if (!row.ok()) return row.error();
        if (!*row) return 0;
        std::string p = s->col_text(0);
        if (ids.contains(p)) request_of[allocation + '\n' + p] = s->col_text(1);
      }
    });
    if (!found.ok()) return found.error();
  }
  const UnixMicros now = clock_->now();
  for (auto& c : conflicts) {
    if (c.request_id.empty())
      c.request_id = request_of[c.allocation_id + '\n' + c.provider_request_id];
    c.id = new_id("cfl");
    c.recorded_at = now;
  }
  auto recorded = std::make_shared<int64_t>(0);
  if (Status s = write_and_wait(writes::insert_conflicts(std::move(conflicts), recorded), false);
      !s.ok()) {
    return s.error();
  }
  return *recorded;
}

Result<UsageEventRow> SqliteStore::adjust(const Adjustment& adj) {
  if (adj.evidence.empty())
    return make_error(ErrorCode::invalid_request, "evidence: must be a non-empty string");
  if (adj.delta == core::Tokens{}) {
    return make_error(ErrorCode::invalid_request,
                      "input_tokens, output_tokens: an adjustment changes at least one");
  }
  auto corrected = read<UsageEventRow>([&](Db& db) -> Result<UsageEventRow> {
    auto s = db.prepare(std::string(event_columns) + " WHERE id = ?");
    if (!s.ok()) return s.error();
    s->text(adj.event_id);
    auto row = s->step();
    if (!row.ok()) return row.error();
    if (!*row) return make_error(ErrorCode::not_found, "event not found: " + adj.event_id);
    return parse_event(*s);
  });
  if (!corrected.ok()) return corrected.error();
  if (corrected->source == core::EventSource::adjustment) {
    return make_error(ErrorCode::invalid_request,
                      "event " + adj.event_id +
                          " is an adjustment: adjust the event it corrects (" +
                          corrected->corrects + ")");
  }
  const auto alloc = find(corrected->allocation_id);
  if (!alloc) return make_error(ErrorCode::not_found, "event not found: " + adj.event_id);
  UsageEventRow event;
  {
    std::lock_guard lock(alloc->mu);
    const auto before = alloc->ledger.state();
    const auto before_agreement = alloc->ledger.agreement_state();
    const core::Tokens booked = alloc->ledger.booked();
    if (!alloc->ledger.adjust(adj.delta).allowed) {
      return make_error(
          ErrorCode::conflict,
          "the adjustment would make the allocation's booked tokens negative (booked " +
              std::to_string(booked.input) + "/" + std::to_string(booked.output) + ", adjustment " +
              std::to_string(adj.delta.input) + "/" + std::to_string(adj.delta.output) + ")");
    }
    event = UsageEventRow{new_time_ordered_id("evt"),
                          alloc->id,
                          corrected->request_id,
                          corrected->provider_request_id,
                          adj.delta,
                          core::EventSource::adjustment,
                          core::Finality::confirmed,
                          adj.evidence,
                          booking_time_locked(*alloc),
                          corrected->id};
    // Queued under the lock, so that it is applied in the order of the bookings around it.
    writer_->enqueue({WriteOp::Kind::durable, {}, writes::insert_adjustment(event), {}});
    persist_states_if_changed(*alloc, before, before_agreement);
  }
  writer_->flush();
  if (writer_->failing())
    return make_error(ErrorCode::store_unavailable, "store unavailable: writes are failing");
  return event;
}

}  // namespace cairva::store::sqlite
