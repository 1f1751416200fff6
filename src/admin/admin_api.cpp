#include "admin/admin_api.h"

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <boost/url/parse.hpp>
#include <charconv>
#include <exception>
#include <map>

#include "admin/body.h"
#include "admin/console_routes.h"
#include "admin/handler_support.h"
#include "admin/limits.h"
#include "admin/listings.h"
#include "base/ids.h"
#include "render/entity_json.h"

namespace cairva::admin {
namespace json = boost::json;

namespace {

enum class Kind {
  metrics,
  create_agreement,
  get_agreement,
  cancel_agreement,
  list_allocations,
  get_allocation,
  create_key,
  suspend_allocation,
  resume_allocation,
  revoke_key,
  list_requests,
  get_request,
  reconcile,
  list_events,
  list_conflicts,
  backup,
};

struct Route {
  Kind kind;
  std::string_view method;
  std::string id;  // the path's {id}, when it has one
};

using Segments = std::vector<std::string>;

// The route table of SPEC §7 (plus GET of single agreements and requests, and backup).
std::optional<Route> match(const Segments& s) {
  if (s.size() == 1 && s[0] == "metrics") return Route{Kind::metrics, "GET", ""};
  if (s.size() < 3 || s[0] != "admin" || s[1] != "v1") return std::nullopt;
  const std::string& coll = s[2];
  const size_t n = s.size();
  const std::string id = n >= 4 ? s[3] : "";
  if (n >= 4 && id.empty()) return std::nullopt;
  const std::string_view action = n == 5 ? std::string_view(s[4]) : std::string_view();
  if (n > 5) return std::nullopt;
  if (coll == "agreements") {
    if (n == 3) return Route{Kind::create_agreement, "POST", ""};
    if (n == 4) return Route{Kind::get_agreement, "GET", id};
    if (action == "cancel") return Route{Kind::cancel_agreement, "POST", id};
  } else if (coll == "allocations") {
    if (n == 3) return Route{Kind::list_allocations, "GET", ""};
    if (n == 4) return Route{Kind::get_allocation, "GET", id};
    if (action == "keys") return Route{Kind::create_key, "POST", id};
    if (action == "suspend") return Route{Kind::suspend_allocation, "POST", id};
    if (action == "resume") return Route{Kind::resume_allocation, "POST", id};
  } else if (coll == "keys") {
    if (n == 4) return Route{Kind::revoke_key, "DELETE", id};
  } else if (coll == "requests") {
    if (n == 3) return Route{Kind::list_requests, "GET", ""};
    if (n == 4) return Route{Kind::get_request, "GET", id};
    if (action == "reconcile") return Route{Kind::reconcile, "POST", id};
  } else if (coll == "events") {
    if (n == 3) return Route{Kind::list_events, "GET", ""};
  } else if (coll == "conflicts") {
    if (n == 3) return Route{Kind::list_conflicts, "GET", ""};
  } else if (coll == "backup") {
    if (n == 3) return Route{Kind::backup, "POST", ""};
  }
  return std::nullopt;
}

bool authorized(std::string_view header, const std::string& token) {
  constexpr std::string_view scheme = "bearer ";
  if (token.empty() || header.size() <= scheme.size()) return false;
  for (size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != scheme[i]) return false;
  }
  return constant_time_equal(header.substr(scheme.size()), token);
}

// Action routes take no body; a non-empty one must at least be an empty JSON object.
Status check_empty_body(const std::string& body) {
  BodyReader r(body, {});
  if (!r.ok()) return r.error();
  return {};
}

}  // namespace

AdminApi::AdminApi(store::Store& store, std::string admin_token, std::shared_ptr<const Clock> clock,
                   std::function<std::string()> metrics_text)
    : store_(store),
      admin_token_(std::move(admin_token)),
      clock_(std::move(clock)),
      metrics_text_(std::move(metrics_text)) {
  CAIRVA_ASSERT(clock_ != nullptr);
}

namespace {

class Handler {
 public:
  Handler(store::Store& store, const Clock& clock) : store_(store), clock_(clock) {}

