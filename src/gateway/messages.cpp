#include "gateway/messages.h"

#include <algorithm>

#include "core/estimate.h"
#include "gateway/flow.h"
#include "gateway/passthrough.h"
#include "wire/messages_codec.h"
#include "wire/messages_request.h"

namespace cairva::gateway {
namespace {

using http::Task;
using upstream::ProviderEndpoint;
using MessagesFlow = Flow<wire::MessagesCodec>;

MessagesFlow make_flow(const Gateway& gw, upstream::Upstream& upstream, ClientExchange& ex,
                       const store::KeyGrant& grant, const AnthropicHeaders& headers) {
  MessagesFlow flow = MessagesFlow::start(gw, upstream, ex, grant);
  flow.forward_headers = headers.span();
  return flow;
}

}  // namespace

AnthropicHeaders::AnthropicHeaders(AnthropicFields fields) {
  headers_[count_++] = {"anthropic-version",
                        fields.version.empty() ? anthropic_version_default : fields.version};
  if (!fields.beta.empty()) headers_[count_++] = {"anthropic-beta", fields.beta};
}

Task<bool> messages_create(const Gateway& gw, upstream::Upstream& upstream, ClientExchange& ex,
                           const store::KeyGrant& grant, std::string body, AnthropicFields fields) {
  auto inspected = wire::inspect_messages_request(body);
  if (!inspected)
    co_return co_await refuse_before_admission(gw, ex, grant, ErrorCode::invalid_request,
                                               inspected.error().message);
  const wire::MessagesRequest& request = *inspected;
  core::RequestFacts facts;
  facts.input_estimate = core::input_estimate(request.prompt);
  facts.max_tokens = request.max_tokens;
  facts.default_max_tokens = gw.config.default_max_tokens;
  // A thinking budget the rewrite could not keep valid is refused in admission (402, and
  // counted toward no limit), never forwarded for the provider to reject (SPEC-APIS §2).
  facts.per_choice_min = wire::messages_per_choice_min(request);
  auto admission =
      co_await admit(gw, ex, grant, request.model, request.service_tier, request.stream, facts);
  if (!admission.admitted) co_return admission.keep;
  const auto& adm = *admission.admitted;

  const AnthropicHeaders forwarded(fields);
  MessagesFlow flow = make_flow(gw, upstream, ex, grant, forwarded);
  flow.lowered_to = adm.lowered_to;
  if (!flow.provider) co_return co_await flow.refuse_unconfigured();
  // The provider always receives the limit that was held (SPEC §4).
  std::string upstream_body =
      wire::messages_rewrite_needed(request, adm.per_choice_limit)
          ? wire::rewrite_messages_request(body, request, adm.per_choice_limit)
          : std::move(body);
  const std::string path = flow.provider->base_path + "/messages" + std::string(fields.query);
  co_return co_await flow.run(path, upstream_body, request.stream, /*client_wants_usage=*/false);
}

Task<bool> messages_count_tokens(const Gateway& gw, upstream::Upstream& upstream,
                                 ClientExchange& ex, const store::KeyGrant& grant, std::string body,
                                 AnthropicFields fields) {
  auto inspected = wire::inspect_messages_request(body, wire::MessagesCall::count_tokens);
  if (!inspected)
    co_return co_await refuse_before_admission(gw, ex, grant, ErrorCode::invalid_request,
                                               inspected.error().message);
  const std::string& model = inspected->model;
  if (!grant.models.empty() &&
      std::find(grant.models.begin(), grant.models.end(), model) == grant.models.end()) {
    co_return co_await refuse_before_admission(
        gw, ex, grant, ErrorCode::model_not_allowed,
        "model \"" + model + "\" is not in this agreement's models");
  }
  // The allocation's state as admission's first check sees it (SPEC-APIS §3): nothing else
  // of admission applies, and nothing is recorded.
  auto in_service = co_await allocation_in_service(gw, ex, grant);
  if (!in_service.status) co_return in_service.keep;

  const AnthropicHeaders forwarded(fields);
  MessagesFlow flow = make_flow(gw, upstream, ex, grant, forwarded);
  if (!flow.provider)
    co_return co_await ex.send_error(ErrorCode::provider_unavailable, unconfigured_message(grant));
  const std::string path =
      flow.provider->base_path + "/messages/count_tokens" + std::string(fields.query);
  co_return co_await flow.unbilled("POST", path, body);
}

}  // namespace cairva::gateway
