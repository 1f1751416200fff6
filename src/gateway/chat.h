// The chat completion flow (SPEC §3–§5): inspect → admit → forward → relay → settle.
#pragma once

#include <string>


#include "gateway/exchange.h"
#include "gateway/gateway.h"
#include "http/executor.h"
#include "store/rows.h"
#include "upstream/upstream.h"

namespace cairva::gateway {

// Answers `code` for a request refused before its admission, with exact x-ratelimit-*
// headers (ex.rate from the allocation's current status; the limits alone on a store
// error). A provisional grant (Store::authenticate_for_admission) is checked first: a key
// revoked since gets 401 invalid_api_key, as a revoked key must at once; a store that
// cannot say gets 503 store_unavailable.
http::Task<bool> refuse_before_admission(const Gateway& gw, ClientExchange& ex, const store::KeyGrant& grant,
                                         ErrorCode code, std::string_view message);

// Serves one authenticated POST /v1/chat/completions whose body has been read, through
// `upstream` (the event loop's UpstreamPool; a scripted fake in tests).
// Returns false when the client connection must close.
http::Task<bool> chat_completion(const Gateway& gw, upstream::Upstream& upstream,
                                             ClientExchange& ex, const store::KeyGrant& grant,
                                             std::string body);

}  // namespace cairva::gateway
