// Usage series (SPEC-CONSOLE §2), the part every backend shares: the bucket boundaries of a
// query and the buckets built from what a backend reads at them.
//
// Both stores read a series in O(buckets · log rows), whatever the allocation's size: each
// usage event carries the allocation's booked totals up to and including it (cum_input,
// cum_output) and each request its start ordinal (1, 2, … per allocation), both in the
// order the allocation's lock gave them, with times that never run backwards per
// allocation. So the tokens booked before a boundary are the running totals of the last
// event before it, the requests started before it the ordinal of the last start before
// it: one index probe each. Failed and usage_pending requests are few; they are counted
// from a partial index of those states.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "core/types.h"
#include "store/store.h"

namespace cairva::store {

// At most this many buckets per series: a month of hours is 744, a year of days 366.
inline constexpr int64_t usage_buckets_max = 1000;

// The series' boundaries: from, from + bucket, …, and `to` last (buckets + 1 values).
std::vector<UnixMicros> usage_boundaries(const UsageQuery& q);

// Checks a query: to > from, from a multiple of bucket_us (UTC-aligned), at most
// usage_buckets_max buckets. invalid_request otherwise.
Status check_usage_query(const UsageQuery& q);

// What a backend read: at each boundary, the running totals of the allocation's last event
// booked before it and the ordinal of its last request started before it (0, 0 / 0 when
// none); and per bucket, how many requests started in it are failed or usage_pending now.
struct UsageReads {
  std::vector<core::Tokens> booked_before;  // one per boundary
  std::vector<int64_t> started_before;      // one per boundary
  std::vector<int64_t> failed;              // one per bucket
  std::vector<int64_t> pending;             // one per bucket
};

// An empty UsageReads sized for `q`.
UsageReads usage_reads_for(const UsageQuery& q);

UsageSeries assemble_usage(const UsageQuery& q, const UsageReads& reads);

}  // namespace cairva::store