  AdminResponse create_agreement(const std::string& body) {
    BodyReader r(body, {"supplier", "buyer", "provider", "models", "input_tokens", "output_tokens",
                        "starts_at", "ends_at", "requests_per_minute", "tokens_per_minute",
                        "max_concurrency", "service_tiers"});
    store::NewAgreement a;
    auto supplier = r.string("supplier", name_bytes_max, true);
    auto buyer = r.string("buyer", name_bytes_max, true);
    auto provider = r.string("provider", name_bytes_max, true);
    auto models = r.string_list("models", models_max, name_bytes_max);
    auto service_tiers = r.string_list("service_tiers", service_tiers_max, name_bytes_max);
    auto input = r.integer("input_tokens", 1, quantity_max, true);
    auto output = r.integer("output_tokens", 1, quantity_max, true);
    auto starts = r.time("starts_at", false);
    auto ends = r.time("ends_at", true);
    auto rpm = r.integer("requests_per_minute", 1, quantity_max, true);
    auto tpm = r.integer("tokens_per_minute", 1, quantity_max, true);
    auto conc = r.integer("max_concurrency", 1, quantity_max, true);
    if (!r.ok()) return error_response(r.error());
    const UnixMicros start = starts.value_or(clock_.now());
    if (*ends <= start) {
      return error_response(ErrorCode::invalid_request,
                            "ends_at must be later than starts_at (" + format_rfc3339(start) + ")");
    }
    a.supplier = *supplier;
    a.buyer = *buyer;
    a.provider = *provider;
    if (models) a.models = std::move(*models);
    if (service_tiers) a.service_tiers = std::move(*service_tiers);
    a.terms.window = {start, *ends};
    a.terms.limits = {*rpm, *tpm, *conc};
    a.terms.allowance = {*input, *output};
    auto created = store_.create_agreement(a);
    if (!created) return error_response(created.error());
    const auto& c = *created;
    return json_response(
        201,
        json::object{{"agreement", render::agreement_object(c.agreement)},
                     {"allocation", render::allocation_object(c.allocation)},
                     {"api_key", render::new_key_object(c.key_id, c.allocation.id, c.key_secret)}});
  }

  AdminResponse reconcile(const std::string& request_id, const std::string& body) {
    BodyReader r(body, {"input_tokens", "output_tokens", "evidence", "use_reported", "force"});
    // use_reported books the counts kept on the request (its reported_usage) instead.
    const bool use_reported = r.boolean("use_reported", false).value_or(false);
    // Counts far above the request's hold need it (store/validate.h, reconcile_hold_ratio_max).
    const bool force = r.boolean("force", false).value_or(false);
    auto input = r.integer("input_tokens", 0, quantity_max, !use_reported);
    auto output = r.integer("output_tokens", 0, quantity_max, !use_reported);
    auto evidence = r.string("evidence", evidence_bytes_max, true);
    if (use_reported && (input || output))
      r.fail("use_reported: books the request's reported_usage; give no token counts");
    if (!r.ok()) return error_response(r.error());
    auto event = store_.reconcile(store::Reconciliation{
        request_id, {input.value_or(0), output.value_or(0)}, *evidence, use_reported, force});
    if (!event) return error_response(event.error());
    return json_response(200, json::object{{"event", render::event_object(*event)}});
  }

  // An online copy of the store into a new file on the gateway's machine (`cairva backup`).
  AdminResponse backup(const std::string& body) {
    BodyReader r(body, {"path"});
    auto path = r.string("path", backup_path_bytes_max, true);
    if (!r.ok()) return error_response(r.error());
    auto report = store_.backup(*path);
    if (!report) return error_response(report.error());
    return json_response(200, json::object{{"backup", render::backup_object(*report)}});
  }

  // An allocation-valued answer: the allocation object itself (SPEC §7).
  AdminResponse allocation(Result<store::AllocationStatus> a) {
    if (!a) return error_response(a.error());
    return json_response(200, render::allocation_object(*a));
  }

