#include "store/postgres/console_statements.h"

#include <array>
#include <string>

#include "store/postgres/statements.h"

namespace cairva::store::pg::sql {
namespace {

std::string state_term(std::optional<core::RequestState> state) {
  return state ? " AND state = '" + std::string(core::to_string(*state)) + "'" : std::string();
}

// Index 0: no state filter; 1 + the state's value otherwise.
constexpr size_t state_variants = 5;
size_t variant(std::optional<core::RequestState> state) {
  return state ? 1 + static_cast<size_t>(*state) : 0;
}
std::optional<core::RequestState> state_of(size_t v) {
  if (v == 0) return std::nullopt;
  return static_cast<core::RequestState>(v - 1);
}
static_assert(static_cast<size_t>(core::RequestState::failed) + 2 == state_variants);

const char* const allocation_request_names[state_variants] = {
    "cv_list_alloc_requests", "cv_list_alloc_requests_in_flight", "cv_list_alloc_requests_booked",
    "cv_list_alloc_requests_usage_pending", "cv_list_alloc_requests_failed"};
const char* const all_request_names[state_variants] = {
    "cv_list_all_requests", "cv_list_all_requests_in_flight", "cv_list_all_requests_booked",
    "cv_list_all_requests_usage_pending", "cv_list_all_requests_failed"};

std::array<Statement, state_variants> make_allocation_requests() {
  std::array<Statement, state_variants> out;
  for (size_t v = 0; v < state_variants; ++v) {
    out[v] = Statement{
        allocation_request_names[v],
        std::string("SELECT ") + request_columns +
            " FROM requests WHERE allocation_id = $1 AND (started_at, start_ordinal) > ($2, $3)"
            " AND started_at >= $4 AND started_at < $5" +
            state_term(state_of(v)) + " ORDER BY started_at, start_ordinal LIMIT $6"};
  }
  return out;
}

std::array<Statement, state_variants> make_all_requests() {
  std::array<Statement, state_variants> out;
  for (size_t v = 0; v < state_variants; ++v) {
    out[v] = Statement{all_request_names[v],
                       std::string("SELECT ") + request_columns +
                           " FROM requests WHERE (txid, seq) > ($1, $2) AND txid < $6"
                           " AND started_at >= $3 AND started_at < $4" +
                           state_term(state_of(v)) + " ORDER BY txid, seq LIMIT $5"};
  }
  return out;
}

const std::array<Statement, state_variants> allocation_requests = make_allocation_requests();
const std::array<Statement, state_variants> all_requests = make_all_requests();

// The same selection of usage_events and adjustments, each in `order` (its columns), merged
// in `merged` (the same order over the branches' k_* copies of them).
std::string events_union(const std::string& where, const std::string& order,
                         const std::string& merged, const std::string& limit) {
  auto branch = [&](const char* columns, const char* table) {
    return std::string("(SELECT ") + columns +
           ", booked_at AS k_at, seq AS k_seq, txid AS k_txid, gseq AS k_gseq FROM " + table +
           " WHERE " + where + " ORDER BY " + order + " LIMIT " + limit + ")";
  };
  return "SELECT id, allocation_id, request_id, provider_request_id, input_tokens, output_tokens, "
         "source,"
         " finality, evidence, booked_at, corrects FROM (" +
         branch(event_columns, "usage_events") + " UNION ALL " +
         branch(adjustment_columns, "adjustments") + ") u ORDER BY " + merged + " LIMIT " + limit;
}

}  // namespace

// The next transaction id not yet assigned (read with the statement's snapshot, before
// pg_locks is scanned: a writer that gets its id later gets a larger one), lowered to the
// oldest id of a writer still running. pg_locks names a transaction's 32-bit id; it is
// within 2^31 of the next one, which gives its epoch.
const Statement listing_horizon{
    "cv_listing_horizon",
    "SELECT LEAST(x.next_id, COALESCE(min(x.next_id - ((x.next_id % 4294967296 - "
    "t.transactionid::text::bigint"
    " + 4294967296) % 4294967296)), x.next_id))"
    " FROM (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next_id) x"
    " LEFT JOIN pg_locks m ON m.locktype = 'relation' AND m.relation = 'row_writers'::regclass"
    "   AND m.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " LEFT JOIN pg_locks t ON t.pid = m.pid AND t.locktype = 'transactionid' AND t.mode = "
    "'ExclusiveLock'"
    " GROUP BY x.next_id"};

const Statement& list_allocation_requests(std::optional<core::RequestState> state) {
  return allocation_requests[variant(state)];
}
const Statement& list_all_requests(std::optional<core::RequestState> state) {
  return all_requests[variant(state)];
}

const Statement request_position{
    "cv_request_position",
    "SELECT allocation_id, started_at, start_ordinal, txid, seq FROM requests WHERE id = $1"};

const Statement list_allocation_events{
    "cv_list_alloc_events",
    events_union(
        "allocation_id = $1 AND (booked_at, seq) > ($2, $3) AND booked_at >= $4 AND booked_at < $5",
        "booked_at, seq", "k_at, k_seq", "$6")};

const Statement list_all_events{
    "cv_list_all_events_v5",
    events_union("(txid, gseq) > ($1, $2) AND txid < $6 AND booked_at >= $3 AND booked_at < $4",
                 "txid, gseq", "k_txid, k_gseq", "$5")};

const Statement event_position{
    "cv_event_position_v5",
    "SELECT allocation_id, booked_at, seq, txid, gseq FROM usage_events WHERE id = $1"
    " UNION ALL SELECT allocation_id, booked_at, seq, txid, gseq FROM adjustments WHERE id = $1"};

constexpr const char* conflict_columns =
    "SELECT id, allocation_id, request_id, provider_request_id, reported_input, reported_output,"
    " booked_input, booked_output, recorded_at FROM conflicts";

const Statement list_allocation_conflicts{
    "cv_list_alloc_conflicts",
    std::string(conflict_columns) + " WHERE allocation_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"};

const Statement list_all_conflicts{
    "cv_list_all_conflicts",
    std::string(conflict_columns) +
        " WHERE (txid, seq) > ($1, $2) AND txid < $4 ORDER BY txid, seq LIMIT $3"};

const Statement conflict_position{"cv_conflict_position",
                                  "SELECT allocation_id, seq, txid FROM conflicts WHERE id = $1"};

const Statement allocation_position{"cv_allocation_position",
                                    "SELECT seq FROM allocations WHERE id = $1"};
const Statement agreement_position{"cv_agreement_position",
                                   "SELECT seq FROM allocations WHERE agreement_id = $1"};

const Statement list_agreements{
    "cv_list_agreements",
    "SELECT ag.id, ag.supplier, ag.buyer, ag.provider, ag.models, ag.input_tokens, "
    "ag.output_tokens,"
    " ag.starts_at, ag.ends_at, ag.requests_per_minute, ag.tokens_per_minute, ag.max_concurrency,"
    " ag.state, ag.created_at, ag.service_tiers FROM allocations al JOIN agreements ag ON ag.id = "
    "al.agreement_id"
    " WHERE al.seq > $1 ORDER BY al.seq LIMIT $2"};

const Statement key_position{"cv_key_position",
                             "SELECT seq, allocation_id FROM api_keys WHERE id = $1"};

const Statement list_keys{"cv_list_keys",
                          "SELECT id, allocation_id, revoked, created_at FROM api_keys WHERE "
                          "allocation_id = $1 AND seq > $2"
                          " ORDER BY seq LIMIT $3"};

// First key of the two-key advisory lock: "CVCR".
const Statement creation_lock{"cv_creation_lock",
                              "SELECT pg_advisory_xact_lock(1129726802, hashtext($1))"};

const Statement usage_at_boundaries{
    "cv_usage_at_boundaries",
    "SELECT e.cum_input, e.cum_output, e.booked_at, e.seq, a.cum_input, a.cum_output, a.booked_at, "
    "a.seq,"
    " COALESCE(r.start_ordinal, 0)"
    " FROM unnest($2::bigint[]) WITH ORDINALITY AS b(t, i)"
    " LEFT JOIN LATERAL (SELECT cum_input, cum_output, booked_at, seq FROM usage_events"
    "   WHERE allocation_id = $1 AND booked_at < b.t ORDER BY booked_at DESC, seq DESC LIMIT 1) e "
    "ON true"
    " LEFT JOIN LATERAL (SELECT cum_input, cum_output, booked_at, seq FROM adjustments"
    "   WHERE allocation_id = $1 AND booked_at < b.t ORDER BY booked_at DESC, seq DESC LIMIT 1) a "
    "ON true"
    " LEFT JOIN LATERAL (SELECT start_ordinal FROM requests"
    "   WHERE allocation_id = $1 AND started_at < b.t ORDER BY started_at DESC, start_ordinal DESC "
    "LIMIT 1) r ON true"
    " ORDER BY b.i"};

const Statement usage_unsettled{"cv_usage_unsettled",
                                "SELECT (started_at - $2) / $4, state = 'failed', count(*) FROM "
                                "requests WHERE allocation_id = $1"
                                " AND started_at >= $2 AND started_at < $3 AND state IN ('failed', "
                                "'usage_pending') GROUP BY 1, 2"};

const Statement allocation_known{"cv_allocation_known", "SELECT 1 FROM allocations WHERE id = $1"};

// LATERAL: one probe of the booking key's unique index per allocation.
const Statement find_bookings{
    "cv_find_bookings",
    "SELECT e.allocation_id, e.request_id, e.input_tokens, e.output_tokens FROM allocations al"
    " JOIN LATERAL (SELECT allocation_id, request_id, input_tokens, output_tokens FROM usage_events"
    "   WHERE allocation_id = al.id AND provider_request_id = $2) e ON true"
    " WHERE ($1::text IS NULL OR al.id = $1::text) ORDER BY al.seq"};

const Statement find_pending{
    "cv_find_pending",
    std::string("SELECT ") + request_columns +
        " FROM requests WHERE provider_request_id = $1 AND ($2::text IS NULL OR allocation_id = "
        "$2::text)"
        " AND state = 'usage_pending' ORDER BY started_at, start_ordinal LIMIT 1000"};

const Statement conflict_seen{"cv_conflict_seen",
                              "SELECT 1 FROM conflicts WHERE allocation_id = $1 AND "
                              "provider_request_id = $2 AND reported_input = $3"
                              " AND reported_output = $4 LIMIT 1"};

const Statement event_to_adjust{"cv_event_to_adjust",
                                "SELECT allocation_id, request_id, provider_request_id, NULL::text "
                                "FROM usage_events WHERE id = $1"
                                " UNION ALL SELECT allocation_id, request_id, provider_request_id, "
                                "corrects FROM adjustments WHERE id = $1"};

const Statement adjustment_time{"cv_adjustment_time",
                                "SELECT GREATEST(COALESCE($2::bigint, (extract(epoch from "
                                "clock_timestamp()) * 1000000)::bigint),"
                                " COALESCE((SELECT booked_at FROM usage_events WHERE allocation_id "
                                "= $1 ORDER BY booked_at DESC, seq DESC LIMIT 1), 0),"
                                " COALESCE((SELECT booked_at FROM adjustments WHERE allocation_id "
                                "= $1 ORDER BY booked_at DESC, seq DESC LIMIT 1), 0))"};

const Statement insert_adjustment{
    "cv_insert_adjustment",
    "WITH ad AS (INSERT INTO adjustments (id, allocation_id, seq, corrects, request_id, "
    "provider_request_id,"
    " input_tokens, output_tokens, evidence, booked_at, cum_input, cum_output)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)),"
    " ag AS (UPDATE agreements SET state = $14 WHERE id = $13)"
    " UPDATE allocations SET booked_input = $11, booked_output = $12, event_seq = $3, state = $15 "
    "WHERE id = $2"};

}  // namespace cairva::store::pg::sql
