#include "store/postgres/statements.h"

#include <string>

namespace cairva::store::pg::sql {
namespace {

// Microseconds since the epoch from the database clock, read when evaluated.
#define CV_DB_NOW "(extract(epoch from clock_timestamp()) * 1000000)::bigint"

std::string now_param(int n) {
  return "COALESCE($" + std::to_string(n) + "::bigint, " CV_DB_NOW ")";
}

constexpr const char* lock_columns =
    "al.state, al.booked_input, al.booked_output, al.held_input, al.held_output, al.event_seq, "
    "ag.id, ag.state, ag.starts_at, ag.ends_at, ag.requests_per_minute, ag.tokens_per_minute, "
    "ag.max_concurrency, ag.input_tokens, ag.output_tokens";

// An allocation's last request start and last booking, in the windows' order (schema.cpp,
// migration 2): `what` of that row, or 0 when there is none.
struct Ordered {
  const char* table;
  const char* alias;
  const char* order;
};
constexpr Ordered starts{"requests", "r", "r.started_at DESC, r.start_ordinal DESC"};
constexpr Ordered bookings{"usage_events", "e", "e.booked_at DESC, e.seq DESC"};

std::string last_of(const Ordered& o, const std::string& what, const std::string& alloc,
                    const std::string& at_or_before) {
  const std::string a = o.alias;
  return "COALESCE((SELECT " + a + "." + what + " FROM " + o.table + " " + a + " WHERE " + a +
         ".allocation_id = " + alloc + at_or_before + " ORDER BY " + o.order + " LIMIT 1), 0)";
}
std::string last_start(const std::string& what, const std::string& alloc,
                       const std::string& at_or_before = "") {
  return last_of(starts, what, alloc, at_or_before);
}
std::string last_booking(const std::string& what, const std::string& alloc,
                         const std::string& at_or_before = "") {
  return last_of(bookings, what, alloc, at_or_before);
}

// The running figures of allocation `alloc` at c.now (schema.cpp, migration 2), as a lateral
// row `w`: the last start's start_ordinal and the last one's at or before the window's start
// (w.ord_last, w.ord_cut), and likewise the bookings' cum_tokens (w.cum_last, w.cum_cut).
// OFFSET 0 keeps the planner from pulling the row up, which would copy a probe into every
// expression that reads its figure.
std::string running_figures(const std::string& alloc) {
  return " CROSS JOIN LATERAL (SELECT " + last_start("start_ordinal", alloc) + " AS ord_last, " +
         last_start("start_ordinal", alloc, " AND r.started_at <= c.now - $4::bigint") +
         " AS ord_cut, " + last_booking("cum_tokens", alloc) + " AS cum_last, " +
         last_booking("cum_tokens", alloc, " AND e.booked_at <= c.now - $4::bigint") +
         " AS cum_cut OFFSET 0) w";
}

// The window columns for allocation `alloc` (an SQL expression) at c.now, with
// running_figures(alloc) joined and `ag` its agreement. The two counts are differences of
// running figures: two index probes each, whatever the window holds. Then the two times that
// say when each window has room again (core::AllocationSnapshot), each read only when it can
// matter, so that a window with room costs nothing more:
// - the oldest start in the window (one probe), when `admissions` more starts would fill it
//   (the window never holds more than requests_per_minute starts: each admission, under the
//   row lock, counted fewer in the window of a `now` no earlier than every start);
// - when the window's tokens reach tokens_per_minute, the first booking whose running total
//   passes cum_last - tokens_per_minute, so that the bookings after it hold fewer: a scan
//   from the window's start reading one row per booking that must leave before it.
std::string counts(const std::string& alloc, const std::string& admissions) {
  return "w.ord_last - w.ord_cut, w.cum_last - w.cum_cut, "
         "(SELECT count(*) FROM requests r WHERE r.allocation_id = " +
         alloc +
         " AND r.state = 'in_flight' AND r.started_at > c.now - $3::bigint), "
         "(SELECT count(*) FROM requests r WHERE r.allocation_id = " +
         alloc +
         " AND r.state IN ('in_flight', 'usage_pending')"
         " AND NOT (r.state = 'in_flight' AND r.started_at > c.now - $3::bigint)), "
         "CASE WHEN w.ord_last - w.ord_cut + " +
         admissions +
         " >= ag.requests_per_minute"
         " THEN COALESCE((SELECT r.started_at FROM requests r WHERE r.allocation_id = " +
         alloc +
         " AND r.started_at > c.now - $4::bigint ORDER BY r.started_at, r.start_ordinal LIMIT 1), "
         "0) ELSE 0 END, "
         "CASE WHEN w.cum_last - w.cum_cut >= ag.tokens_per_minute"
         " THEN COALESCE((SELECT e.booked_at FROM usage_events e WHERE e.allocation_id = " +
         alloc +
         " AND e.booked_at > c.now - $4::bigint AND e.cum_tokens > w.cum_last - "
         "ag.tokens_per_minute"
         " ORDER BY e.booked_at, e.seq LIMIT 1), 0) ELSE 0 END";
}

// $1 event id, $2 allocation, $3 seq, $4 request, $5 provider request id, $6/$7 counts,
// $8 source, $9 finality, $10 evidence, $11 booked_at, $12/$13 the request's hold,
// $14 agreement id, $15 agreement state, $16 allocation state. With `on_conflict`, it writes
// nothing when the allocation has an event under that provider request id already (the
// unique index finds it, with no lookup before: write_booking) and updates one allocation
// row only when it booked; without, that event fails the statement (unique violation).
// The running totals (cum_input, cum_output: schema.cpp, migration 5) are the allocation's
// booked totals before this statement plus the event's counts.
std::string book_event_sql(const char* on_conflict) {
  return "WITH ev AS (INSERT INTO usage_events (id, allocation_id, seq, request_id,"
         " provider_request_id, input_tokens, output_tokens, source, finality, evidence, booked_at,"
         " cum_tokens, cum_input, cum_output) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
         "$11, " +
         last_booking("cum_tokens", "$2") +
         " + $6 + $7,"
         " (SELECT booked_input FROM allocations WHERE id = $2) + $6,"
         " (SELECT booked_output FROM allocations WHERE id = $2) + $7)" +
         on_conflict +
         " RETURNING 1),"
         " rq AS (UPDATE requests SET state = 'booked', finished_at = $11, provider_request_id = $5"
         " WHERE id = $4 AND EXISTS (SELECT 1 FROM ev)),"
         " ag AS (UPDATE agreements SET state = $15 WHERE id = $14 AND EXISTS (SELECT 1 FROM ev))"
         " UPDATE allocations SET booked_input = booked_input + $6, booked_output = booked_output "
         "+ $7,"
         " held_input = held_input - $12, held_output = held_output - $13, event_seq = $3, state = "
         "$16"
         " WHERE id = $2 AND EXISTS (SELECT 1 FROM ev)";
}

}  // namespace

const Statement lock_allocation{
    "cv_lock_allocation", std::string("SELECT ") + lock_columns +
                              " FROM allocations al JOIN agreements ag ON ag.id = al.agreement_id"
                              " WHERE al.id = $1 FOR NO KEY UPDATE OF al"};

// "now" for an admission: never before the allocation's last start (a clock stepping back
// would break the windows' order).
const Statement window_counts{
    "cv_window_counts",
    "WITH c AS MATERIALIZED (SELECT GREATEST(" + now_param(2) + ", " +
        last_start("started_at", "$1::text") + ") AS now) SELECT c.now, " +
        counts("$1::text", "$5::bigint") + " FROM c" + running_figures("$1::text") +
        " JOIN allocations al ON al.id = $1::text JOIN agreements ag ON ag.id = al.agreement_id"};

// The page of allocations is picked first, so that only its rows' windows are read.
const Statement allocation_status{
    "cv_allocation_status",
    "WITH c AS MATERIALIZED (SELECT " + now_param(1) + " AS now) SELECT al.id, " + lock_columns +
        ", c.now, " + counts("al.id", "0") +
        " FROM (SELECT p.id FROM allocations p WHERE ($2::text IS NULL OR p.id = $2::text)"
        " ORDER BY p.created_at, p.seq LIMIT $5) page"
        " JOIN allocations al ON al.id = page.id JOIN agreements ag ON ag.id = al.agreement_id "
        "CROSS JOIN c" +
        running_figures("al.id") + " ORDER BY al.created_at, al.seq"};

// allocation_status in pages of creation order: $2 is the seq after (0 for the start), $5
// the row limit, $6 / $7 the supplier / buyer (NULL: any); the other parameters and the
// columns are allocation_status's, then the row's seq.
const Statement allocation_status_page{
    "cv_allocation_status_page",
    "WITH c AS MATERIALIZED (SELECT " + now_param(1) + " AS now) SELECT al.id, " + lock_columns +
        ", c.now, " + counts("al.id", "0") + ", al.seq" +
        " FROM (SELECT p.id FROM allocations p JOIN agreements pa ON pa.id = p.agreement_id"
        " WHERE p.seq > $2::bigint AND ($6::text IS NULL OR pa.supplier = $6::text)"
        " AND ($7::text IS NULL OR pa.buyer = $7::text) ORDER BY p.seq LIMIT $5) page"
        " JOIN allocations al ON al.id = page.id JOIN agreements ag ON ag.id = al.agreement_id "
        "CROSS JOIN c" +
        running_figures("al.id") + " ORDER BY al.seq"};

const Statement insert_request{
    "cv_insert_request",
    "WITH ins AS (INSERT INTO requests (id, allocation_id, key_id, state, started_at, model,"
    " stream, hold_input, hold_output, start_ordinal) VALUES ($2, $1, $3, 'in_flight', $4, $5, $6,"
    " $7, $8, " +
        last_start("start_ordinal", "$1") +
        " + 1))"
        " UPDATE allocations SET held_input = held_input + $7, held_output = held_output + $8,"
        " state = $9 WHERE id = $1"};

// Read by each admission batch after the row lock: a grant from a store's cache may be
// older than its key's revocation, which must refuse the key at once.
const Statement key_revoked{"cv_key_revoked", "SELECT revoked FROM api_keys WHERE id = $1"};

const Statement set_states{"cv_set_states",
                           "WITH ag AS (UPDATE agreements SET state = $4 WHERE id = $3)"
                           " UPDATE allocations SET state = $2 WHERE id = $1"};

// $1 request, $2 allocation, $3 now|NULL. Columns: state, hold_input, hold_output,
// started_at, provider_request_id, now — never before the allocation's last booking (see
// window_counts) — and reported_input, reported_output, reported_provider_request_id.
const Statement read_request_locked{
    "cv_read_request_locked",
    "SELECT state, hold_input, hold_output, started_at, provider_request_id, GREATEST(" +
        now_param(3) + ", " + last_booking("booked_at", "$2") +
        "), reported_input, reported_output,"
        " reported_provider_request_id FROM requests WHERE id = $1 AND allocation_id = $2 FOR NO "
        "KEY UPDATE"};

// $1 allocation, $2 provider request id. Columns: input_tokens, output_tokens, request_id.
const Statement booked_event_by_provider_id{
    "cv_booked_event_by_provider_id",
    "SELECT input_tokens, output_tokens, request_id FROM usage_events"
    " WHERE allocation_id = $1 AND provider_request_id = $2"};

// Bookings with and without ON CONFLICT; book_event_sql lists their parameters.
const Statement book_event{
    "cv_book_event",
    book_event_sql(" ON CONFLICT (allocation_id, provider_request_id) DO NOTHING")};
const Statement book_new_event{"cv_book_new_event", book_event_sql("")};

// $1 allocation, $2 request, $3 new state, $4 finished_at, $5 provider request id ('' keeps),
// $6/$7 hold to release.
const Statement close_request{
    "cv_close_request",
    "WITH rq AS (UPDATE requests SET state = $3, finished_at = $4,"
    " provider_request_id = COALESCE(NULLIF($5, ''), provider_request_id) WHERE id = $2)"
    " UPDATE allocations SET held_input = held_input - $6, held_output = held_output - $7"
    " WHERE id = $1"};

// $1 request, $2 finished_at, $3 provider request id ('' keeps).
const Statement mark_usage_pending{
    "cv_mark_usage_pending",
    "UPDATE requests SET state = 'usage_pending', finished_at = $2,"
    " provider_request_id = COALESCE(NULLIF($3, ''), provider_request_id) WHERE id = $1"};

// Not under the allocation's row lock: it changes no number admission or settlement reads,
// and locks only the request's row (a settlement locks the allocation's first, then this).
const Statement note_provider_id{"cv_note_provider_id",
                                 "UPDATE requests SET provider_request_id = $3 WHERE id = $1 AND "
                                 "allocation_id = $2 AND state = 'in_flight'"};

const Statement insert_conflict{
    "cv_insert_conflict",
    "INSERT INTO conflicts (id, allocation_id, request_id, provider_request_id, reported_input,"
    " reported_output, booked_input, booked_output, recorded_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"};

const Statement keep_reported{"cv_keep_reported",
                              "UPDATE requests SET reported_input = $2, reported_output = $3, "
                              "reported_provider_request_id = $4"
                              " WHERE id = $1"};

// Every gateway's stale in-flight requests. $1 now|NULL, $2 timeout µs.
// Not under the allocations' row locks, on purpose: admission already counts an in-flight
// request started at or before now - timeout as usage_pending (window_counts), so this
// UPDATE changes no number an admission reads and cannot let one overshoot. The rows are
// locked SKIP LOCKED: a request being settled right now (its row locked by settlement) is
// left to that settlement or the next sweep, and two gateways sweeping at once never wait
// on (or deadlock with) each other.
const Statement sweep_stale{
    "cv_sweep_stale",
    "WITH c AS MATERIALIZED (SELECT " + now_param(1) +
        " AS now),"
        " s AS (SELECT r.id FROM requests r, c WHERE r.state = 'in_flight'"
        " AND r.started_at <= c.now - $2::bigint FOR NO KEY UPDATE OF r SKIP LOCKED)"
        " UPDATE requests r SET state = 'usage_pending' FROM s WHERE r.id = s.id"};

const Statement read_now{"cv_read_now", "SELECT " + now_param(1)};

// $1 secret hash. Columns: key id, allocation id, revoked, provider, models, rpm, tpm, maxc,
// service_tiers.
// The booking key's unique index answers for events; requests_open for the open requests.
const Statement owns_provider_request{
    "cv_owns_provider_request",
    "SELECT EXISTS (SELECT 1 FROM usage_events WHERE allocation_id = $1 AND provider_request_id = "
    "$2)"
    " OR EXISTS (SELECT 1 FROM requests WHERE allocation_id = $1 AND provider_request_id = $2"
    " AND state IN ('in_flight', 'usage_pending'))"};

const Statement authenticate{
    "cv_authenticate",
    "SELECT k.id, k.allocation_id, k.revoked, ag.provider, ag.models, ag.requests_per_minute,"
    " ag.tokens_per_minute, ag.max_concurrency, ag.service_tiers FROM api_keys k"
    " JOIN allocations al ON al.id = k.allocation_id JOIN agreements ag ON ag.id = al.agreement_id"
    " WHERE k.secret_hash = $1"};

const Statement insert_agreement{
    "cv_insert_agreement",
    "INSERT INTO agreements (id, supplier, buyer, provider, models, input_tokens, output_tokens,"
    " starts_at, ends_at, requests_per_minute, tokens_per_minute, max_concurrency, state,"
    " created_at, service_tiers) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
    "$14,"
    " $15)"};

const Statement insert_allocation{
    "cv_insert_allocation",
    "INSERT INTO allocations (id, agreement_id, state, created_at) VALUES ($1, $2, $3, $4)"};

const Statement insert_key{
    "cv_insert_key",
    "INSERT INTO api_keys (id, allocation_id, secret_hash, created_at) VALUES ($1, $2, $3, $4)"};

// Columns: id, supplier, buyer, provider, models, input, output, starts, ends, rpm, tpm,
// maxc, state, created_at, service_tiers.
const Statement get_agreement{
    "cv_get_agreement",
    "SELECT id, supplier, buyer, provider, models, input_tokens, output_tokens, starts_at,"
    " ends_at, requests_per_minute, tokens_per_minute, max_concurrency, state, created_at,"
    " service_tiers FROM agreements WHERE id = $1"};

const Statement allocation_of_agreement{"cv_allocation_of_agreement",
                                        "SELECT id FROM allocations WHERE agreement_id = $1"};

const Statement allocation_exists{"cv_allocation_exists",
                                  "SELECT 1 FROM allocations WHERE id = $1"};

const Statement revoke_key{
    "cv_revoke_key",
    "UPDATE api_keys SET revoked = true WHERE id = $1 RETURNING id, allocation_id"};

const Statement get_request{
    "cv_get_request", std::string("SELECT ") + request_columns + " FROM requests WHERE id = $1"};

const Statement allocation_of_request{"cv_allocation_of_request",
                                      "SELECT allocation_id FROM requests WHERE id = $1"};

const Statement get_event_of_request{
    "cv_get_event_of_request",
    std::string("SELECT ") + event_columns + " FROM usage_events WHERE request_id = $1"};

}  // namespace cairva::store::pg::sql