  AdminResponse dispatch(const Route& route, const Query& q, const std::string& body) {
    switch (route.kind) {
      case Kind::metrics:
        break;  // handled by the caller
      case Kind::create_agreement:
        return create_agreement(body);
      case Kind::get_agreement: {
        auto a = store_.get_agreement(route.id);
        if (!a) return error_response(a.error());
        a->state = core::effective_agreement_state(a->state, a->terms.window, clock_.now());
        return json_response(200, render::agreement_object(*a));
      }
      case Kind::cancel_agreement: {
        if (auto s = check_empty_body(body); !s) return error_response(s.error());
        auto a = store_.cancel_agreement(route.id);
        if (!a) return error_response(a.error());
        return json_response(200, json::object{{"agreement", render::agreement_object(*a)}});
      }
      case Kind::list_allocations:
        return list_allocations(store_, q);
      case Kind::get_allocation:
        return allocation(store_.get_allocation(route.id));
      case Kind::create_key: {
        if (auto s = check_empty_body(body); !s) return error_response(s.error());
        auto k = store_.create_key(route.id);
        if (!k) return error_response(k.error());
        return json_response(
            201,
            json::object{{"api_key", render::new_key_object(k->key_id, route.id, k->key_secret)}});
      }
      case Kind::suspend_allocation:
        if (auto s = check_empty_body(body); !s) return error_response(s.error());
        return allocation(store_.suspend_allocation(route.id));
      case Kind::resume_allocation:
        if (auto s = check_empty_body(body); !s) return error_response(s.error());
        return allocation(store_.resume_allocation(route.id));
      case Kind::revoke_key: {
        auto k = store_.revoke_key(route.id);
        if (!k) return error_response(k.error());
        return json_response(200, json::object{{"api_key", render::api_key_object(*k)}});
      }
      case Kind::list_requests:
        return list_requests(store_, q);
      case Kind::get_request: {
        auto r = store_.get_request(route.id);
        if (!r) return error_response(r.error());
        return json_response(200, render::request_object(*r));
      }
      case Kind::reconcile:
        return reconcile(route.id, body);
      case Kind::list_events:
        return list_events(store_, q);
      case Kind::list_conflicts:
        return list_conflicts(store_, q);
      case Kind::backup:
        return backup(body);
    }
    return error_response(ErrorCode::internal_error, "unrouted admin call");
  }

 private:
  store::Store& store_;
  const Clock& clock_;
};

}  // namespace

AdminResponse AdminApi::handle(const AdminRequest& request) const {
  auto url = boost::urls::parse_origin_form(request.target);
  if (!url) return error_response(ErrorCode::not_found, "unknown path " + request.target);
  Segments segments;
  for (auto seg : url->segments()) segments.push_back(std::string(seg));
  // SPEC-CONSOLE's routes first (console_routes.h), then SPEC §7's table.
  const auto console = match_console(segments, request.method);
  const auto route = console ? std::nullopt : match(segments);
  if (!route && !console)
    return error_response(ErrorCode::not_found, "unknown path " + std::string(url->path()));
  const std::string_view method = console ? console->method : route->method;
  if (request.method != method) {
    return error_response(ErrorCode::method_not_allowed, request.method + " is not allowed on " +
                                                             std::string(url->path()) + " (use " +
                                                             std::string(method) + ")");
  }
  if (!authorized(request.authorization, admin_token_)) {
    return error_response(ErrorCode::invalid_admin_token,
                          "missing or wrong admin token: send Authorization: Bearer <token>");
  }
  if (route && route->kind == Kind::metrics)
    return AdminResponse{200, metrics_text_(), metrics_content_type};
  Query query;
  for (auto p : url->params()) query[std::string(p.key)] = p.has_value ? std::string(p.value) : "";
  try {
    if (console) return handle_console(*console, query, request.body, store_, *clock_);
    return Handler(store_, *clock_).dispatch(*route, query, request.body);
  } catch (const std::exception& e) {
    // Library exceptions (allocation failure, ...) end here, never in the listener.
    return error_response(ErrorCode::internal_error, std::string("internal error: ") + e.what());
  }
}

}  // namespace cairva::admin
