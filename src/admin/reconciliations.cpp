// POST /admin/v1/reconciliations (SPEC-CONSOLE §4) and POST /admin/v1/events/{id}/adjust
// (§4b): the bodies read strictly, the work done by the store (store/bulk_reconcile.h,
// Store::adjust).
#include <boost/json/array.hpp>

#include "admin/body.h"
#include "admin/console_routes.h"
#include "admin/limits.h"
#include "render/entity_json.h"
#include "store/bulk_reconcile.h"

namespace cairva::admin {
namespace json = boost::json;

namespace {

// Every item is read before anything is booked: a malformed one refuses the whole call.
Result<store::BulkItem> read_item(const json::value& v, size_t i) {
  const std::string path = "items[" + std::to_string(i) + "]";
  if (!v.is_object()) return make_error(ErrorCode::invalid_request, path + ": must be an object");
  BodyReader r(
      v.get_object(),
      {"request_id", "provider_request_id", "allocation_id", "input_tokens", "output_tokens"},
      path);
  store::BulkItem item;
  auto request_id = r.string("request_id", name_bytes_max, false);
  auto provider_request_id = r.string("provider_request_id", name_bytes_max, false);
  auto allocation_id = r.string("allocation_id", name_bytes_max, false);
  auto input = r.integer("input_tokens", 0, quantity_max, true);
  auto output = r.integer("output_tokens", 0, quantity_max, true);
  if (r.ok() && request_id.has_value() == provider_request_id.has_value()) {
    r.fail("give exactly one of request_id and provider_request_id");
  }
  if (r.ok() && request_id && allocation_id)
    r.fail("allocation_id: scopes a provider_request_id only");
  if (!r.ok()) return r.error();
  item.request_id = request_id.value_or("");
  item.provider_request_id = provider_request_id.value_or("");
  item.allocation_id = allocation_id;
  item.usage = {*input, *output};
  return item;
}

}  // namespace

AdminResponse bulk_reconcile(store::Store& store, const std::string& body) {
  BodyReader r(body, {"evidence", "dry_run", "force", "allocation_id", "items"});
  store::BulkReconciliation call;
  auto evidence = r.string("evidence", evidence_bytes_max, true);
  call.dry_run = r.boolean("dry_run", false).value_or(false);
  call.force = r.boolean("force", false).value_or(false);
  call.allocation_id = r.string("allocation_id", name_bytes_max, false);
  const json::array* items = r.array("items", store::reconciliation_items_max, true);
  if (!r.ok()) return error_response(r.error());
  call.evidence = *evidence;
  call.items.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    auto item = read_item((*items)[i], i);
    if (!item) return error_response(item.error());
    call.items.push_back(std::move(item).value());
  }
  auto results = store::reconcile_bulk(store, call);
  if (!results) return error_response(results.error());
  json::array out;
  out.reserve(results->size());
  json::object summary;
  for (auto o : {store::BulkOutcome::booked, store::BulkOutcome::already_booked,
                 store::BulkOutcome::conflict, store::BulkOutcome::not_found,
                 store::BulkOutcome::not_pending}) {
    summary[store::to_string(o)] = 0;
  }
  for (size_t i = 0; i < results->size(); ++i) {
    const store::BulkResult& res = (*results)[i];
    json::object o{{"item", i}, {"outcome", store::to_string(res.outcome)}};
    if (res.event) o["event"] = render::event_object(*res.event);
    out.emplace_back(std::move(o));
    summary[store::to_string(res.outcome)] = summary[store::to_string(res.outcome)].as_int64() + 1;
  }
  return json_response(200, json::object{{"object", "reconciliation"},
                                         {"dry_run", call.dry_run},
                                         {"results", std::move(out)},
                                         {"summary", std::move(summary)}});
}

AdminResponse adjust_event(store::Store& store, const std::string& event_id,
                           const std::string& body) {
  BodyReader r(body, {"input_tokens", "output_tokens", "evidence"});
  auto input = r.integer("input_tokens", -quantity_max, quantity_max, false);
  auto output = r.integer("output_tokens", -quantity_max, quantity_max, false);
  auto evidence = r.string("evidence", evidence_bytes_max, true);
  if (r.ok() && !input && !output)
    r.fail("input_tokens, output_tokens: give at least one (signed) count");
  if (!r.ok()) return error_response(r.error());
  auto event =
      store.adjust(store::Adjustment{event_id, {input.value_or(0), output.value_or(0)}, *evidence});
  if (!event) return error_response(event.error());
  return json_response(201, json::object{{"event", render::event_object(*event)}});
}

}  // namespace cairva::admin
