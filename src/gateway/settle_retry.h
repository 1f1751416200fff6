// SettlementRetry: settlements the store could not record, kept in this process and
// settled again until the store answers (docs/operations.md, "When the store cannot
// record a settlement"). A settlement repeated writes nothing twice (core/settlement.h),
// so one the store did record after all is harmless to repeat.
//
// What it does with each kept settlement, oldest first, on every retry_all():
//  - recorded (any outcome): logged and dropped;
//  - store_unavailable: kept, and the round ends (the store is still away);
//  - any other error (the store answered but refused it): a usage report is settled as
//    usage_unbooked instead (usage_pending, hold kept, the counts kept on the request for
//    an operator to book); the other kinds are logged and dropped (the stale sweep makes
//    the request usage_pending, its hold kept).
// Every kept, recorded or dropped settlement is logged to stderr with its counts, so an
// operator has the provider's report even if this process dies before the store returns.
//
// Thread safety: keep() from any thread; retry_all() from one thread that may block.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

#include "store/store.h"

namespace cairva::gateway {

// Settlements kept at most. Admissions fail while the store is away, so what waits is the
// settlements of requests in flight when it went: a few per allowed concurrent request.
// Past it a settlement is logged (its counts are evidence) and not kept.
inline constexpr size_t kept_settlements_max = 16384;

class SettlementRetry {
 public:
  using Settle = std::function<void(store::SettleCommand, store::Callback<store::SettleResult>)>;
  explicit SettlementRetry(Settle settle) : settle_(std::move(settle)) {}
  // Logs what is still kept: those settlements are not recorded.
  ~SettlementRetry();

  // Keeps `cmd`, which failed with `why`; false (and logged) when full.
  bool keep(store::SettleCommand cmd, const Error& why);
  // Settles the kept ones again, as the file comment says. Blocks on the store.
  void retry_all();
  size_t size() const;

 private:
  Result<store::SettleResult> settle_now(const store::SettleCommand& cmd);

  const Settle settle_;
  mutable std::mutex mu_;
  std::deque<store::SettleCommand> kept_;  // GUARDED_BY(mu_)
};

}  // namespace cairva::gateway
