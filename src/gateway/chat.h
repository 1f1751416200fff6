// The chat completion flow (SPEC §3–§5): inspect → admit → forward → relay → settle.
#pragma once

#include <string>


#include "gateway/exchange.h"
#include "gateway/gateway.h"
#include "http/executor.h"
#include "store/rows.h"

namespace cairva::gateway {

// Sets ex.rate from the allocation's current status, so that an error answered before
// admission still carries exact x-ratelimit-* headers. On a store error ex.rate keeps the
// limits alone.
http::Task<void> load_rate_limits(const Gateway& gw, ClientExchange& ex,
                                              const store::KeyGrant& grant);

// Serves one authenticated POST /v1/chat/completions whose body has been read.
// Returns false when the client connection must close.
http::Task<bool> chat_completion(const Gateway& gw, upstream::UpstreamPool& pool,
                                             ClientExchange& ex, const store::KeyGrant& grant,
                                             std::string body);

}  // namespace cairva::gateway
