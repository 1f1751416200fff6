// Calls that book nothing (SPEC-APIS §3): GET /v1/models and the stored response objects.
// The key was checked by the session; these check the allocation's state (a suspended,
// depleted or expired allocation is refused as admission refuses it) but count toward no
// limit and hold nothing.
#pragma once

#include <span>
#include <string_view>

#include "gateway/exchange.h"
#include "gateway/gateway.h"
#include "http/executor.h"
#include "store/rows.h"
#include "upstream/upstream.h"

namespace cairva::gateway {

// GET /v1/models (`target` with its query): the agreement's `models` in the list shape of
// the provider's dialect when the list is not empty, else the provider's own list passed
// through (the query too). `forward_headers` go to the provider with that call.
http::Task<bool> list_models(const Gateway& gw, upstream::Upstream& upstream, ClientExchange& ex,
                             const store::KeyGrant& grant, std::string_view target,
                             std::span<const upstream::Header> forward_headers = {});

}  // namespace cairva::gateway
