// The row writes the embedded store queues to its Writer, each a function run inside the
// writer's batch transaction. Built under the allocation's mutex (they capture values,
// never references), applied later on the writer thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "store/rows.h"
#include "store/sqlite/db.h"

namespace cairva::store::sqlite::writes {

using Apply = std::function<Status(Db&)>;

Apply insert_agreement(const AgreementRow& a, const std::string& allocation_id,
                       core::AllocationState state, const std::string& key_id,
                       const std::string& key_hash);
Apply insert_key(const std::string& key_id, const std::string& allocation_id,
                 const std::string& key_hash, UnixMicros now);
Apply revoke_key(const std::string& key_id);
Apply insert_request(const RequestRow& r, const std::string& key_id);
Apply set_states(const std::string& allocation_id, const std::string& agreement_id,
                 core::AllocationState state, core::AgreementState agreement_state);
Apply mark_usage_pending(std::vector<std::string> request_ids, const std::string& provider_request_id);
// A new usage event: the request booked, the allocation's used totals raised.
Apply book(const UsageEventRow& e);
// Booked without an event of its own (duplicate/conflict): its provider_request_id names
// the allocation's event it repeated.
Apply book_as_duplicate(const std::string& request_id, const std::string& provider_request_id,
                        UnixMicros now);
Apply fail_request(const std::string& request_id, const std::string& provider_request_id,
                   UnixMicros now);
Apply insert_conflict(const ConflictRow& c);

}  // namespace cairva::store::sqlite::writes
