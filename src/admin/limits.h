// Every bound of the admin API, named with its unit last.
#pragma once

#include <cstddef>
#include <cstdint>

#include "store/limits.h"

namespace cairva::admin {

// Listing pages: a default that fits a terminal, a maximum that keeps one answer small.
inline constexpr size_t page_size_default = 100;
inline constexpr size_t page_size_max = store::list_page_rows_max;
static_assert(page_size_default <= page_size_max);

// supplier, buyer, provider and model names are labels, not documents.
inline constexpr size_t name_bytes_max = 256;
// An agreement's model allow-list.
inline constexpr size_t models_max = 256;
// An agreement's service_tier allow-list: providers name a handful of tiers.
inline constexpr size_t service_tiers_max = 16;
// Reconciliation evidence: a written note or a pasted export line, not a file.
inline constexpr size_t evidence_bytes_max = size_t{64} * 1024;
// A backup's target path (PATH_MAX on Linux).
inline constexpr size_t backup_path_bytes_max = 4096;
// Allowances and limits stay far below int64 overflow when summed and multiplied.
inline constexpr int64_t quantity_max = int64_t{1} << 53;

}  // namespace cairva::admin
