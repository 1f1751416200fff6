#include "gateway/settle_retry.h"

#include <cstdio>
#include <future>
#include <string>

namespace cairva::gateway {
namespace {

std::string_view kind_name(store::SettleKind k) {
  switch (k) {
    case store::SettleKind::usage:
      return "usage";
    case store::SettleKind::usage_missing:
      return "usage_missing";
    case store::SettleKind::failed:
      return "failed";
    case store::SettleKind::usage_unbooked:
      return "usage_unbooked";
  }
  return "?";
}

// The provider's id as logged: printable ASCII only (it comes from the provider).
std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

void log(const char* what, const store::SettleCommand& cmd, const std::string& detail) {
  std::fprintf(stderr,
               "cairva: settlement %s: request %s allocation %s kind %s provider_request_id \"%s\" "
               "input_tokens %lld output_tokens %lld%s%s\n",
               what, cmd.request_id.c_str(), cmd.allocation_id.c_str(),
               std::string(kind_name(cmd.kind)).c_str(), printable(cmd.provider_request_id).c_str(),
               static_cast<long long>(cmd.usage.input), static_cast<long long>(cmd.usage.output),
               detail.empty() ? "" : ": ", detail.c_str());
}

}  // namespace

SettlementRetry::~SettlementRetry() {
  std::lock_guard lock(mu_);
  for (const auto& cmd : kept_) log("not recorded at exit", cmd, "");
}

bool SettlementRetry::keep(store::SettleCommand cmd, const Error& why) {
  std::lock_guard lock(mu_);
  if (kept_.size() >= kept_settlements_max) {
    log("not kept (retry queue full)", cmd, why.message);
    return false;
  }
  log("kept for retry", cmd, why.message);
  kept_.push_back(std::move(cmd));
  return true;
}

size_t SettlementRetry::size() const {
  std::lock_guard lock(mu_);
  return kept_.size();
}

Result<store::SettleResult> SettlementRetry::settle_now(const store::SettleCommand& cmd) {
  std::promise<Result<store::SettleResult>> answered;
  auto answer = answered.get_future();
  settle_(cmd, [&answered](Result<store::SettleResult> r) { answered.set_value(std::move(r)); });
  return answer.get();
}

void SettlementRetry::retry_all() {
  for (;;) {
    store::SettleCommand cmd;
    {
      std::lock_guard lock(mu_);
      if (kept_.empty()) return;
      cmd = kept_.front();
    }
    auto r = settle_now(cmd);
    if (!r.ok() && r.error().code == ErrorCode::store_unavailable) return;  // still away
    std::lock_guard lock(mu_);
    if (r.ok()) {
      const bool unknown = r->book == core::BookResult::unknown_request;
      log("recorded", cmd,
          unknown ? "unknown request"
                  : "request " + std::string(core::to_string(r->request_state)));
      kept_.pop_front();
    } else if (cmd.kind == store::SettleKind::usage) {
      log("could not be booked; keeping the counts on the request", cmd, r.error().message);
      kept_.front().kind = store::SettleKind::usage_unbooked;
    } else {
      log("dropped", cmd, r.error().message);
      kept_.pop_front();
    }
  }
}

}  // namespace cairva::gateway
