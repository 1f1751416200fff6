#include "gateway/passthrough.h"

#include <algorithm>

#include "base/time.h"
#include "gateway/flow.h"
#include "gateway/store_await.h"
#include "wire/api_paths.h"
#include "wire/limits.h"
#include "wire/models.h"

namespace cairva::gateway {
namespace {

using http::Task;
using upstream::ProviderEndpoint;

// The query of a request target, with its '?'; empty when none.
std::string_view query_of(std::string_view target) {
  const auto q = target.find('?');
  return q == std::string_view::npos ? std::string_view() : target.substr(q);
}

// A flow for a call that books nothing: its codec is never used (Flow::unbilled).
using UnbilledFlow = Flow<wire::ChatCodec>;

Task<bool> provider_unconfigured(ClientExchange& ex, const store::KeyGrant& grant) {
  return ex.send_error(ErrorCode::provider_unavailable, unconfigured_message(grant));
}

// A response id as providers make them (resp_…, UUIDs): letters, digits, '_' and '-'. Any
// other byte could change the path the provider reads ("..", "%2F"), so such an id is
// nobody's.
bool plain_id(std::string_view id) {
  if (id.empty() || id.size() > wire::provider_id_bytes_max) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

}  // namespace

Task<InService> allocation_in_service(const Gateway& gw, ClientExchange& ex,
                                      const store::KeyGrant& grant) {
  auto start = [&gw, &grant](store::Callback<store::AllocationStatus> cb) {
    gw.store.allocation_status(grant.allocation_id, std::move(cb));
  };
  auto status = co_await await_store<store::AllocationStatus>(start);
  if (!status) co_return InService{std::nullopt, co_await ex.send_store_error(status.error())};
  ex.rate = status->snapshot;
  if (const auto refused = core::refuse_by_state(status->snapshot, gw.clock.now())) {
    co_return InService{std::nullopt, co_await ex.send_error(refused->code, refused->message)};
  }
  co_return InService{std::move(*status), false};
}

Task<bool> list_models(const Gateway& gw, upstream::Upstream& upstream, ClientExchange& ex,
                       const store::KeyGrant& grant, std::string_view target,
                       std::span<const upstream::Header> forward_headers) {
  auto in_service = co_await allocation_in_service(gw, ex, grant);
  if (!in_service.status) co_return in_service.keep;
  const ProviderEndpoint* provider = gw.find_provider(grant.provider);
  if (!grant.models.empty()) {
    // The agreement's list, dated by its window's start: the buyer may use these and no other.
    const UnixMicros since = in_service.status->snapshot.terms.window.starts_at;
    std::string body =
        provider != nullptr && provider->kind == config::ProviderKind::anthropic
            ? wire::anthropic_model_list(grant.models, format_rfc3339(since))
            : wire::openai_model_list(grant.models, since / micros_per_second, grant.provider);
    co_return co_await ex.send_json(200, std::move(body));
  }
  if (provider == nullptr) co_return co_await provider_unconfigured(ex, grant);
  auto flow = UnbilledFlow::start(gw, upstream, ex, grant);
  flow.forward_headers = forward_headers;
  const std::string path = provider->base_path + "/models" + std::string(query_of(target));
  co_return co_await flow.unbilled("GET", path);
}

Task<bool> response_object(const Gateway& gw, upstream::Upstream& upstream, ClientExchange& ex,
                           const store::KeyGrant& grant, std::string_view method,
                           std::string_view target) {
  auto in_service = co_await allocation_in_service(gw, ex, grant);
  if (!in_service.status) co_return in_service.keep;
  // The session routed only /v1/responses/{id} and /v1/responses/{id}/input_items here.
  const std::string_view path = target.substr(0, target.find('?'));
  const std::string_view rest = path.substr(wire::responses_prefix.size());
  const std::string id(rest.substr(0, rest.find('/')));
  const std::string_view suffix = rest.substr(id.size());  // "" or "/input_items"
  bool owned = false;
  if (plain_id(id)) {
    auto start = [&gw, &grant, &id](store::Callback<bool> cb) {
      gw.store.owns_provider_request(grant.allocation_id, id, std::move(cb));
    };
    auto asked = co_await await_store<bool>(start);
    if (!asked) co_return co_await ex.send_store_error(asked.error());
    owned = *asked;
  }
  if (!owned)
    co_return co_await ex.send_error(ErrorCode::not_found,
                                     "no such response for this API key's allocation");
  const ProviderEndpoint* provider = gw.find_provider(grant.provider);
  if (provider == nullptr) co_return co_await provider_unconfigured(ex, grant);
  auto flow = UnbilledFlow::start(gw, upstream, ex, grant);
  const std::string upstream_path = provider->base_path + "/responses/" + id + std::string(suffix) +
                                    std::string(query_of(target));
  co_return co_await flow.unbilled(method, upstream_path);
}

}  // namespace cairva::gateway
