// A usage series over HTTP (SPEC-CONSOLE §2), shared by the admin route
// (GET /admin/v1/allocations/{id}/usage) and the buyer's (GET /v1/allocations/current/usage):
// the query read into a store::UsageQuery, and the answer's JSON.
#pragma once

#include <string>
#include <string_view>

#include "admin/handler_support.h"
#include "store/store.h"

namespace cairva::admin {

struct UsageRequest {
  store::UsageQuery query;
  std::string bucket;  // "minute", "hour" or "day"
};

// `bucket` minute|hour|day (default hour); `to` (default now); `from` (default: 24 buckets,
// the last one holding `to`), aligned down to its bucket in UTC. invalid_request for a bad
// value, an unknown parameter, to <= from or more than store::usage_buckets_max buckets.
Result<UsageRequest> usage_request(const Query& q, const std::string& allocation_id,
                                   UnixMicros now);

// The query parameters of a request target ("/path?a=1&b=2"), decoded.
Query query_of(std::string_view target);

// {"object":"usage_series","allocation_id","bucket","data":[{"start","input_tokens",
//  "output_tokens","requests","failed","usage_pending"}, …]}.
std::string usage_series_json(const store::UsageSeries& s, std::string_view bucket);

}  // namespace cairva::admin
