// The embedded store's SELECT column lists for requests and usage events, and their
// parsers (shared by the admin reads and the listings). Values read back are the store's
// own: an unknown state or source reads as the safest one, never an assertion.
#pragma once

#include "store/rows.h"
#include "store/sqlite/db.h"

namespace cairva::store::sqlite {

inline constexpr const char* request_columns =
    "SELECT id, allocation_id, state, started_at, finished_at, model, stream, hold_input,"
    " hold_output, provider_request_id, reported_input, reported_output, "
    "reported_provider_request_id"
    " FROM requests";

inline RequestRow parse_request(Stmt& s) {
  RequestRow r;
  r.id = s.col_text(0);
  r.allocation_id = s.col_text(1);
  r.state = core::parse_request_state(s.col_text(2)).value_or(core::RequestState::failed);
  r.started_at = s.col_i64(3);
  if (!s.col_null(4)) r.finished_at = s.col_i64(4);
  r.model = s.col_text(5);
  r.stream = s.col_i64(6) != 0;
  r.hold = {s.col_i64(7), s.col_i64(8)};
  r.provider_request_id = s.col_text(9);
  if (!s.col_null(10))
    r.reported_usage = core::ReportedUsage{{s.col_i64(10), s.col_i64(11)}, s.col_text(12)};
  return r;
}

inline constexpr const char* event_columns =
    "SELECT id, allocation_id, request_id, provider_request_id, input_tokens, output_tokens,"
    " source, finality, evidence, booked_at, corrects FROM usage_events";

inline UsageEventRow parse_event(Stmt& s) {
  UsageEventRow e;
  e.id = s.col_text(0);
  e.allocation_id = s.col_text(1);
  e.request_id = s.col_text(2);
  e.provider_request_id = s.col_text(3);
  e.tokens = {s.col_i64(4), s.col_i64(5)};
  e.source = core::parse_event_source(s.col_text(6)).value_or(core::EventSource::provider);
  e.finality = core::parse_finality(s.col_text(7)).value_or(core::Finality::reported);
  e.evidence = s.col_text(8);
  e.booked_at = s.col_i64(9);
  if (!s.col_null(10)) e.corrects = s.col_text(10);
  return e;
}

}  // namespace cairva::store::sqlite
