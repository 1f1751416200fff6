// Steps shared by the transactions of the request path and the admin calls. Each one
// REQUIRES: a transaction open on `c` holding the allocation's row lock.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "base/result.h"
#include "core/ledger.h"
#include "store/postgres/codec.h"
#include "store/postgres/pg.h"

namespace cairva::store::pg {

// The request row read (and row-locked) under the allocation's lock, with the clock read
// after that lock.
struct LockedRequest {
  core::RequestState state;
  core::OpenRequest open;  // its hold, start and reported_usage, whatever its state
  std::string provider_request_id;
  UnixMicros now;
};

// nullopt when `id` is not a request of `allocation_id`.
Result<std::optional<LockedRequest>> read_locked_request(Connection& c, const std::string& id,
                                                         const std::string& allocation_id,
                                                         std::optional<UnixMicros> now);

// The row of sql::read_request_locked ($1 request, $2 allocation, $3 now|NULL).
Result<std::optional<LockedRequest>> parse_locked_request(const PGresult* res);

// A settlement batch's locked requests, by id.
using LockedRequests = std::unordered_map<std::string, LockedRequest>;

// An AllocationLedger restored from the locked rows (one request, or a batch's): the core
// decides what a settlement does (duplicate, conflict, depletion, …); the store writes the
// differences.
core::AllocationLedger ledger_for(const AllocationRow& alloc, const std::string& request_id,
                                  const LockedRequest* req);
core::AllocationLedger ledger_for(const AllocationRow& alloc, const LockedRequests& requests);

// The counts already booked under (allocation, provider_request_id), if any.
Result<std::optional<core::Tokens>> booked_counts(Connection& c, const std::string& allocation_id,
                                                  const std::string& provider_request_id);

// sql::book_event's (and book_new_event's) parameters for a booking the core accepted,
// as event number `seq` of the allocation, which it leaves in `states`.
Params booking_params(const std::string& allocation_id, const AllocationRow& alloc,
                      const core::AllocationSnapshot& states, int64_t seq,
                      const std::string& event_id, const std::string& request_id,
                      const std::string& provider_request_id, const core::Tokens& usage,
                      core::EventSource source, core::Finality finality,
                      const std::string& evidence, UnixMicros now, const core::Tokens& hold);

// Writes a booking the ledger accepted: the event (next per-allocation seq), the request
// booked, the hold released, booked totals and states as the ledger now has them. With
// `commit_with`, the write is the transaction's last and goes with its COMMIT. False (and
// nothing written) when the allocation has an event under `provider_request_id` already,
// which the ledger did not know of (settle_on books without looking first).
Result<bool> write_booking(Connection& c, Transaction* commit_with,
                           const std::string& allocation_id, const AllocationRow& alloc,
                           const core::AllocationLedger& ledger, const std::string& event_id,
                           const std::string& request_id, const std::string& provider_request_id,
                           const core::Tokens& usage, core::EventSource source,
                           core::Finality finality, const std::string& evidence, UnixMicros now,
                           const core::Tokens& hold);

}  // namespace cairva::store::pg
