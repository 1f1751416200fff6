// The admin routes SPEC-CONSOLE adds (§1–§4b), apart from SPEC §7's table in admin_api.cpp:
//   GET  /admin/v1/agreements                 a page of agreements
//   GET  /admin/v1/allocations/{id}/keys      a page of an allocation's keys
//   GET  /admin/v1/allocations/{id}/usage     its usage series
//   POST /admin/v1/reconciliations            bulk reconciliation
//   POST /admin/v1/events/{id}/adjust         an adjustment of a booked event
// AdminApi::handle tries these first; the same order of answers applies (404, 405, 401,
// then the route's own checks).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "admin/handler_support.h"

namespace cairva::admin {

enum class ConsoleKind { list_agreements, list_keys, usage_series, reconciliations, adjust_event };

struct ConsoleRoute {
  ConsoleKind kind;
  std::string_view method;
  std::string id;  // the path's {id}, when it has one
};

// A path SPEC-CONSOLE routes. A path SPEC §7 routes too with another method (POST
// /admin/v1/agreements, POST /admin/v1/allocations/{id}/keys) is claimed only for this
// route's method, so SPEC §7's table answers (or refuses) the others.
std::optional<ConsoleRoute> match_console(const std::vector<std::string>& segments,
                                          std::string_view method);

AdminResponse handle_console(const ConsoleRoute& route, const Query& q, const std::string& body,
                             store::Store& store, const Clock& clock);

// The handlers with a body (reconciliations.cpp).
AdminResponse bulk_reconcile(store::Store& store, const std::string& body);
AdminResponse adjust_event(store::Store& store, const std::string& event_id,
                           const std::string& body);

}  // namespace cairva::admin
