// The statements of the PostgreSQL store's calls for operating at volume (SPEC-CONSOLE):
// listings in pages, usage series, bulk reconciliation's lookups, adjustments. Columns that
// code reads by index are listed with each; EventCol and RequestCol are statements.h's.
#pragma once

#include <optional>

#include "core/types.h"
#include "store/postgres/pg.h"

namespace cairva::store::pg::sql {

// A writer's mark (schema.cpp, migration 5): the first statement of every transaction that
// adds requests, events, adjustments or conflicts, before its transaction id is assigned.
inline constexpr const char* mark_row_writer = "LOCK TABLE row_writers IN ROW EXCLUSIVE MODE";

// The listings' horizon: the transaction id below which every writer has ended. Read in a
// statement of its own before the listing's, whose snapshot then holds every row below it.
// Columns: the horizon (bigint).
extern const Statement listing_horizon;

// Requests. A state filter is part of the statement's text, so that the planner can use the
// partial index holding that state's rows: one statement per state, and one for none.
// One allocation, by (started_at, start_ordinal): $1 allocation, $2/$3 after, $4 from,
// $5 to, $6 limit. Columns: RequestCol.
const Statement& list_allocation_requests(std::optional<core::RequestState> state);
// Every allocation, by commit (txid, seq): $1/$2 after, $3 from, $4 to, $5 limit, $6 horizon.
const Statement& list_all_requests(std::optional<core::RequestState> state);
// $1 request id. Columns: allocation_id, started_at, start_ordinal, txid, seq.
extern const Statement request_position;

// Usage events and adjustments, one listing. Columns: EventCol.
// One allocation, by (booked_at, seq): $1 allocation, $2/$3 after, $4 from, $5 to, $6 limit.
extern const Statement list_allocation_events;
// Every allocation, by commit (txid, gseq): $1/$2 after, $3 from, $4 to, $5 limit, $6 horizon.
extern const Statement list_all_events;
// $1 event or adjustment id. Columns: allocation_id, booked_at, seq, txid, gseq.
extern const Statement event_position;

// Conflicts. One allocation by seq: $1 allocation, $2 seq after, $3 limit. Every
// allocation by commit: $1/$2 after (txid, seq), $3 limit, $4 horizon. Columns: id,
// allocation_id, request_id, provider_request_id, reported in/out, booked in/out, recorded_at.
extern const Statement list_allocation_conflicts;
extern const Statement list_all_conflicts;
// $1 conflict id. Columns: allocation_id, seq, txid.
extern const Statement conflict_position;

// Creation order (allocations.seq; creations hold creation_lock). $1 allocation id / $1
// agreement id. Column: seq.
extern const Statement allocation_position;
extern const Statement agreement_position;
// $1 seq after, $2 limit. Columns: get_agreement's.
extern const Statement list_agreements;
// $1 key id. Columns: seq, allocation_id.
extern const Statement key_position;
// $1 allocation, $2 seq after, $3 limit. Columns: id, allocation_id, revoked, created_at.
extern const Statement list_keys;
// A transaction-scoped advisory lock serialising creations: $1 what is created in ('' for
// agreements, the allocation's id for its keys).
extern const Statement creation_lock;

// Usage series. $1 allocation, $2 the boundaries (bigint[]). One row per boundary, in
// order: the last event before it (cum_input, cum_output, booked_at, seq), the last
// adjustment before it (the same four), the ordinal of the last start before it.
extern const Statement usage_at_boundaries;
// $1 allocation, $2 from, $3 to, $4 bucket µs. Columns: bucket index, failed (bool), count.
extern const Statement usage_unsettled;
// $1 allocation id: 1 when it exists.
extern const Statement allocation_known;

// Bulk reconciliation. $1 allocation|NULL, $2 provider request id. Columns: allocation_id,
// request_id, input_tokens, output_tokens.
extern const Statement find_bookings;
// $1 provider request id, $2 allocation|NULL. Columns: RequestCol.
extern const Statement find_pending;
// $1 allocation, $2 provider request id, $3/$4 reported counts: a row when recorded before.
extern const Statement conflict_seen;

// Adjustments. $1 event id. Columns: allocation_id, request_id, provider_request_id, and
// whether it is an adjustment itself (then the event it corrects).
extern const Statement event_to_adjust;
// $1 allocation, $2 now|NULL: the time an adjustment is booked at, read after the row lock
// (never before the allocation's last booking or adjustment).
extern const Statement adjustment_time;
// $1 id, $2 allocation, $3 seq, $4 corrects, $5 request, $6 provider request id, $7/$8 the
// signed counts, $9 evidence, $10 booked_at, $11/$12 the booked totals after it, $13 agreement,
// $14 its state, $15 the allocation's state.
extern const Statement insert_adjustment;

}  // namespace cairva::store::pg::sql
