#include "gateway/chat.h"

#include "core/estimate.h"
#include "gateway/flow.h"
#include "wire/chat_request.h"

namespace cairva::gateway {

using http::Task;
using upstream::ProviderEndpoint;

Task<bool> chat_completion(const Gateway& gw, upstream::Upstream& upstream, ClientExchange& ex,
                           const store::KeyGrant& grant, std::string body) {
  auto inspected = wire::inspect_chat_request(body);
  if (!inspected)
    co_return co_await refuse_before_admission(gw, ex, grant, ErrorCode::invalid_request,
                                               inspected.error().message);
  const wire::ChatRequest& chat = *inspected;
  const core::RequestFacts facts{core::input_estimate(chat.prompt), chat.max_completion_tokens,
                                 chat.max_tokens, chat.n, gw.config.default_max_tokens};
  auto admission = co_await admit(gw, ex, grant, chat.model, chat.service_tier, chat.stream, facts);
  if (!admission.admitted) co_return admission.keep;
  const auto& adm = *admission.admitted;

  auto flow = Flow<wire::ChatCodec>::start(gw, upstream, ex, grant);
  flow.lowered_to = adm.lowered_to;
  if (!flow.provider) co_return co_await flow.refuse_unconfigured();
  wire::RewritePlan plan;
  plan.per_choice_limit = adm.per_choice_limit;  // what was held, lowered or not (SPEC §4)
  for (const config::Provider& p : gw.config.providers) {
    if (p.name == grant.provider) plan.limit_field = p.limit_field;
  }
  plan.include_usage = chat.stream && !chat.include_usage;
  std::string upstream_body = wire::rewrite_needed(chat, plan)
                                  ? wire::rewrite_chat_request(body, chat, plan)
                                  : std::move(body);
  co_return co_await flow.run(flow.provider->chat_path, upstream_body, chat.stream,
                              chat.include_usage);
}

}  // namespace cairva::gateway
