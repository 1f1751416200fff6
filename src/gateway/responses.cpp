#include "gateway/responses.h"

#include "core/estimate.h"
#include "gateway/flow.h"
#include "wire/limits.h"
#include "wire/responses_codec.h"
#include "wire/responses_request.h"

namespace cairva::gateway {

using http::Task;
using upstream::ProviderEndpoint;

Task<bool> responses_create(const Gateway& gw, upstream::Upstream& upstream, ClientExchange& ex,
                            const store::KeyGrant& grant, std::string body) {
  auto inspected = wire::inspect_responses_request(body);
  if (!inspected)
    co_return co_await refuse_before_admission(gw, ex, grant, ErrorCode::invalid_request,
                                               inspected.error().message);
  const wire::ResponsesRequest& request = *inspected;
  core::RequestFacts facts;
  facts.input_estimate = core::input_estimate(request.prompt);
  facts.max_completion_tokens = request.max_output_tokens;
  facts.default_max_tokens = gw.config.default_max_tokens;
  // A limit lowered under the API's minimum is refused, never forwarded (SPEC-APIS §2).
  facts.per_choice_min = wire::responses_max_output_tokens_min;
  auto admission =
      co_await admit(gw, ex, grant, request.model, request.service_tier, request.stream, facts);
  if (!admission.admitted) co_return admission.keep;
  const auto& adm = *admission.admitted;

  auto flow = Flow<wire::ResponsesCodec>::start(gw, upstream, ex, grant);
  flow.lowered_to = adm.lowered_to;
  if (!flow.provider) co_return co_await flow.refuse_unconfigured();
  // The provider always receives the limit that was held (SPEC §4), written or not.
  std::string upstream_body =
      wire::responses_rewrite_needed(request, adm.per_choice_limit)
          ? wire::rewrite_responses_request(body, request, adm.per_choice_limit)
          : std::move(body);
  const std::string path = flow.provider->base_path + "/responses";
  co_return co_await flow.run(path, upstream_body, request.stream, false);
}

}  // namespace cairva::gateway
