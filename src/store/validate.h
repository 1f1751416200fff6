// Checks every backend applies to a new agreement before creating it (SPEC §7).
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "store/store.h"

namespace cairva::store {

// invalid_request naming the field: empty supplier/buyer, a provider not in `providers`,
// ends_at <= starts_at, a non-positive limit or allowance, an empty model name.
Status validate_new_agreement(const NewAgreement& a, const std::vector<std::string>& providers);

}  // namespace cairva::store
