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

  auto flow = Flow<wire::EmbeddingsCodec>::start(gw, upstream, ex, grant);
  if (!flow.provider) co_return co_await flow.refuse_unconfigured();
  // No limit field to write: the body goes as the client sent it.
  const std::string path = flow.provider->base_path + "/embeddings";
  co_return co_await flow.run(path, body, false, false);
}

}  // namespace cairva::gateway
