#include "store/validate.h"

#include <algorithm>
#include <tuple>

#include "base/ids.h"

namespace cairva::store {
namespace {
Error invalid(std::string message) {
  return make_error(ErrorCode::invalid_request, std::move(message));
}
}  // namespace

Status validate_new_agreement(const NewAgreement& a, const std::vector<std::string>& providers) {
  if (a.supplier.empty()) return invalid("supplier: must be a non-empty string");
  if (a.buyer.empty()) return invalid("buyer: must be a non-empty string");
  if (std::find(providers.begin(), providers.end(), a.provider) == providers.end()) {
    return invalid("provider: unknown provider: " + a.provider);
  }
  const auto& t = a.terms;
  if (t.window.ends_at <= t.window.starts_at) return invalid("ends_at: must be after starts_at");
  if (t.limits.requests_per_minute <= 0) return invalid("requests_per_minute: must be positive");
  if (t.limits.tokens_per_minute <= 0) return invalid("tokens_per_minute: must be positive");
  if (t.limits.max_concurrency <= 0) return invalid("max_concurrency: must be positive");
  if (t.allowance.input <= 0) return invalid("input_tokens: must be positive");
  if (t.allowance.output <= 0) return invalid("output_tokens: must be positive");
  for (const auto& m : a.models) {
    if (m.empty()) return invalid("models: model names must be non-empty");
  }
  for (const auto& t : a.service_tiers) {
    if (t.empty()) return invalid("service_tiers: tier names must be non-empty");
  }
  return {};
}

std::string redacted_store_url(std::string_view url) {
  std::string out(url);
  const auto scheme_end = out.find("://");
  if (scheme_end != std::string::npos) {
    const auto authority = scheme_end + 3;
    const auto at = out.find('@', authority);
    const auto slash = out.find('/', authority);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      const auto colon = out.find(':', authority);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  for (size_t pos = out.find("password="); pos != std::string::npos;
       pos = out.find("password=", pos + 1)) {
    const auto value = pos + std::string_view("password=").size();
    const auto end = out.find('&', value);
    out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
  }
  return out;
}

AgreementRow new_agreement_row(const NewAgreement& a, UnixMicros now) {
  AgreementRow row{new_id("agr"),
                   a.supplier,
                   a.buyer,
                   a.provider,
                   a.models,
                   a.terms,
                   core::AgreementState::in_force,
                   now};
  row.service_tiers = a.service_tiers;
  return row;
}

Result<core::Tokens> reconciled_usage(const Reconciliation& r,
                                      const std::optional<core::ReportedUsage>& reported) {
  if (!r.use_reported) return r.usage;
  if (!reported) {
    return make_error(ErrorCode::invalid_request,
                      "request " + r.request_id + " has no reported usage to book");
  }
  return reported->counts;
}

Status check_hold_ratio(const core::Tokens& usage, const core::Tokens& hold, bool force) {
  if (force) return {};
  for (const auto& [name, used, held] : {std::tuple{"input_tokens", usage.input, hold.input},
                                         std::tuple{"output_tokens", usage.output, hold.output}}) {
    if (used <= held * reconcile_hold_ratio_max) continue;
    std::string ratio = "more than " + std::to_string(reconcile_hold_ratio_max) + "x";
    if (held > 0) {
      const int64_t tenths = used * 10 / held;  // both below 2^53: no overflow
      ratio = std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + "x";
    }
    return invalid(std::string(name) + " " + std::to_string(used) + " is " + ratio +
                   " the request's hold of " + std::to_string(held) +
                   ", above reconcile_hold_ratio_max (" + std::to_string(reconcile_hold_ratio_max) +
                   "x): send \"force\": true (--force) if the counts are right");
  }
  return {};
}

}  // namespace cairva::store
