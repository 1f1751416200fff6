#include "gateway/embeddings.h"

#include "core/estimate.h"
#include "gateway/flow.h"
#include "wire/embeddings_codec.h"
#include "wire/embeddings_request.h"

namespace cairva::gateway {

using http::Task;
using upstream::ProviderEndpoint;

Task<bool> embeddings_create(const Gateway& gw, upstream::Upstream& upstream, ClientExchange& ex,
                             const store::KeyGrant& grant, std::string body) {
  auto inspected = wire::inspect_embeddings_request(body);
  if (!inspected)
    co_return co_await refuse_before_admission(gw, ex, grant, ErrorCode::invalid_request,
                                               inspected.error().message);
  core::RequestFacts facts;
  facts.input_estimate = core::input_estimate(inspected->prompt);
  facts.holds_output = false;  // an embedding produces no output: none held, none needed
  auto admission = co_await admit(gw, ex, grant, inspected->model, std::nullopt, false, facts);
  if (!admission.admitted) co_return admission.keep;

  const ProviderEndpoint* provider = gw.find_provider(grant.provider);
  Flow<wire::EmbeddingsCodec> flow{gw, upstream, ex, grant, provider};
  flow.deadline_mono =
      gw.clock.monotonic_micros() + gw.config.in_flight_timeout_s * micros_per_second;
  if (!provider) {
    co_await flow.settle(store::SettleKind::failed);
    co_return co_await ex.send_error(ErrorCode::provider_unavailable,
                                     "provider \"" + grant.provider + "\" is not configured");
  }
  // No limit field to write: the body goes as the client sent it.
  const std::string path = provider->base_path + "/embeddings";
  co_return co_await flow.run(path, body, false, false);
}

}  // namespace cairva::gateway
