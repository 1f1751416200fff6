#include "gateway/flow.h"

namespace cairva::gateway {

using http::Task;

// Admission, the same for every API: the agreement's model list, then the store's decision
// under the allocation's lock. Answers a refusal itself.
Task<Admission> admit(const Gateway& gw, ClientExchange& ex, const store::KeyGrant& grant,
                      const std::string& model, const std::optional<std::string>& service_tier,
                      bool stream, const core::RequestFacts& facts) {
  if (gw.access_log != nullptr) ex.model = model;
  if (!grant.models.empty() &&
      std::find(grant.models.begin(), grant.models.end(), model) == grant.models.end()) {
    co_return Admission{std::nullopt,
                        co_await refuse_before_admission(
                            gw, ex, grant, ErrorCode::model_not_allowed,
                            "model \"" + model + "\" is not in this agreement's models")};
  }
  // A tier beyond auto/default changes the supplier's price: the agreement must allow it (SPEC §2).
  if (service_tier && *service_tier != "auto" && *service_tier != "default" &&
      std::find(grant.service_tiers.begin(), grant.service_tiers.end(), *service_tier) ==
          grant.service_tiers.end()) {
    co_return Admission{std::nullopt, co_await refuse_before_admission(
                                          gw, ex, grant, ErrorCode::invalid_request,
                                          "service_tier \"" + *service_tier +
                                              "\" is not in this agreement's service_tiers")};
  }
  store::AdmitCommand cmd;
  cmd.request_id = ex.request_id;
  cmd.allocation_id = grant.allocation_id;
  cmd.key_id = grant.key_id;
  cmd.model = model;
  cmd.stream = stream;
  cmd.facts = facts;
  auto start_admit = [&gw, &cmd](store::Callback<store::AdmitResult> cb) {
    gw.store.admit(std::move(cmd), std::move(cb));
  };
  const int64_t asked_at = gw.clock.monotonic_micros();
  auto admitted = co_await await_store<store::AdmitResult>(start_admit);
  metrics::registry().observe_store_wait_us(metrics::StoreWait::admit,
                                            gw.clock.monotonic_micros() - asked_at);
  if (!admitted) {
    // invalid_api_key: a key revoked since a provisional grant, refused by the store's
    // admission. Anything else is the store's outage.
    co_return Admission{std::nullopt, co_await ex.send_store_error(admitted.error())};
  }
  ex.rate = admitted->after;
  if (const auto* refused = std::get_if<core::Refused>(&admitted->decision.outcome)) {
    metrics::registry().count_refusal(refused->reason);
    co_return Admission{std::nullopt,
                        co_await ex.send_error(refused->code, refused->message, refused->limit,
                                               refused->retry_after_s, refused->retry_after_ms)};
  }
  metrics::registry().count_admitted();
  co_return Admission{std::get<core::Admitted>(admitted->decision.outcome), false};
}

Task<bool> refuse_before_admission(const Gateway& gw, ClientExchange& ex,
                                   const store::KeyGrant& grant, ErrorCode code,
                                   std::string_view message) {
  if (grant.provisional) {
    const std::string hash(ex.key_hash);
    auto start = [&gw, &hash](store::Callback<store::KeyGrant> cb) {
      gw.store.authenticate(hash, std::move(cb));
    };
    auto fresh = co_await await_store<store::KeyGrant>(start);
    // A key revoked since is 401; a store that cannot say is 503, never 401.
    if (!fresh) co_return co_await ex.send_store_error(fresh.error());
  }
  auto start = [&gw, &grant](store::Callback<store::AllocationStatus> cb) {
    gw.store.allocation_status(grant.allocation_id, std::move(cb));
  };
  auto status = co_await await_store<store::AllocationStatus>(start);
  if (status) ex.rate = status->snapshot;
  co_return co_await ex.send_error(code, message);
}

}  // namespace cairva::gateway
