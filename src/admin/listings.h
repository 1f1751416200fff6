// The admin listings (SPEC §7, SPEC-CONSOLE §1): each answers one page,
// {"object":"list","data":[…],"has_more":…}, taking `limit` (1..1000, default 100) and
// `after` (an id of that listing, exclusive). A client that follows `after` until has_more
// is false sees every row exactly once, also while rows are added (the stores' orders:
// store.h).
#pragma once

#include "admin/handler_support.h"

namespace cairva::admin {

AdminResponse list_agreements(store::Store& store, const Clock& clock, const Query& q);
// Filters: state (the effective state), supplier, buyer (the agreement's, exact).
AdminResponse list_allocations(store::Store& store, const Query& q);
AdminResponse list_keys(store::Store& store, const std::string& allocation_id, const Query& q);
// Filters: allocation_id, state, from/to (started_at, RFC 3339).
AdminResponse list_requests(store::Store& store, const Query& q);
// Filters: allocation_id, from/to (booked_at, RFC 3339).
AdminResponse list_events(store::Store& store, const Query& q);
// Filter: allocation_id.
AdminResponse list_conflicts(store::Store& store, const Query& q);

}  // namespace cairva::admin
