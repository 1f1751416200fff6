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

// The counts a reconciliation books: its own, or with `use_reported` the request's
// reported_usage (invalid_request when the request has none).
Result<core::Tokens> reconciled_usage(const Reconciliation& r, const std::optional<core::ReportedUsage>& reported);

// `url` with any password replaced by "***" (the userinfo's and a `password=` parameter's),
// so a PostgreSQL URL can be printed.
std::string redacted_store_url(std::string_view url);

}  // namespace cairva::store
