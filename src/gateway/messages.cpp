#include "gateway/messages.h"

#include <algorithm>
#include <array>
#include <span>

#include "core/estimate.h"
#include "gateway/flow.h"
#include "gateway/store_await.h"
#include "wire/messages_codec.h"
#include "wire/messages_request.h"

namespace cairva::gateway {
namespace {

using http::Task;
using upstream::ProviderEndpoint;
using MessagesFlow = Flow<wire::MessagesCodec>;

// The client's fields the provider gets (SPEC-APIS §1): anthropic-version always,
// anthropic-beta when sent. The buyer's key never: the supplier's goes in x-api-key.
struct ForwardedFields {
  std::array<upstream::Header, 2> headers;
  size_t count = 0;

  explicit ForwardedFields(AnthropicFields f) {
    headers[count++] = {"anthropic-version",
                        f.version.empty() ? anthropic_version_default : f.version};
    if (!f.beta.empty()) headers[count++] = {"anthropic-beta", f.beta};
  }
  std::span<const upstream::Header> span() const { return {headers.data(), count}; }
};

MessagesFlow make_flow(const Gateway& gw, upstream::Upstream& upstream, ClientExchange& ex,
                       const store::KeyGrant& grant, const ForwardedFields& fields) {
  MessagesFlow flow{gw, upstream, ex, grant, gw.find_provider(grant.provider)};
  flow.deadline_mono =
      gw.clock.monotonic_micros() + gw.config.in_flight_timeout_s * micros_per_second;
  flow.forward_headers = fields.span();
  return flow;
}

std::string unconfigured(const store::KeyGrant& grant) {
  return "provider \"" + grant.provider + "\" is not configured";
}

// Forwards a call that books nothing and passes its answer on: the provider's status and
// body, its errors as relay_error gives them (supplier-account errors replaced).
Task<bool> forward_unbilled(MessagesFlow& flow, std::string_view path, std::string_view body) {
  ClientExchange& ex = flow.ex;
  auto sent = co_await flow.send(path, body);
  if (!sent) co_return co_await ex.send_error(sent.error().code, sent.error().message);
  upstream::Response& res = *flow.res;
  res.expires_after(flow.until_deadline());
  auto read = res.body_buffered(http::provider_body_bytes_max);
  if (!read) {
    const auto outcome = co_await res.read_body();
    read = res.status_of(outcome);
  }
  if (!flow_detail::is_2xx(res.status())) co_return co_await flow.relay_error(*read);
  if (*read != upstream::ReadStatus::ok) {
    flow.release(false);
    co_return co_await ex.send_error(
        ErrorCode::provider_unavailable,
        flow_detail::unread_body_message(*read, "provider response was cut off"));
  }
  auto head = flow.client_head();
  std::string answer = std::move(res.body());
  flow.release(res.keep_alive());
  co_return co_await ex.send_json(std::move(head), std::move(answer));
}

}  // namespace

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

  const ForwardedFields forwarded(fields);
  MessagesFlow flow = make_flow(gw, upstream, ex, grant, forwarded);
  flow.lowered_to = adm.lowered_to;
  if (!flow.provider) {
    co_await flow.settle(store::SettleKind::failed);
    co_return co_await ex.send_error(ErrorCode::provider_unavailable, unconfigured(grant));
  }
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
  auto start = [&gw, &grant](store::Callback<store::AllocationStatus> cb) {
    gw.store.allocation_status(grant.allocation_id, std::move(cb));
  };
  auto status = co_await await_store<store::AllocationStatus>(start);
  if (!status) co_return co_await ex.send_store_error(status.error());
  ex.rate = status->snapshot;
  if (const auto refused = core::refuse_by_state(status->snapshot, gw.clock.now())) {
    co_return co_await ex.send_error(refused->code, refused->message);
  }

  const ForwardedFields forwarded(fields);
  MessagesFlow flow = make_flow(gw, upstream, ex, grant, forwarded);
  if (!flow.provider)
    co_return co_await ex.send_error(ErrorCode::provider_unavailable, unconfigured(grant));
  const std::string path =
      flow.provider->base_path + "/messages/count_tokens" + std::string(fields.query);
  co_return co_await forward_unbilled(flow, path, body);
}

}  // namespace cairva::gateway
