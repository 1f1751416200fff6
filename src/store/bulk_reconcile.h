// Bulk reconciliation (SPEC-CONSOLE §4): an operator's metering export booked against the
// usage_pending requests it covers, item by item, through the Store's own calls (reconcile,
// and the lookups find_bookings / find_pending), so both backends share one behaviour.
//
// Two passes. The first only reads: it finds each item's request and refuses the whole
// call (invalid_request naming the item, nothing applied) when an item is ambiguous or
// needs `force` (store/validate.h, reconcile_hold_ratio_max). The second decides each
// item in order on what the first found plus what the items before it booked, the same
// for a dry run as for a real one; a real run books through Store::reconcile and records
// conflicts at the end. Re-importing a file books nothing new: an item whose request
// already has an event with exactly its counts is already_booked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "store/store.h"

namespace cairva::store {

// Items per call: a day of a busy allocation's pending requests, and one answer that stays
// a few megabytes.
inline constexpr size_t reconciliation_items_max = 10000;

struct BulkItem {
  std::string request_id;  // exactly one of these two is non-empty
  std::string provider_request_id;
  std::optional<std::string> allocation_id;  // where provider_request_id is looked for
  core::Tokens usage;
};

struct BulkReconciliation {
  std::string evidence;  // non-empty
  bool dry_run = false;
  bool force = false;
  std::optional<std::string> allocation_id;  // default scope of the items' provider ids
  std::vector<BulkItem> items;
};

enum class BulkOutcome : uint8_t { booked, already_booked, conflict, not_found, not_pending };
std::string_view to_string(BulkOutcome o);

struct BulkResult {
  BulkOutcome outcome = BulkOutcome::not_found;
  std::optional<UsageEventRow> event;  // booked, in a real run
};

// One result per item, in order. invalid_request ("items[3]: …") when an item is malformed,
// ambiguous or needs force: nothing applied. A store error stops the call where it
// happened: the items before it stay applied (importing the file again completes it).
Result<std::vector<BulkResult>> reconcile_bulk(Store& store, const BulkReconciliation& call);

}  // namespace cairva::store
