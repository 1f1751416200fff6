// PostgresStore::audit(): the ledger's invariants (SPEC §8 `cairva audit`) checked with
// queries that each return the violating rows, at most audit_findings_max per check.
#include <string>
#include <vector>

#include "core/limits.h"
#include "store/postgres/postgres_store.h"
#include "store/postgres/statements.h"

namespace cairva::store::pg {
namespace {

// Violations reported per check: enough to act on, bounded for a corrupt database.
constexpr int audit_findings_max = 100;

struct Check {
  const char* what;
  const char* sql;  // each row: one text column describing a violation
};

// Every query returns one text column per violating row.
constexpr Check checks[] = {
    {"booked totals equal the sum of usage events and adjustments (conservation)",
     "SELECT a.id || ': booked ' || a.booked_input || '/' || a.booked_output || ' but events sum "
     "to '"
     " || COALESCE(e.i, 0) || '/' || COALESCE(e.o, 0) FROM allocations a LEFT JOIN"
     " (SELECT allocation_id, sum(input_tokens) i, sum(output_tokens) o FROM"
     " (SELECT allocation_id, input_tokens, output_tokens FROM usage_events UNION ALL"
     " SELECT allocation_id, input_tokens, output_tokens FROM adjustments) x"
     " GROUP BY allocation_id) e ON e.allocation_id = a.id"
     " WHERE a.booked_input <> COALESCE(e.i, 0) OR a.booked_output <> COALESCE(e.o, 0)"},
    {"held totals equal the holds of open requests",
     "SELECT a.id || ': held ' || a.held_input || '/' || a.held_output || ' but open holds sum to '"
     " || COALESCE(r.i, 0) || '/' || COALESCE(r.o, 0) FROM allocations a LEFT JOIN"
     " (SELECT allocation_id, sum(hold_input) i, sum(hold_output) o FROM requests"
     " WHERE state IN ('in_flight', 'usage_pending') GROUP BY allocation_id) r"
     " ON r.allocation_id = a.id"
     " WHERE a.held_input <> COALESCE(r.i, 0) OR a.held_output <> COALESCE(r.o, 0)"},
    {"counts are never negative",
     "SELECT a.id || ': negative booked or held' FROM allocations a WHERE a.booked_input < 0"
     " OR a.booked_output < 0 OR a.held_input < 0 OR a.held_output < 0"
     " UNION ALL SELECT e.id || ': negative counts' FROM usage_events e"
     " WHERE e.input_tokens < 0 OR e.output_tokens < 0"
     " UNION ALL SELECT r.id || ': negative hold' FROM requests r"
     " WHERE r.hold_input < 0 OR r.hold_output < 0"},
    {"at most one event per (allocation, provider request id)",
     "SELECT allocation_id || ' ' || provider_request_id || ': ' || count(*) || ' events'"
     " FROM usage_events GROUP BY allocation_id, provider_request_id HAVING count(*) > 1"},
    {"at most one event per request, and only for a booked request of the same allocation",
     "SELECT e.id || ': request ' || e.request_id || ' is '"
     " || COALESCE(r.state || ' in ' || r.allocation_id, 'missing') FROM usage_events e"
     " LEFT JOIN requests r ON r.id = e.request_id"
     " WHERE r.id IS NULL OR r.state <> 'booked' OR r.allocation_id <> e.allocation_id"
     " UNION ALL SELECT request_id || ': ' || count(*) || ' events' FROM usage_events"
     " GROUP BY request_id HAVING count(*) > 1"},
    {"event sequence numbers (adjustments included) are 1..event_seq per allocation",
     "SELECT a.id || ': event_seq ' || a.event_seq || ' but ' || COALESCE(e.n, 0) || ' events (max "
     "'"
     " || COALESCE(e.m, 0) || ')' FROM allocations a LEFT JOIN (SELECT allocation_id, count(*) n,"
     " max(seq) m FROM (SELECT allocation_id, seq FROM usage_events UNION ALL"
     " SELECT allocation_id, seq FROM adjustments) x GROUP BY allocation_id) e ON e.allocation_id "
     "= a.id"
     " WHERE a.event_seq <> COALESCE(e.n, 0) OR a.event_seq <> COALESCE(e.m, 0)"},
    // The trailing windows are read from these running figures (schema.cpp, migration 2).
    {"start numbers are 1, 2, … per allocation in start order",
     "SELECT id || ': start number ' || start_ordinal || ', ' || n || ' in start order' FROM"
     " (SELECT id, start_ordinal, row_number() OVER (PARTITION BY allocation_id"
     " ORDER BY started_at, start_ordinal) n FROM requests) r WHERE start_ordinal <> n"},
    {"each event's running token total is its allocation's bookings up to it, in booking order",
     "SELECT id || ': running total ' || cum_tokens || ', bookings up to it ' || t FROM"
     " (SELECT id, cum_tokens, sum(input_tokens + output_tokens) OVER (PARTITION BY allocation_id"
     " ORDER BY booked_at, seq ROWS UNBOUNDED PRECEDING) t FROM usage_events) e WHERE cum_tokens "
     "<> t"},
    // Usage series read these (schema.cpp, migration 5).
    {"each event's running booked totals are its allocation's events and adjustments up to it",
     "SELECT id || ': running totals ' || ci || '/' || co || ', booked up to it ' || ti || '/' || "
     "tout FROM"
     " (SELECT id, cum_input ci, cum_output co, sum(input_tokens) OVER w ti, sum(output_tokens) "
     "OVER w tout"
     " FROM (SELECT id, allocation_id, booked_at, seq, input_tokens, output_tokens, cum_input, "
     "cum_output"
     " FROM usage_events UNION ALL SELECT id, allocation_id, booked_at, seq, input_tokens, "
     "output_tokens,"
     " cum_input, cum_output FROM adjustments) x"
     " WINDOW w AS (PARTITION BY allocation_id ORDER BY booked_at, seq ROWS UNBOUNDED PRECEDING)) e"
     " WHERE ci <> ti OR co <> tout"},
    {"an adjustment corrects an event of its own allocation and request",
     "SELECT a.id || ': corrects ' || a.corrects || ' of ' || e.allocation_id || '/' || "
     "e.request_id"
     " FROM adjustments a JOIN usage_events e ON e.id = a.corrects"
     " WHERE e.allocation_id <> a.allocation_id OR e.request_id <> a.request_id"},
    {"states are valid",
     "SELECT 'allocation ' || id || ': state ' || state FROM allocations WHERE state NOT IN"
     " ('ready', 'active', 'suspended', 'depleted', 'expired')"
     " UNION ALL SELECT 'agreement ' || id || ': state ' || state FROM agreements WHERE state NOT "
     "IN"
     " ('in_force', 'completed', 'expired', 'cancelled')"
     " UNION ALL SELECT 'request ' || id || ': state ' || state FROM requests WHERE state NOT IN"
     " ('in_flight', 'booked', 'usage_pending', 'failed')"},
    {"a depleted allocation has booked its allowance; a completed agreement is depleted",
     "SELECT a.id || ': depleted with booked ' || a.booked_input || '/' || a.booked_output"
     " FROM allocations a JOIN agreements g ON g.id = a.agreement_id WHERE a.state = 'depleted'"
     " AND a.booked_input < g.input_tokens AND a.booked_output < g.output_tokens"
     " UNION ALL SELECT g.id || ': completed but allocation is ' || a.state FROM agreements g"
     " JOIN allocations a ON a.agreement_id = g.id WHERE g.state = 'completed'"
     " AND a.state <> 'depleted'"},
    {"requests started inside their agreement's window",
     "SELECT r.id || ': started_at ' || r.started_at || ' outside [' || g.starts_at || ', '"
     " || g.ends_at || ')' FROM requests r JOIN allocations a ON a.id = r.allocation_id"
     " JOIN agreements g ON g.id = a.agreement_id"
     " WHERE r.started_at < g.starts_at OR r.started_at >= g.ends_at"},
    {"agreement windows are well-formed",
     "SELECT id || ': ends_at <= starts_at' FROM agreements WHERE ends_at <= starts_at"},
};

// Each start with the starts of the rate window up to it (ties included), in one ordered
// pass per allocation: no window of the allocation holds more than requests_per_minute.
const std::string rate_check_sql =
    "SELECT allocation_id || ': ' || n || ' starts in the " + std::to_string(core::rate_window_s) +
    " s up to ' || started_at || ' (limit ' || rpm || ')'"
    " FROM (SELECT r.allocation_id, r.started_at, g.requests_per_minute AS rpm,"
    " count(*) OVER (PARTITION BY r.allocation_id ORDER BY r.started_at"
    " RANGE BETWEEN " +
    std::to_string(core::rate_window_us - 1) +
    " PRECEDING AND CURRENT ROW) AS n"
    " FROM requests r JOIN allocations a ON a.id = r.allocation_id"
    " JOIN agreements g ON g.id = a.agreement_id) w WHERE n > rpm";
const Check rate_check{"no 60 s window holds more starts than requests_per_minute",
                       rate_check_sql.c_str()};

}  // namespace

Result<AuditReport> PostgresStore::audit() {
  return with_connection<AuditReport>([&](Connection& c) -> Result<AuditReport> {
    // One snapshot for every check: REPEATABLE READ, read only.
    Transaction tx(c);
    if (Status s = tx.begin("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); !s.ok()) {
      return s.error();
    }
    AuditReport report;
    auto totals = c.exec(
        "SELECT (SELECT count(*) FROM allocations), (SELECT count(*) FROM requests),"
        " (SELECT count(*) FROM usage_events)");
    if (!totals.ok()) return totals.error();
    report.allocations = get_i64(totals->get(), 0, 0);
    report.requests = get_i64(totals->get(), 0, 1);
    report.events = get_i64(totals->get(), 0, 2);
    std::vector<Check> all(std::begin(checks), std::end(checks));
    all.push_back(rate_check);
    for (const Check& check : all) {
      auto r = c.exec(std::string(check.sql) + " LIMIT " + std::to_string(audit_findings_max));
      if (!r.ok()) return r.error();
      for (int i = 0; i < rows(*r); ++i) {
        report.violations.push_back(std::string(check.what) + ": " + get_text(r->get(), i, 0));
      }
    }
    if (Status s = tx.commit(); !s.ok()) return s.error();
    return report;
  });
}

}  // namespace cairva::store::pg
