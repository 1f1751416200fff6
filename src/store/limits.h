// Bounds every backend shares, named once: the admin API, the CLI and both backends read
// them from here.
#pragma once

#include <algorithm>
#include <cstddef>

namespace cairva::store {

// Listings page (SPEC-CONSOLE §1): the most rows one page of a listing returns (store.h's
// Paged). Large enough that a script pages rarely, small enough that one answer stays small.
inline constexpr size_t list_page_rows_max = 1000;
// Rows of the allocation listing read per query when a state filter may skip many of them.
inline constexpr size_t allocation_filter_chunk_rows = list_page_rows_max;

// The rows one page holds when a listing asks for `limit`: at least one, at most the max.
inline size_t page_rows(size_t limit) { return std::clamp<size_t>(limit, 1, list_page_rows_max); }

}  // namespace cairva::store
