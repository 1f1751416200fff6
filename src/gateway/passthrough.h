// Calls that book nothing (SPEC-APIS §3): GET /v1/models and the stored response objects
// (and, in messages.h, POST /v1/messages/count_tokens). The key was checked by the session;
// these check the allocation's state (a suspended, depleted or expired allocation is
// refused as admission refuses it) but count toward no limit and hold nothing.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "gateway/exchange.h"
#include "gateway/gateway.h"
#include "http/executor.h"
#include "store/rows.h"
#include "upstream/upstream.h"

namespace cairva::gateway {

// The allocation as of now when it serves; else the call is answered (refused as admission
// would refuse it, with its first check alone: core::refuse_by_state; or the store's error)
// and `keep` says whether the connection stays. Records nothing.
struct InService {
  std::optional<store::AllocationStatus> status;
  bool keep = false;
};
http::Task<InService> allocation_in_service(const Gateway& gw, ClientExchange& ex,
                                            const store::KeyGrant& grant);

// GET /v1/models (`target` with its query): the agreement's `models` in the list shape of
// the provider's dialect when the list is not empty, else the provider's own list passed
// through (the query too). `forward_headers` go to the provider with that call.
http::Task<bool> list_models(const Gateway& gw, upstream::Upstream& upstream, ClientExchange& ex,
                             const store::KeyGrant& grant, std::string_view target,
                             std::span<const upstream::Header> forward_headers = {});

// GET or DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items (`method`, and
// `target` with its query): forwarded, query and all, only when the id is the calling
// allocation's (Store::owns_provider_request: booked to it, or kept by a request of it
// awaiting its usage); any other id is 404 not_found without asking the provider, since
// buyers sharing a supplier's account must never reach each other's stored responses.
http::Task<bool> response_object(const Gateway& gw, upstream::Upstream& upstream,
                                 ClientExchange& ex, const store::KeyGrant& grant,
                                 std::string_view method, std::string_view target);

}  // namespace cairva::gateway
