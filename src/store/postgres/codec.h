// Conversions between result rows and the store's row types (pure; no I/O).
// Values read from the database are input: a bad one is an Error, never an assertion.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "core/admission.h"
#include "store/postgres/pg.h"
#include "store/rows.h"

namespace cairva::store::pg {

// The locked (or read) allocation row with its agreement: LockCol columns from `offset`.
struct AllocationRow {
  core::AllocationSnapshot snap;  // states, terms, booked, held (counts left zero)
  int64_t event_seq = 0;
  std::string agreement_id;
};
Result<AllocationRow> parse_allocation(const PGresult* r, int row, int offset);
// The seven window_counts columns from `offset` (now, rpm, tpm, in_flight, usage_pending,
// oldest_start_at, freeing_booking_at) into `snap`, whose as_of becomes now; returns now.
UnixMicros parse_counts(const PGresult* r, int row, int offset, core::AllocationSnapshot& snap);

Result<RequestRow> parse_request(const PGresult* r, int row);
Result<UsageEventRow> parse_event(const PGresult* r, int row);
Result<AgreementRow> parse_agreement(const PGresult* r, int row);

// sql::insert_conflict's parameters for a new conflict: the counts a provider reported
// for `request_id` under an id already booked with `booked`, recorded at `at`.
Params conflict_params(std::string_view allocation_id, std::string_view request_id,
                       std::string_view provider_request_id, const core::Tokens& reported,
                       const core::Tokens& booked, int64_t at);

// The models (and service_tiers) allow-list as stored: newline-separated.
std::string join_models(const std::vector<std::string>& models);
std::vector<std::string> split_models(const std::string& s);

}  // namespace cairva::store::pg
