// Bounds every backend shares, named once: the admin API, the CLI and both backends read
// them from here.
#pragma once

#include <cstddef>

namespace cairva::store {

// Listings page (SPEC-CONSOLE §1): the most rows one page of a listing returns (store.h's
// Paged). Large enough that a script pages rarely, small enough that one answer stays small.
inline constexpr size_t list_page_rows_max = 1000;

}  // namespace cairva::store
