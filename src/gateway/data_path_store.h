#pragma once
// A base for the gateway's in-process flow tests' store fakes: every operation the data
// path never calls (the admin API's) fails with "not in this fake", so each fake spells out
// only the data path it scripts.
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "store/store.h"

namespace cairva::gateway {

class DataPathStore : public store::Store {
 public:
  Result<store::CreatedAgreement> create_agreement(const store::NewAgreement&) override {
    return no();
  }
  Result<store::AgreementRow> get_agreement(const std::string&) override { return no(); }
  Result<store::AgreementRow> cancel_agreement(const std::string&) override { return no(); }
  Result<std::vector<store::AllocationStatus>> list_allocations() override { return no(); }
  Result<store::AllocationStatus> get_allocation(const std::string&) override { return no(); }
  Result<store::AllocationStatus> suspend_allocation(const std::string&) override { return no(); }
  Result<store::AllocationStatus> resume_allocation(const std::string&) override { return no(); }
  Result<store::CreatedKey> create_key(const std::string&) override { return no(); }
  Result<store::ApiKeyRow> revoke_key(const std::string&) override { return no(); }
  Result<store::Paged<store::RequestRow>> list_requests(const store::RequestFilter&) override {
    return no();
  }
  Result<store::RequestRow> get_request(const std::string&) override { return no(); }
  Result<store::UsageEventRow> reconcile(const store::Reconciliation&) override { return no(); }
  Result<store::Paged<store::UsageEventRow>> list_events(const store::EventFilter&) override {
    return no();
  }
  Result<store::Paged<store::ConflictRow>> list_conflicts(const store::ConflictFilter&) override {
    return no();
  }
  Result<store::Paged<store::AgreementRow>> list_agreements(const store::PageFilter&) override {
    return no();
  }
  Result<store::Paged<store::AllocationStatus>> list_allocations_page(
      const store::AllocationFilter&) override {
    return no();
  }
  Result<store::Paged<store::ApiKeyRow>> list_keys(const std::string&,
                                                   const store::PageFilter&) override {
    return no();
  }
  void usage_series(store::UsageQuery, store::Callback<store::UsageSeries> done) override {
    done(no());
  }
  Result<std::vector<store::BookedMatch>> find_bookings(const std::optional<std::string>&,
                                                        const std::string&) override {
    return no();
  }
  Result<std::vector<store::RequestRow>> find_pending(const std::optional<std::string>&,
                                                      const std::string&) override {
    return no();
  }
  Result<int64_t> record_conflicts(std::vector<store::ConflictRow>) override { return no(); }
  Result<store::UsageEventRow> adjust(const store::Adjustment&) override { return no(); }
  Result<int64_t> sweep_stale() override { return no(); }
  Result<store::AuditReport> audit() override { return no(); }

 protected:
  static Error no() { return make_error(ErrorCode::internal_error, "not in this fake"); }
};

}  // namespace cairva::gateway
