// Every SQL statement the PostgreSQL store prepares, in one place. Column orders that
// code reads by index are documented next to each statement and mirrored by the
// *Col constants.
//
// Times: `$n::bigint` "now" parameters are the injected clock's value, or NULL to use the
// database clock (clock_timestamp(), read when the statement runs: after the row lock).
#pragma once

#include "store/postgres/pg.h"

namespace cairva::store::pg::sql {

// The allocation's row lock, taken by admission, settlement and operator changes alike.
// FOR NO KEY UPDATE: mutually exclusive like FOR UPDATE, but it does not block the
// KEY SHARE locks that foreign-key checks take (inserting an api_key for the allocation).
// $1 allocation id. Columns: LockCol.
extern const Statement lock_allocation;
enum LockCol {
  lock_state,
  lock_booked_input,
  lock_booked_output,
  lock_held_input,
  lock_held_output,
  lock_event_seq,
  lock_agreement_id,
  lock_agreement_state,
  lock_starts_at,
  lock_ends_at,
  lock_rpm,
  lock_tpm,
  lock_max_concurrency,
  lock_allowance_input,
  lock_allowance_output,
  lock_col_count
};

// The trailing-window counts at "now". $1 allocation, $2 now|NULL, $3 in-flight timeout
// µs, $4 rate window µs, $5 admissions to be decided on them. Columns: now,
// requests_last_minute, tokens_last_minute, in_flight (not stale), usage_pending (including
// stale in-flight ones not yet swept), oldest_start_at (read when $5 more starts would fill
// the window, else 0), freeing_booking_at (read when the window's tokens are at the limit,
// else 0): core::AllocationSnapshot's.
extern const Statement window_counts;

// Status of one ($2) or every ($2 NULL) allocation without locking. $1 now|NULL, $3
// timeout µs, $4 window µs, $5 row limit. Columns: id, then LockCol at offset 1, then the
// seven window_counts columns.
extern const Statement allocation_status;
// The same by creation order: $2 seq after, $6 supplier, $7 buyer (NULL: any), and the row's
// seq after the window counts.
extern const Statement allocation_status_page;
inline constexpr int status_lock_offset = 1;
inline constexpr int status_counts_offset = status_lock_offset + lock_col_count;
inline constexpr int window_counts_col_count = 7;
inline constexpr int status_page_seq_col = status_counts_offset + window_counts_col_count;

extern const Statement insert_request;  // admitted: request row + hold on the allocation
extern const Statement set_states;      // $1 allocation, $2 its state, $3 agreement, $4 its state
extern const Statement key_revoked;     // $1 key id: `revoked`, or no row
extern const Statement read_request_locked;
extern const Statement booked_event_by_provider_id;
extern const Statement book_event;
extern const Statement book_new_event;  // book_event that fails on a provider id booked before
extern const Statement close_request;
extern const Statement mark_usage_pending;
extern const Statement note_provider_id;  // $1 request, $2 allocation, $3 provider request id
extern const Statement insert_conflict;
extern const Statement keep_reported;  // $1 request, $2/$3 counts, $4 provider request id
extern const Statement sweep_stale;
extern const Statement read_now;
// Whether $2 is allocation $1's provider request id: an event's booking key, or an open
// request's recorded id. One column: owned (boolean).
extern const Statement owns_provider_request;
extern const Statement authenticate;

extern const Statement insert_agreement;
extern const Statement insert_allocation;
extern const Statement insert_key;
extern const Statement get_agreement;
extern const Statement allocation_of_agreement;
extern const Statement allocation_exists;
extern const Statement revoke_key;
extern const Statement get_request;
extern const Statement allocation_of_request;
extern const Statement get_event_of_request;

// The columns RequestCol and EventCol name, for SELECT lists.
inline constexpr const char* request_columns =
    "id, allocation_id, state, started_at, finished_at, model, stream, hold_input, hold_output, "
    "provider_request_id, reported_input, reported_output, reported_provider_request_id";
inline constexpr const char* event_columns =
    "id, allocation_id, request_id, provider_request_id, input_tokens, output_tokens, source, "
    "finality, evidence, booked_at, NULL::text AS corrects";
// An adjustment row as EventCol columns.
inline constexpr const char* adjustment_columns =
    "id, allocation_id, request_id, provider_request_id, input_tokens, output_tokens, "
    "'adjustment'::text AS source, 'confirmed'::text AS finality, evidence, booked_at, corrects";

// Request row columns (the request listings, get_request).
enum RequestCol {
  req_id,
  req_allocation_id,
  req_state,
  req_started_at,
  req_finished_at,
  req_model,
  req_stream,
  req_hold_input,
  req_hold_output,
  req_provider_request_id,
  req_reported_input,
  req_reported_output,
  req_reported_provider_request_id
};
// Usage event columns (the event listings, get_event_of_request); corrects is NULL but for
// adjustments.
enum EventCol {
  evt_id,
  evt_allocation_id,
  evt_request_id,
  evt_provider_request_id,
  evt_input,
  evt_output,
  evt_source,
  evt_finality,
  evt_evidence,
  evt_booked_at,
  evt_corrects
};

}  // namespace cairva::store::pg::sql
