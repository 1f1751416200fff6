// SqliteStore::audit: the ledger's invariants (issue 7) checked by SQL over the file.
#include <string>

#include "core/limits.h"
#include "store/sqlite/limits.h"
#include "store/sqlite/sqlite_store.h"

namespace cairva::store::sqlite {
namespace {

struct Check {
  const char* sql;       // each row is one violation; column 0 names it, the rest describe it
  const char* sentence;  // prefix of the finding
};

// Each query returns one row per violation: (subject, detail).
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
    {"SELECT allocation_id || '/' || provider_request_id, COUNT(*) || ' events' FROM usage_events"
     " GROUP BY allocation_id, provider_request_id HAVING COUNT(*) > 1",
     "double booking: provider request id"},
    {"SELECT request_id, COUNT(*) || ' events' FROM usage_events GROUP BY request_id HAVING COUNT(*) > 1",
     "double booking: request"},
    {"SELECT r.id, 'is booked without an event of its own or a duplicated one' FROM requests r"
     " WHERE r.state = 'booked' AND NOT EXISTS (SELECT 1 FROM usage_events e WHERE e.request_id = r.id)"
     " AND NOT EXISTS (SELECT 1 FROM usage_events e WHERE e.id = r.booked_event_id"
     " AND e.allocation_id = r.allocation_id AND e.provider_request_id = r.provider_request_id)",
     "booking: request"},
    {"SELECT e.id, 'belongs to request ' || e.request_id || ' which is ' || COALESCE(r.state, 'missing')"
     " FROM usage_events e LEFT JOIN requests r ON r.id = e.request_id"
     " WHERE r.id IS NULL OR r.state != 'booked' OR r.allocation_id != e.allocation_id",
     "booking: event"},
    {"SELECT id, 'has state ' || state FROM requests"
     " WHERE state NOT IN ('in_flight','booked','usage_pending','failed')"
     " OR (state IN ('booked','failed') AND finished_at IS NULL)"
     " OR (state = 'in_flight' AND finished_at IS NOT NULL)",
     "state: request"},
    {"SELECT id, 'in flight since ' || started_at FROM requests WHERE state = 'in_flight'"
     " AND started_at <= ?1 - ?2",
     "stale: request"},
    {"SELECT r.allocation_id, COUNT(*) || ' starts in the 60 s up to ' || r.started_at ||"
     " ' (limit ' || g.requests_per_minute || ')' FROM requests r"
     " JOIN allocations a ON a.id = r.allocation_id JOIN agreements g ON g.id = a.agreement_id"
     " JOIN requests o ON o.allocation_id = r.allocation_id"
     " AND o.started_at > r.started_at - ?3 AND o.started_at <= r.started_at"
     " GROUP BY r.id HAVING COUNT(*) > g.requests_per_minute",
     "rate: allocation"},
};

Result<int64_t> count(Db& db, const char* sql) {
  auto s = db.prepare(sql);
  if (!s.ok()) return s.error();
  auto row = s->step();
  if (!row.ok()) return row.error();
  return s->col_i64(0);
}

}  // namespace

Result<AuditReport> SqliteStore::audit() {
  const UnixMicros now = clock_->now();
  const int64_t stale_us = (options_.in_flight_timeout_s + audit_sweep_slack_s) * micros_per_second;
  return read<AuditReport>([&](Db& db) -> Result<AuditReport> {
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
      // Unused parameters stay NULL; the checks that use them name them ?1..?3.
      if (std::string(c.sql).find("?1") != std::string::npos) s->i64(now).i64(stale_us);
      if (std::string(c.sql).find("?3") != std::string::npos) s->null().null().i64(core::rate_window_us);
      for (;;) {
        auto row = s->step();
        if (!row.ok()) return row.error();
        if (!*row) break;
        report.violations.push_back(std::string(c.sentence) + " " + s->col_text(0) + " " + s->col_text(1));
      }
    }
    return report;
  });
}

}  // namespace cairva::store::sqlite
