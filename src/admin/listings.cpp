#include "admin/listings.h"

#include "admin/limits.h"
#include "render/entity_json.h"

namespace cairva::admin {
namespace {

// The page parameters every listing takes, read into a store filter.
template <class Filter>
Status read_page(const Query& q, Filter& f) {
  auto limit = page_size(q);
  if (!limit) return limit.error();
  f.limit = *limit;
  f.after = non_empty(q, "after");
  return {};
}

template <class Filter>
Status read_times(const Query& q, Filter& f) {
  auto from = time_param(q, "from");
  if (!from) return from.error();
  auto to = time_param(q, "to");
  if (!to) return to.error();
  f.from = *from;
  f.to = *to;
  return {};
}

template <class T, class F>
AdminResponse answer(const Result<store::Paged<T>>& page, F render) {
  if (!page) return error_response(page.error());
  return json_response(200, page_of(*page, render));
}

}  // namespace

AdminResponse list_agreements(store::Store& store, const Clock& clock, const Query& q) {
  if (auto s = check_query(q, {"after", "limit"}); !s) return error_response(s.error());
  store::PageFilter f;
  if (auto s = read_page(q, f); !s) return error_response(s.error());
  auto page = store.list_agreements(f);
  if (!page) return error_response(page.error());
  const UnixMicros now = clock.now();
  for (auto& a : page->data)
    a.state = core::effective_agreement_state(a.state, a.terms.window, now);
  return json_response(200, page_of(*page, render::agreement_object));
}

AdminResponse list_allocations(store::Store& store, const Query& q) {
  if (auto s = check_query(q, {"state", "supplier", "buyer", "after", "limit"}); !s) {
    return error_response(s.error());
  }
  store::AllocationFilter f;
  if (auto state = non_empty(q, "state")) {
    f.state = core::parse_allocation_state(*state);
    if (!f.state) {
      return error_response(
          ErrorCode::invalid_request,
          "state: must be ready, active, suspended, depleted, expired or cancelled, got " + *state);
    }
  }
  f.supplier = non_empty(q, "supplier");
  f.buyer = non_empty(q, "buyer");
  if (auto s = read_page(q, f); !s) return error_response(s.error());
  return answer(store.list_allocations_page(f), render::allocation_object);
}

AdminResponse list_keys(store::Store& store, const std::string& allocation_id, const Query& q) {
  if (auto s = check_query(q, {"after", "limit"}); !s) return error_response(s.error());
  store::PageFilter f;
  if (auto s = read_page(q, f); !s) return error_response(s.error());
  return answer(store.list_keys(allocation_id, f), render::key_object);
}

AdminResponse list_requests(store::Store& store, const Query& q) {
  if (auto s = check_query(q, {"allocation_id", "state", "from", "to", "after", "limit"}); !s) {
    return error_response(s.error());
  }
  store::RequestFilter f;
  f.allocation_id = non_empty(q, "allocation_id");
  if (auto state = non_empty(q, "state")) {
    f.state = core::parse_request_state(*state);
    if (!f.state) {
      return error_response(
          ErrorCode::invalid_request,
          "state: must be in_flight, booked, usage_pending or failed, got " + *state);
    }
  }
  if (auto s = read_page(q, f); !s) return error_response(s.error());
  if (auto s = read_times(q, f); !s) return error_response(s.error());
  return answer(store.list_requests(f), render::request_object);
}

AdminResponse list_events(store::Store& store, const Query& q) {
  if (auto s = check_query(q, {"allocation_id", "from", "to", "after", "limit"}); !s) {
    return error_response(s.error());
  }
  store::EventFilter f;
  f.allocation_id = non_empty(q, "allocation_id");
  if (auto s = read_page(q, f); !s) return error_response(s.error());
  if (auto s = read_times(q, f); !s) return error_response(s.error());
  return answer(store.list_events(f), render::event_object);
}

AdminResponse list_conflicts(store::Store& store, const Query& q) {
  if (auto s = check_query(q, {"allocation_id", "after", "limit"}); !s)
    return error_response(s.error());
  store::ConflictFilter f;
  f.allocation_id = non_empty(q, "allocation_id");
  if (auto s = read_page(q, f); !s) return error_response(s.error());
  return answer(store.list_conflicts(f), render::conflict_object);
}

}  // namespace cairva::admin
