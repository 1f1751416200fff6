// The Embeddings flow (SPEC-APIS §2): inspect → admit (an input hold only) → forward →
// settle, in the Embeddings codec (wire/embeddings_codec.h).
#pragma once

#include <string>

#include "gateway/exchange.h"
#include "gateway/gateway.h"
#include "http/executor.h"
#include "store/rows.h"
#include "upstream/upstream.h"

namespace cairva::gateway {

// Serves one authenticated POST /v1/embeddings whose body has been read, through
// `upstream`. Returns false when the client connection must close.
http::Task<bool> embeddings_create(const Gateway& gw, upstream::Upstream& upstream,
                                   ClientExchange& ex, const store::KeyGrant& grant,
                                   std::string body);

}  // namespace cairva::gateway
