// JSON renderings of the SPEC's entities (§2, §6, §7), shared by the admin API and the
// gateway's `GET /v1/allocations/current`, so that both show one shape. Not the hot path:
// built with Boost.JSON. Thread-safe (pure functions).
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <string_view>

#include "base/error_code.h"
#include "store/rows.h"
#include "store/store.h"

namespace cairva::render {

// {"object":"allocation","id","agreement_id","state","window":{…},"limits":{…},
//  "allowance":{…},"used":{…},"held":{…},"remaining":{…},"current":{…}} (SPEC §6).
boost::json::object allocation_object(const store::AllocationStatus& a);
std::string allocation_json(const store::AllocationStatus& a);

// {"object":"agreement","id","supplier","buyer","provider","models","service_tiers",
//  "input_tokens","output_tokens","starts_at","ends_at","requests_per_minute",
//  "tokens_per_minute","max_concurrency","state","created_at"}.
boost::json::object agreement_object(const store::AgreementRow& a);
std::string agreement_json(const store::AgreementRow& a);

// {"id","allocation_id","secret"}: the only time a secret is ever shown.
boost::json::object new_key_object(const std::string& key_id, const std::string& allocation_id,
                                   const std::string& secret);
// {"id","allocation_id","revoked"}.
boost::json::object api_key_object(const store::ApiKeyRow& k);
// A key as listed: {"object":"api_key","id","allocation_id","created_at","revoked"}; never
// the secret or its hash.
boost::json::object key_object(const store::ApiKeyRow& k);

// {"object":"request","id","allocation_id","state","started_at","finished_at","model",
//  "stream","hold":{…},"provider_request_id"}; absent values are null.
boost::json::object request_object(const store::RequestRow& r);
std::string request_json(const store::RequestRow& r);

// {"object":"usage_event","id","allocation_id","request_id","provider_request_id",
//  "input_tokens","output_tokens","source","finality","evidence","booked_at","corrects"};
// evidence is null for a provider's event, corrects (the event an adjustment corrects)
// null but for an adjustment.
boost::json::object event_object(const store::UsageEventRow& e);
std::string event_json(const store::UsageEventRow& e);

// {"object":"conflict","id","allocation_id","request_id","provider_request_id",
//  "reported":{…},"booked":{…},"recorded_at"}.
boost::json::object conflict_object(const store::ConflictRow& c);
// {"object":"backup","path","bytes","allocations","requests","usage_events","started_at","finished_at"}.
boost::json::object backup_object(const store::BackupReport& b);
std::string conflict_json(const store::ConflictRow& c);

// The OpenAI-shaped error body {"error":{"type","code","message"}}.
std::string error_json(ErrorCode code, std::string_view message);

// {"input_tokens","output_tokens"}.
boost::json::object tokens_object(const core::Tokens& t);

}  // namespace cairva::render
