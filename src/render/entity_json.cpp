#include "render/entity_json.h"

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include "base/time.h"

namespace cairva::render {
namespace json = boost::json;

namespace {

json::value time_or_null(const std::optional<UnixMicros>& t) {
  if (!t) return nullptr;
  return json::value(format_rfc3339(*t));
}

json::value string_or_null(const std::string& s) {
  if (s.empty()) return nullptr;
  return json::value(s);
}

}  // namespace

json::object tokens_object(const core::Tokens& t) {
  return json::object{{"input_tokens", t.input}, {"output_tokens", t.output}};
}

json::object allocation_object(const store::AllocationStatus& a) {
  const core::AllocationSnapshot& s = a.snapshot;
  json::object o;
  o["object"] = "allocation";
  o["id"] = a.id;
  o["agreement_id"] = a.agreement_id;
  o["state"] = core::to_string(core::shown_state(s));
  o["window"] = json::object{{"starts_at", format_rfc3339(s.terms.window.starts_at)},
                             {"ends_at", format_rfc3339(s.terms.window.ends_at)}};
  o["limits"] = json::object{{"requests_per_minute", s.terms.limits.requests_per_minute},
                             {"tokens_per_minute", s.terms.limits.tokens_per_minute},
                             {"max_concurrency", s.terms.limits.max_concurrency}};
  o["allowance"] = tokens_object(s.terms.allowance);
  o["used"] = tokens_object(s.booked);
  o["held"] = tokens_object(s.held);
  o["remaining"] = tokens_object(s.remaining());
  o["current"] = json::object{{"requests_last_minute", s.requests_last_minute},
                              {"tokens_last_minute", s.tokens_last_minute},
                              {"in_flight", s.in_flight},
                              {"usage_pending", s.usage_pending}};
  return o;
}

std::string allocation_json(const store::AllocationStatus& a) {
  return json::serialize(allocation_object(a));
}

json::object agreement_object(const store::AgreementRow& a) {
  json::array models;
  for (const auto& m : a.models) models.emplace_back(m);
  json::object o;
  o["object"] = "agreement";
  o["id"] = a.id;
  o["supplier"] = a.supplier;
  o["buyer"] = a.buyer;
  o["provider"] = a.provider;
  o["models"] = std::move(models);
  json::array service_tiers;
  for (const auto& t : a.service_tiers) service_tiers.emplace_back(t);
  o["service_tiers"] = std::move(service_tiers);
  o["input_tokens"] = a.terms.allowance.input;
  o["output_tokens"] = a.terms.allowance.output;
  o["starts_at"] = format_rfc3339(a.terms.window.starts_at);
  o["ends_at"] = format_rfc3339(a.terms.window.ends_at);
  o["requests_per_minute"] = a.terms.limits.requests_per_minute;
  o["tokens_per_minute"] = a.terms.limits.tokens_per_minute;
  o["max_concurrency"] = a.terms.limits.max_concurrency;
  o["state"] = core::to_string(a.state);
  o["created_at"] = format_rfc3339(a.created_at);
  return o;
}

std::string agreement_json(const store::AgreementRow& a) {
  return json::serialize(agreement_object(a));
}

json::object new_key_object(const std::string& key_id, const std::string& allocation_id,
                            const std::string& secret) {
  return json::object{{"id", key_id}, {"allocation_id", allocation_id}, {"secret", secret}};
}

json::object api_key_object(const store::ApiKeyRow& k) {
  return json::object{{"id", k.id}, {"allocation_id", k.allocation_id}, {"revoked", k.revoked}};
}

json::object key_object(const store::ApiKeyRow& k) {
  return json::object{{"object", "api_key"},
                      {"id", k.id},
                      {"allocation_id", k.allocation_id},
                      {"created_at", format_rfc3339(k.created_at)},
                      {"revoked", k.revoked}};
}

json::object request_object(const store::RequestRow& r) {
  json::object o;
  o["object"] = "request";
  o["id"] = r.id;
  o["allocation_id"] = r.allocation_id;
  o["state"] = core::to_string(r.state);
  o["started_at"] = format_rfc3339(r.started_at);
  o["finished_at"] = time_or_null(r.finished_at);
  o["model"] = r.model;
  o["stream"] = r.stream;
  o["hold"] = tokens_object(r.hold);
  o["provider_request_id"] = string_or_null(r.provider_request_id);
  if (r.reported_usage) {
    json::object reported = tokens_object(r.reported_usage->counts);
    reported["provider_request_id"] = r.reported_usage->provider_request_id;
    o["reported_usage"] = std::move(reported);
  } else {
    o["reported_usage"] = nullptr;
  }
  return o;
}

std::string request_json(const store::RequestRow& r) { return json::serialize(request_object(r)); }

json::object event_object(const store::UsageEventRow& e) {
  json::object o;
  o["object"] = "usage_event";
  o["id"] = e.id;
  o["allocation_id"] = e.allocation_id;
  o["request_id"] = e.request_id;
  o["provider_request_id"] = e.provider_request_id;
  o["input_tokens"] = e.tokens.input;
  o["output_tokens"] = e.tokens.output;
  o["source"] = core::to_string(e.source);
  o["finality"] = core::to_string(e.finality);
  o["evidence"] = e.source == core::EventSource::provider ? nullptr : json::value(e.evidence);
  o["booked_at"] = format_rfc3339(e.booked_at);
  // On every event, so that each line of a JSONL export has the same fields.
  o["corrects"] = e.source == core::EventSource::adjustment ? json::value(e.corrects) : nullptr;
  return o;
}

std::string event_json(const store::UsageEventRow& e) { return json::serialize(event_object(e)); }

json::object conflict_object(const store::ConflictRow& c) {
  json::object o;
  o["object"] = "conflict";
  o["id"] = c.id;
  o["allocation_id"] = c.allocation_id;
  o["request_id"] = c.request_id;
  o["provider_request_id"] = c.provider_request_id;
  o["reported"] = tokens_object(c.reported);
  o["booked"] = tokens_object(c.booked);
  o["recorded_at"] = format_rfc3339(c.recorded_at);
  return o;
}

json::object backup_object(const store::BackupReport& b) {
  json::object o;
  o["object"] = "backup";
  o["path"] = b.path;
  o["bytes"] = b.bytes;
  o["allocations"] = b.allocations;
  o["requests"] = b.requests;
  o["usage_events"] = b.events;
  o["started_at"] = format_rfc3339(b.started_at);
  o["finished_at"] = format_rfc3339(b.finished_at);
  return o;
}

std::string conflict_json(const store::ConflictRow& c) {
  return json::serialize(conflict_object(c));
}

std::string error_json(ErrorCode code, std::string_view message) {
  const std::string_view name = wire_name(code);
  json::object err{{"type", name}, {"code", name}, {"message", message}};
  return json::serialize(json::object{{"error", std::move(err)}});
}

}  // namespace cairva::render
