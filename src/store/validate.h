// Checks every backend applies to a new agreement before creating it (SPEC §7), and the
// store URL as it may be shown in logs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "store/store.h"

namespace cairva::store {

// invalid_request naming the field: empty supplier/buyer, a provider not in `providers`,
// ends_at <= starts_at, a non-positive limit or allowance, an empty model name.
Status validate_new_agreement(const NewAgreement& a, const std::vector<std::string>& providers);

// The row of a new agreement (a fresh agr_ id, in force), created at `now`.
AgreementRow new_agreement_row(const NewAgreement& a, UnixMicros now);

// The counts a reconciliation books: its own, or with `use_reported` the request's
// reported_usage (invalid_request when the request has none).
Result<core::Tokens> reconciled_usage(const Reconciliation& r,
                                      const std::optional<core::ReportedUsage>& reported);

// A reconciliation far above what its request held is more likely a slip (5,000 typed for
// 50) than a real overrun: counts above this many times the hold, in either direction,
// are booked only when the call says `force` (SPEC-CONSOLE §4b).
inline constexpr int64_t reconcile_hold_ratio_max = 10;

// invalid_request naming the direction and the ratio when `usage` exceeds
// reconcile_hold_ratio_max times `hold` and `force` is false.
Status check_hold_ratio(const core::Tokens& usage, const core::Tokens& hold, bool force);

// `url` with any password replaced by "***" (the userinfo's and a `password=` parameter's),
// so a PostgreSQL URL can be printed.
std::string redacted_store_url(std::string_view url);

}  // namespace cairva::store
