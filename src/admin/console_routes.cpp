#include "admin/console_routes.h"

#include <future>

#include "admin/listings.h"
#include "admin/usage_series.h"

namespace cairva::admin {
namespace {

// Waits for the store's asynchronous answer: the admin listener's thread may block.
template <class T, class Start>
Result<T> wait_for(Start start) {
  auto p = std::make_shared<std::promise<Result<T>>>();
  auto f = p->get_future();
  start([p](Result<T> r) { p->set_value(std::move(r)); });
  return f.get();
}

AdminResponse usage_series(store::Store& store, const Clock& clock,
                           const std::string& allocation_id, const Query& q) {
  auto req = usage_request(q, allocation_id, clock.now());
  if (!req) return error_response(req.error());
  auto series = wait_for<store::UsageSeries>([&](store::Callback<store::UsageSeries> done) {
    store.usage_series(req->query, std::move(done));
  });
  if (!series) return error_response(series.error());
  return AdminResponse{200, usage_series_json(*series, req->bucket)};
}

}  // namespace

std::optional<ConsoleRoute> match_console(const std::vector<std::string>& s,
                                          std::string_view method) {
  if (s.size() < 3 || s[0] != "admin" || s[1] != "v1") return std::nullopt;
  const std::string& coll = s[2];
  const size_t n = s.size();
  if (n >= 4 && s[3].empty()) return std::nullopt;
  if (coll == "agreements" && n == 3 && method == "GET")
    return ConsoleRoute{ConsoleKind::list_agreements, "GET", ""};
  if (coll == "allocations" && n == 5) {
    if (s[4] == "keys" && method == "GET") return ConsoleRoute{ConsoleKind::list_keys, "GET", s[3]};
    if (s[4] == "usage") return ConsoleRoute{ConsoleKind::usage_series, "GET", s[3]};
  }
  if (coll == "reconciliations" && n == 3)
    return ConsoleRoute{ConsoleKind::reconciliations, "POST", ""};
  if (coll == "events" && n == 5 && s[4] == "adjust")
    return ConsoleRoute{ConsoleKind::adjust_event, "POST", s[3]};
  return std::nullopt;
}

AdminResponse handle_console(const ConsoleRoute& route, const Query& q, const std::string& body,
                             store::Store& store, const Clock& clock) {
  switch (route.kind) {
    case ConsoleKind::list_agreements:
      return list_agreements(store, clock, q);
    case ConsoleKind::list_keys:
      return list_keys(store, route.id, q);
    case ConsoleKind::usage_series:
      return usage_series(store, clock, route.id, q);
    case ConsoleKind::reconciliations:
      if (auto s = check_query(q, {}); !s) return error_response(s.error());
      return bulk_reconcile(store, body);
    case ConsoleKind::adjust_event:
      if (auto s = check_query(q, {}); !s) return error_response(s.error());
      return adjust_event(store, route.id, body);
  }
  return error_response(ErrorCode::internal_error, "unrouted admin call");
}

}  // namespace cairva::admin
