// A test-only in-memory Store with just enough admin behaviour to test AdminApi's routing,
// validation and rendering. The real semantics are the backends' (tests/contract).
#pragma once

#include <algorithm>
#include <map>

#include "base/ids.h"
#include "store/store.h"
#include "store/validate.h"

namespace cairva::store::testing {

class FakeStore final : public store::Store {
 public:
  explicit FakeStore(std::vector<std::string> providers) : providers_(std::move(providers)) {}

  // Test hooks.
  void add_request(const store::RequestRow& r) { requests_[r.id] = r; }
  void add_conflict(const store::ConflictRow& c) { conflicts_.push_back(c); }
  void set_depleted(const std::string& allocation_id) {
    allocations_[allocation_id].snapshot.state = core::AllocationState::depleted;
  }
  bool fail_everything = false;  // every admin call answers store_unavailable
  store::RequestFilter last_request_filter;
  store::EventFilter last_event_filter;
  store::UsageQuery last_usage_query;

  void authenticate(const std::string&, store::Callback<store::KeyGrant> done) override {
    done(make_error(ErrorCode::invalid_api_key, "fake"));
  }
  void admit(store::AdmitCommand, store::Callback<store::AdmitResult> done) override {
    done(make_error(ErrorCode::store_unavailable, "fake"));
  }
  void settle(store::SettleCommand, store::Callback<store::SettleResult> done) override {
    done(make_error(ErrorCode::store_unavailable, "fake"));
  }
  void allocation_status(const std::string& id,
                         store::Callback<store::AllocationStatus> done) override {
    done(get_allocation(id));
  }
  void owns_provider_request(const std::string&, const std::string&,
                             store::Callback<bool> done) override {
    done(make_error(ErrorCode::store_unavailable, "fake"));
  }
  void note_provider_id(store::ProviderIdNote, store::Callback<void> done) override {
    if (done) done(make_error(ErrorCode::store_unavailable, "fake"));
  }

