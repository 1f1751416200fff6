// The chat completion flow (SPEC §3–§5): inspect → admit → forward → relay → settle.
#pragma once

#include <string>

#include "gateway/exchange.h"
#include "gateway/gateway.h"
#include "http/executor.h"
#include "store/rows.h"
#include "upstream/upstream.h"

namespace cairva::gateway {

// Serves one authenticated POST /v1/chat/completions whose body has been read, through
// `upstream` (the event loop's UpstreamPool; a scripted fake in tests).
// Returns false when the client connection must close.
http::Task<bool> chat_completion(const Gateway& gw, upstream::Upstream& upstream,
                                 ClientExchange& ex, const store::KeyGrant& grant,
                                 std::string body);

}  // namespace cairva::gateway
