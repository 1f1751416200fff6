// SqliteStore::audit and SqliteStore::audit_file: the ledger's invariants (issue 7, SPEC §8
// `cairva audit`) checked by SQL over the file, inside one read transaction so that every
// check sees the same snapshot even while a gateway keeps writing.
//
// Held totals are not stored by the embedded store (memory derives them from the open
// requests' holds at load), so "held = holds of in_flight + usage_pending requests" holds by
// construction here; what can drift is what is stored twice: used vs. events, states vs.
// totals, requests vs. events and conflicts.
#include <sys/stat.h>

#include <string>

#include "core/limits.h"
#include "store/sqlite/limits.h"
#include "store/sqlite/oplog.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/sqlite_store.h"

namespace cairva::store::sqlite {
namespace {

struct Check {
  const char* sql;       // each row is one violation: (subject, detail)
  const char* sentence;  // prefix of the finding
};

// Parameters: ?1 = now, ?2 = stale age (µs), ?3 = the rate window (µs). Unused ones stay NULL.
constexpr Check checks[] = {
    {"SELECT a.id, 'used ' || a.used_input || '/' || a.used_output || ' but events sum to ' ||"
     " COALESCE(SUM(e.input_tokens),0) || '/' || COALESCE(SUM(e.output_tokens),0)"
     " FROM allocations a LEFT JOIN usage_events e ON e.allocation_id = a.id GROUP BY a.id"
     " HAVING a.used_input != COALESCE(SUM(e.input_tokens),0)"
     " OR a.used_output != COALESCE(SUM(e.output_tokens),0)",
     "conservation: allocation"},
    {"SELECT a.id, 'is depleted but used is below the allowance' FROM allocations a"
     " JOIN agreements g ON g.id = a.agreement_id WHERE a.state = 'depleted'"
     " AND a.used_input < g.input_tokens AND a.used_output < g.output_tokens",
     "state: allocation"},
    {"SELECT a.id, 'reached its allowance but is ' || a.state FROM allocations a"
     " JOIN agreements g ON g.id = a.agreement_id"
     " WHERE a.state IN ('ready','active','suspended')"
     " AND (a.used_input >= g.input_tokens OR a.used_output >= g.output_tokens)",
     "state: allocation"},
    {"SELECT g.id, 'is completed but its allocation is ' || a.state FROM agreements g"
     " JOIN allocations a ON a.agreement_id = g.id WHERE g.state = 'completed'"
     " AND a.state != 'depleted'",
     "state: agreement"},
    {"SELECT allocation_id || '/' || provider_request_id, COUNT(*) || ' events' FROM usage_events"
     " WHERE source != 'adjustment' GROUP BY allocation_id, provider_request_id HAVING COUNT(*) > "
     "1",
     "double booking: provider request id"},
    {"SELECT request_id, COUNT(*) || ' events' FROM usage_events WHERE source != 'adjustment'"
     " GROUP BY request_id HAVING COUNT(*) > 1",
     "double booking: request"},
    // No index on (allocation_id, provider_request_id) since schema 3 nor on request_id
    // since 6: NOT IN over a list SQLite builds once, not a search of the events per request.
    {"SELECT r.id, 'is booked without an event of its own or a duplicated one' FROM requests r"
     " WHERE r.state = 'booked' AND r.id NOT IN (SELECT request_id FROM usage_events)"
     " AND (r.allocation_id, r.provider_request_id) NOT IN"
     " (SELECT allocation_id, provider_request_id FROM usage_events)",
     "booking: request"},
    {"SELECT e.id, 'belongs to request ' || e.request_id || ' which is ' || COALESCE(r.state, "
     "'missing')"
     " FROM usage_events e LEFT JOIN requests r ON r.id = e.request_id"
     " WHERE r.id IS NULL OR r.state != 'booked' OR r.allocation_id != e.allocation_id",
     "booking: event"},
    // The writer does not enforce foreign keys (schema.cpp): every one is checked here;
    // requests (WITHOUT ROWID: no rowid to name) by their id.
    {"SELECT \"table\" || ' row ' || rowid, 'refers to a missing row of ' || parent"
     " FROM pragma_foreign_key_check WHERE \"table\" != 'requests'",
     "reference:"},
    {"SELECT r.id, 'belongs to allocation ' || r.allocation_id || ' which is missing' FROM "
     "requests r"
     " WHERE NOT EXISTS (SELECT 1 FROM allocations a WHERE a.id = r.allocation_id)",
     "reference: request"},
    {"SELECT e.id, 'has negative counts' FROM usage_events e"
     " WHERE e.source != 'adjustment' AND (e.input_tokens < 0 OR e.output_tokens < 0)"
     " UNION ALL SELECT r.id, 'has a negative hold' FROM requests r"
     " WHERE r.hold_input < 0 OR r.hold_output < 0",
     "counts:"},
    // The events conflicts name, found in one pass over usage_events (see above; left to
    // itself the planner would search the allocation's events once per conflict).
    {"WITH e AS MATERIALIZED (SELECT id, allocation_id, provider_request_id, input_tokens, "
     "output_tokens"
     " FROM usage_events NOT INDEXED WHERE source != 'adjustment'"
     " AND (allocation_id, provider_request_id) IN (SELECT allocation_id, provider_request_id FROM "
     "conflicts))"
     " SELECT c.id, 'repeats ' || c.provider_request_id || ' but '"
     " || CASE WHEN e.id IS NULL THEN 'no event was booked under it'"
     " ELSE 'records booked ' || c.booked_input || '/' || c.booked_output || ' where the event has "
     "'"
     " || e.input_tokens || '/' || e.output_tokens END"
     " FROM conflicts c LEFT JOIN e"
     " ON e.allocation_id = c.allocation_id AND e.provider_request_id = c.provider_request_id"
     " WHERE e.id IS NULL OR e.input_tokens != c.booked_input OR e.output_tokens != "
     "c.booked_output",
     "conflict:"},
    // Adjustments (SPEC-CONSOLE §4b) correct a booked event of their own allocation.
    {"SELECT a.id, 'corrects ' || a.corrects || ' which is '"
     " || CASE WHEN e.id IS NULL THEN 'missing' WHEN e.source = 'adjustment' THEN 'an adjustment'"
     " ELSE 'an event of ' || e.allocation_id END"
     " FROM usage_events a LEFT JOIN usage_events e ON e.id = a.corrects WHERE a.source = "
     "'adjustment'"
     " AND (e.id IS NULL OR e.source = 'adjustment' OR e.allocation_id != a.allocation_id)",
     "adjustment:"},
    // The running totals usage series read (migration 9) end at the sum of the events.
    {"SELECT s.allocation_id, 'events run to ' || e.cum_input || '/' || e.cum_output || ' but sum "
     "to '"
     " || s.i || '/' || s.o FROM (SELECT allocation_id, SUM(input_tokens) AS i, SUM(output_tokens) "
     "AS o"
     " FROM usage_events GROUP BY allocation_id) s JOIN usage_events e ON e.seq = (SELECT seq FROM "
     "usage_events"
     " WHERE allocation_id = s.allocation_id ORDER BY booked_at DESC, seq DESC LIMIT 1)"
     " WHERE e.cum_input != s.i OR e.cum_output != s.o",
     "series: allocation"},
    {"SELECT allocation_id, COUNT(*) || ' requests, ' || COUNT(DISTINCT start_ordinal) || ' start "
     "numbers'"
     " FROM requests GROUP BY allocation_id HAVING COUNT(DISTINCT start_ordinal) != COUNT(*)",
     "series: requests of allocation"},
    {"SELECT id, 'has state ' || state FROM requests"
     " WHERE state NOT IN ('in_flight','booked','usage_pending','failed')"
     " OR (state IN ('booked','failed') AND finished_at IS NULL)"
     " OR (state = 'in_flight' AND finished_at IS NOT NULL)",
     "state: request"},
    {"SELECT r.id, 'started at ' || r.started_at || ' outside its window [' || g.starts_at || ', '"
     " || g.ends_at || ')' FROM requests r JOIN allocations a ON a.id = r.allocation_id"
     " JOIN agreements g ON g.id = a.agreement_id"
     " WHERE r.started_at < g.starts_at OR r.started_at >= g.ends_at",
     "window: request"},
    {"SELECT id, 'in flight since ' || started_at FROM requests WHERE state = 'in_flight'"
     " AND started_at <= ?1 - ?2",
     "stale: request"},
    {"SELECT a.id, COUNT(*) || ' requests in flight (limit ' || g.max_concurrency || ')'"
     " FROM requests r JOIN allocations a ON a.id = r.allocation_id"
     " JOIN agreements g ON g.id = a.agreement_id WHERE r.state = 'in_flight'"
     " GROUP BY a.id HAVING COUNT(*) > g.max_concurrency",
     "concurrency: allocation"},
    // Each start with the starts of the 60 s up to it (ties included): one ordered pass per
    // allocation (a window), not a join of every start with every other of its minute.
    {"SELECT allocation_id, n || ' starts in the 60 s up to ' || started_at || ' (limit ' || rpm "
     "|| ')'"
     " FROM (SELECT r.allocation_id, r.started_at, g.requests_per_minute AS rpm,"
     " COUNT(*) OVER (PARTITION BY r.allocation_id ORDER BY r.started_at"
     " RANGE BETWEEN ?3 - 1 PRECEDING AND CURRENT ROW) AS n"
     " FROM requests r JOIN allocations a ON a.id = r.allocation_id"
     " JOIN agreements g ON g.id = a.agreement_id)"
     " WHERE n > rpm",
     "rate: allocation"},
};

Result<int64_t> count(Db& db, const char* sql) {
  auto s = db.prepare(sql);
  if (!s.ok()) return s.error();
  auto row = s->step();
  if (!row.ok()) return row.error();
  return s->col_i64(0);
}

Result<AuditReport> run_checks(Db& db, UnixMicros now, int64_t in_flight_timeout_s) {
  const int64_t stale_us = (in_flight_timeout_s + audit_sweep_slack_s) * micros_per_second;
  AuditReport report;
  for (auto [sql, out] : {std::pair{"SELECT COUNT(*) FROM allocations", &report.allocations},
                          std::pair{"SELECT COUNT(*) FROM requests", &report.requests},
                          std::pair{"SELECT COUNT(*) FROM usage_events", &report.events}}) {
    auto n = count(db, sql);
    if (!n.ok()) return n.error();
    *out = *n;
  }
  for (const Check& c : checks) {
    auto s = db.prepare(c.sql);
    if (!s.ok()) return s.error();
    const std::string sql(c.sql);
    if (sql.find("?3") != std::string::npos) {
      s->null().null().i64(core::rate_window_us);
    } else if (sql.find("?1") != std::string::npos) {
      s->i64(now).i64(stale_us);
    }
    for (size_t found = 0;; ++found) {
      auto row = s->step();
      if (!row.ok()) return row.error();
      if (!*row) break;
      if (found == audit_findings_per_check_max) {
        report.violations.push_back(std::string(c.sentence) + " ... more findings not listed");
        break;
      }
      report.violations.push_back(std::string(c.sentence) + " " + s->col_text(0) + " " +
                                  s->col_text(1));
    }
  }
  return report;
}

// One snapshot for every check: BEGIN takes the read lock at the first SELECT and keeps it.
Result<AuditReport> audit_in_snapshot(Db& db, UnixMicros now, int64_t in_flight_timeout_s) {
  if (Status s = db.exec("BEGIN"); !s.ok()) return s.error();
  auto report = run_checks(db, now, in_flight_timeout_s);
  (void)db.exec("COMMIT");
  return report;
}

}  // namespace

Result<AuditReport> SqliteStore::audit() {
  const UnixMicros now = clock_->now();
  return read<AuditReport>(
      [&](Db& db) { return audit_in_snapshot(db, now, options_.in_flight_timeout_s); });
}

Result<AuditReport> SqliteStore::audit_file(const std::string& path, const StoreOptions& options,
                                            const std::shared_ptr<const Clock>& clock) {
  // SQLite would create a missing file on a read-write open; read-only it fails, but with a
  // vaguer message than this one.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return make_error(ErrorCode::store_unavailable, "sqlite: no database file at " + path);
  }
  // Writes an earlier build's log holds past the tables are not counted: refused as at open.
  if (Status s = oplog::retire_v1_log(path, /*may_delete=*/false); !s.ok()) return s.error();
  auto db = Db::open(path, /*read_only=*/true);
  if (!db.ok()) return db.error();
  auto version = count(*db, "PRAGMA user_version");
  if (!version.ok()) return version.error();
  if (*version > schema_version_latest()) {
    return make_error(
        ErrorCode::store_unavailable,
        "sqlite: " + path + " has schema version " + std::to_string(*version) +
            ", newer than this cairva audits (" + std::to_string(schema_version_latest()) +
            "): run `cairva audit` of the version that migrated it (nothing was changed)");
  }
  if (*version != schema_version_latest()) {
    return make_error(ErrorCode::store_unavailable,
                      "sqlite: " + path + " has schema version " + std::to_string(*version) +
                          ", this cairva audits version " +
                          std::to_string(schema_version_latest()) +
                          " (run `cairva serve` on it once to migrate)");
  }
  auto report = audit_in_snapshot(*db, clock->now(), options.in_flight_timeout_s);
  if (!report.ok()) return report;
  // A stopped gateway's log may hold writes past the tables (a killed one's last
  // milliseconds). A running gateway's always does, for a moment: not worth a note.
  if (!FileLock::in_use(path)) {
    auto unapplied = oplog::count_unapplied(*db, path);
    if (!unapplied.ok()) return unapplied.error();
    report->unapplied_writes = *unapplied;
  }
  return report;
}

}  // namespace cairva::store::sqlite
