// The shared Store contract suite: every store-visible rule of SPEC §3–§5, §7, §9 checked
// through the Store interface only, with a ManualClock. Each backend instantiates
// StoreContract with its own StoreHarness (sqlite_contract_test.cpp, postgres_contract_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <memory>
#include <string>

#include "base/time.h"
#include "store/store.h"

namespace cairva::contract {

struct StoreHarness {
  virtual ~StoreHarness() = default;
  virtual std::string name() const = 0;
  // A fresh, empty store reading time from `clock` (StoreOptions::use_database_clock = false).
  virtual std::unique_ptr<store::Store> open_fresh(std::shared_ptr<ManualClock> clock,
                                                   store::StoreOptions options) = 0;
  // The same data opened again, as after a process restart (the previous Store object is
  // destroyed first by the test).
  virtual std::unique_ptr<store::Store> reopen(std::shared_ptr<ManualClock> clock,
                                               store::StoreOptions options) = 0;
  // True when reopening turns in_flight requests into usage_pending at once (the embedded
  // store, which owns its file); false when the stale sweep is the rule (PostgreSQL, where
  // other processes may still be running those requests).
  virtual bool marks_in_flight_pending_on_reopen() const { return false; }
};

using HarnessFactory = std::function<std::unique_ptr<StoreHarness>()>;

// Waits for an async Store callback: the callback must run exactly once.
template <class T>
class Await {
 public:
  store::Callback<T> callback() {
    return [this](Result<T> r) { promise_.set_value(std::move(r)); };
  }
  Result<T> get() { return future_.get(); }

 private:
  std::promise<Result<T>> promise_;
  std::future<Result<T>> future_ = promise_.get_future();
};

class StoreContract : public ::testing::TestWithParam<HarnessFactory> {
 protected:
  // Starting time of every test: 2026-01-01T00:00:00Z.
  static constexpr UnixMicros t0_us = 1'767'225'600LL * micros_per_second;

  void SetUp() override;
  void TearDown() override;  // audit must be clean after every test

  store::StoreOptions options() const;
  void reopen();  // destroys the store, then harness->reopen

  // Blocking wrappers over the async calls.
  Result<store::KeyGrant> authenticate(const std::string& secret);
  Result<store::AdmitResult> admit(const store::AdmitCommand& cmd);
  Result<store::SettleResult> settle(const store::SettleCommand& cmd);
  Result<store::AllocationStatus> status(const std::string& allocation_id);
  Status note(const store::CreatedAgreement& a, const std::string& request_id,
              const std::string& provider_request_id);

  // Default agreement: window [t0, t0 + 30 days), limits and allowance from the arguments.
  store::NewAgreement agreement(core::Limits limits, core::Tokens allowance) const;
  store::CreatedAgreement create(core::Limits limits, core::Tokens allowance);
  // An admit command for `alloc` with a fresh request id and the given estimate/max_tokens.
  store::AdmitCommand admit_cmd(const store::CreatedAgreement& a, int64_t input_estimate,
                                int64_t max_tokens);
  // Admits and expects admission; returns the request id.
  std::string admit_ok(const store::CreatedAgreement& a, int64_t input_estimate,
                       int64_t max_tokens);
  // Admits and expects refusal with that reason.
  void expect_refused(const store::CreatedAgreement& a, core::Refusal reason,
                      int64_t input_estimate = 10, int64_t max_tokens = 10);
  Result<store::SettleResult> book(const store::CreatedAgreement& a, const std::string& request_id,
                                   const std::string& provider_request_id, core::Tokens usage);

  std::unique_ptr<StoreHarness> harness;
  std::shared_ptr<ManualClock> clock;
  std::unique_ptr<store::Store> store;
  int next_request = 0;
};

}  // namespace cairva::contract