  Result<store::CreatedAgreement> create_agreement(const store::NewAgreement& a) override {
    if (fail_everything) return down();
    if (std::find(providers_.begin(), providers_.end(), a.provider) == providers_.end()) {
      return make_error(ErrorCode::invalid_request,
                        "provider " + a.provider + " is not configured");
    }
    store::AgreementRow row = store::new_agreement_row(a, 1);
    agreements_[row.id] = row;
    store::AllocationStatus alloc;
    alloc.id = new_id("alloc");
    alloc.agreement_id = row.id;
    alloc.snapshot.terms = a.terms;
    allocations_[alloc.id] = alloc;
    auto key = create_key(alloc.id);
    return store::CreatedAgreement{row, alloc, key->key_id, key->key_secret};
  }
  Result<store::AgreementRow> get_agreement(const std::string& id) override {
    if (fail_everything) return down();
    auto it = agreements_.find(id);
    if (it == agreements_.end()) return missing(id);
    return it->second;
  }
  Result<store::AgreementRow> cancel_agreement(const std::string& id) override {
    if (fail_everything) return down();
    auto it = agreements_.find(id);
    if (it == agreements_.end()) return missing(id);
    it->second.state = core::AgreementState::cancelled;
    return it->second;
  }
  Result<std::vector<store::AllocationStatus>> list_allocations() override {
    if (fail_everything) return down();
    std::vector<store::AllocationStatus> out;
    for (const auto& [id, a] : allocations_) out.push_back(a);
    return out;
  }
  Result<store::AllocationStatus> get_allocation(const std::string& id) override {
    if (fail_everything) return down();
    auto it = allocations_.find(id);
    if (it == allocations_.end()) return missing(id);
    return it->second;
  }
  Result<store::AllocationStatus> suspend_allocation(const std::string& id) override {
    if (fail_everything) return down();
    auto it = allocations_.find(id);
    if (it == allocations_.end()) return missing(id);
    auto& s = it->second.snapshot.state;
    if (s == core::AllocationState::depleted || s == core::AllocationState::expired) {
      return make_error(ErrorCode::conflict,
                        "allocation " + id + " is " + std::string(core::to_string(s)));
    }
    s = core::AllocationState::suspended;
    return it->second;
  }
  Result<store::AllocationStatus> resume_allocation(const std::string& id) override {
    if (fail_everything) return down();
    auto it = allocations_.find(id);
    if (it == allocations_.end()) return missing(id);
    it->second.snapshot.state = core::AllocationState::active;
    return it->second;
  }
  Result<store::CreatedKey> create_key(const std::string& allocation_id) override {
    if (fail_everything) return down();
    if (!allocations_.count(allocation_id)) return missing(allocation_id);
    store::ApiKeyRow k{new_id("key"), allocation_id, false};
    keys_[k.id] = k;
    return store::CreatedKey{k.id, new_secret()};
  }
  Result<store::ApiKeyRow> revoke_key(const std::string& key_id) override {
    if (fail_everything) return down();
    auto it = keys_.find(key_id);
    if (it == keys_.end()) return missing(key_id);
    it->second.revoked = true;
    return it->second;
  }
  Result<store::Paged<store::RequestRow>> list_requests(const store::RequestFilter& f) override {
    if (fail_everything) return down();
    last_request_filter = f;
    store::Paged<store::RequestRow> out;
    for (const auto& [id, r] : requests_) {
      if (f.allocation_id && r.allocation_id != *f.allocation_id) continue;
      if (f.state && r.state != *f.state) continue;
      if (out.data.size() < f.limit) {
        out.data.push_back(r);
      } else {
        out.has_more = true;
      }
    }
    return out;
  }
  Result<store::RequestRow> get_request(const std::string& id) override {
    if (fail_everything) return down();
    auto it = requests_.find(id);
    if (it == requests_.end()) return missing(id);
    return it->second;
  }
  Result<store::UsageEventRow> reconcile(const store::Reconciliation& r) override {
    if (fail_everything) return down();
    auto it = requests_.find(r.request_id);
    if (it == requests_.end()) return missing(r.request_id);
    if (it->second.state != core::RequestState::usage_pending) {
      return make_error(ErrorCode::not_pending,
                        "request " + r.request_id + " is not usage_pending");
    }
    if (r.use_reported && !it->second.reported_usage)
      return make_error(ErrorCode::invalid_request, "no reported usage");
    it->second.state = core::RequestState::booked;
    store::UsageEventRow e{new_id("evt"),
                           it->second.allocation_id,
                           r.request_id,
                           r.request_id,
                           r.use_reported ? it->second.reported_usage->counts : r.usage,
                           core::EventSource::reconciliation,
                           core::Finality::confirmed,
                           r.evidence,
                           2};
    events_.push_back(e);
    return e;
  }
  Result<store::Paged<store::UsageEventRow>> list_events(const store::EventFilter& f) override {
    if (fail_everything) return down();
    last_event_filter = f;
    store::Paged<store::UsageEventRow> out;
    bool past_after = !f.after.has_value();
    for (const auto& e : events_) {
      if (!past_after) {
        past_after = e.id == *f.after;
        continue;
      }
      if (f.allocation_id && e.allocation_id != *f.allocation_id) continue;
      if (out.data.size() < f.limit) {
        out.data.push_back(e);
      } else {
        out.has_more = true;
      }
    }
    return out;
  }
  Result<store::Paged<store::ConflictRow>> list_conflicts(const store::ConflictFilter& f) override {
    if (fail_everything) return down();
    store::Paged<store::ConflictRow> out;
    for (const auto& c : conflicts_) {
      if (!f.allocation_id || c.allocation_id == *f.allocation_id) out.data.push_back(c);
    }
    return out;
  }
  Result<store::Paged<store::AgreementRow>> list_agreements(const store::PageFilter&) override {
    if (fail_everything) return down();
    store::Paged<store::AgreementRow> out;
    for (const auto& [id, a] : agreements_) out.data.push_back(a);
    return out;
  }
  Result<store::Paged<store::AllocationStatus>> list_allocations_page(
      const store::AllocationFilter& f) override {
    if (fail_everything) return down();
    last_allocation_filter = f;
    store::Paged<store::AllocationStatus> out;
    for (const auto& [id, a] : allocations_) {
      const auto agr = agreements_.find(a.agreement_id);
      if (f.state && a.snapshot.state != *f.state) continue;
      if (f.supplier && (agr == agreements_.end() || agr->second.supplier != *f.supplier)) continue;
      if (f.buyer && (agr == agreements_.end() || agr->second.buyer != *f.buyer)) continue;
      out.data.push_back(a);
    }
    return out;
  }
  store::AllocationFilter last_allocation_filter;  // what the last listing asked
  Result<store::Paged<store::ApiKeyRow>> list_keys(const std::string& allocation_id,
                                                   const store::PageFilter&) override {
    if (fail_everything) return down();
    if (!allocations_.count(allocation_id)) return missing(allocation_id);
    store::Paged<store::ApiKeyRow> out;
    for (const auto& [id, k] : keys_) {
      if (k.allocation_id == allocation_id) out.data.push_back(k);
    }
    return out;
  }
  void usage_series(store::UsageQuery q, store::Callback<store::UsageSeries> done) override {
    if (fail_everything) return done(down());
    last_usage_query = q;
    if (!allocations_.count(q.allocation_id)) return done(missing(q.allocation_id));
    store::UsageSeries s{q.allocation_id, {}};
    for (UnixMicros t = q.from; t < q.to; t += q.bucket_us) s.buckets.push_back({t, {}, 0, 0, 0});
    done(s);
  }
  Result<std::vector<store::BookedMatch>> find_bookings(const std::optional<std::string>&,
                                                        const std::string&) override {
    if (fail_everything) return down();
    return std::vector<store::BookedMatch>{};
  }
  Result<std::vector<store::RequestRow>> find_pending(const std::optional<std::string>&,
                                                      const std::string&) override {
    if (fail_everything) return down();
    return std::vector<store::RequestRow>{};
  }
  Result<int64_t> record_conflicts(std::vector<store::ConflictRow> rows) override {
    if (fail_everything) return down();
    for (auto& c : rows) conflicts_.push_back(c);
    return static_cast<int64_t>(rows.size());
  }
  Result<store::UsageEventRow> adjust(const store::Adjustment& a) override {
    if (fail_everything) return down();
    for (const auto& e : events_) {
      if (e.id != a.event_id) continue;
      store::UsageEventRow out = e;
      out.id = new_id("evt");
      out.tokens = a.delta;
      out.source = core::EventSource::adjustment;
      out.finality = core::Finality::confirmed;
      out.evidence = a.evidence;
      out.corrects = e.id;
      events_.push_back(out);
      return out;
    }
    return missing(a.event_id);
  }
  Result<int64_t> sweep_stale() override { return int64_t{0}; }
  Result<store::AuditReport> audit() override { return store::AuditReport{}; }

 private:
  static Error missing(const std::string& id) {
    return make_error(ErrorCode::not_found, "no such id: " + id);
  }
  static Error down() { return make_error(ErrorCode::store_unavailable, "store down"); }

  std::vector<std::string> providers_;
  std::map<std::string, store::AgreementRow> agreements_;
  std::map<std::string, store::AllocationStatus> allocations_;
  std::map<std::string, store::ApiKeyRow> keys_;
  std::map<std::string, store::RequestRow> requests_;
  std::vector<store::UsageEventRow> events_;
  std::vector<store::ConflictRow> conflicts_;
};

}  // namespace cairva::store::testing
