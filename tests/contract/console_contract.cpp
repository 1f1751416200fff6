// The Store contract for operating at volume (SPEC-CONSOLE §1–§4b): listings in pages that
// stay complete while rows are added, usage series, bulk reconciliation, adjustments.
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "base/ids.h"
#include "store/bulk_reconcile.h"
#include "store/usage_series.h"
#include "store/validate.h"
#include "store_contract.h"

namespace cairva::contract {

using core::AllocationState;
using core::RequestState;
using core::Tokens;
using store::BulkOutcome;
using store::SettleKind;

namespace {

constexpr int64_t minute_us = 60 * micros_per_second;
constexpr int64_t hour_us = 60 * minute_us;

std::vector<std::string> ids_of(const auto& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.id);
  return out;
}

// Follows a listing from its start to has_more == false, `limit` rows a page.
template <class T, class Fetch>
std::vector<T> follow(Fetch fetch, size_t limit) {
  std::vector<T> out;
  std::optional<std::string> after;
  for (int pages = 0; pages < 10000; ++pages) {
    auto page = fetch(after, limit);
    EXPECT_TRUE(page.ok()) << page.error().message;
    if (!page.ok()) return out;
    EXPECT_LE(page->data.size(), limit);
    for (auto& r : page->data) {
      after = r.id;
      out.push_back(std::move(r));
    }
    if (!page->has_more) return out;
    EXPECT_FALSE(page->data.empty()) << "has_more with an empty page";
  }
  ADD_FAILURE() << "the listing never ended";
  return out;
}

}  // namespace

// ---------------------------------------------------------------- §1 paging

TEST_P(StoreContract, AgreementsAndAllocationsPageInCreationOrder) {
  std::vector<store::CreatedAgreement> made;
  for (int i = 0; i < 5; ++i) {
    made.push_back(create({10, 1000, 2}, {500, 500}));
    clock->advance_micros(i % 2);  // ties of created_at are still ordered
  }
  auto agreements = follow<store::AgreementRow>(
      [&](auto after, size_t limit) {
        return store->list_agreements({after, limit});
      },
      2);
  auto allocations = follow<store::AllocationStatus>(
      [&](auto after, size_t limit) {
        return store->list_allocations_page({.after = after, .limit = limit});
      },
      2);
  ASSERT_EQ(agreements.size(), 5u);
  ASSERT_EQ(allocations.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(agreements[i].id, made[i].agreement.id);
    EXPECT_EQ(allocations[i].id, made[i].allocation.id);
    EXPECT_EQ(allocations[i].agreement_id, made[i].agreement.id);
  }
  auto one = store->list_agreements({std::nullopt, 5});
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one->has_more);
  auto unknown = store->list_allocations_page({.after = std::string("alloc_nope"), .limit = 2});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::invalid_request);
  EXPECT_EQ(store->list_agreements({std::string("agr_nope"), 2}).error().code,
            ErrorCode::invalid_request);
}

// The console's allocations table filters on the server (SPEC-CONSOLE §5): by the effective
// state, the supplier and the buyer, each exact, paged like the unfiltered listing.
TEST_P(StoreContract, AllocationsFilterByStateSupplierAndBuyerAcrossPages) {
  std::vector<store::CreatedAgreement> made;
  for (int i = 0; i < 9; ++i) {
    auto n = agreement({10, 1000, 2}, {100, 100});
    n.supplier = i % 3 == 0 ? "acme" : "globex";
    n.buyer = i % 2 == 0 ? "initech" : "Initech";
    auto c = store->create_agreement(n);
    ASSERT_TRUE(c.ok()) << c.error().message;
    made.push_back(std::move(c).value());
  }
  ASSERT_TRUE(store->suspend_allocation(made[1].allocation.id).ok());
  ASSERT_TRUE(store->suspend_allocation(made[6].allocation.id).ok());
  const auto id = admit_ok(made[4], 10, 10);
  ASSERT_TRUE(book(made[4], id, "p-deplete", {100, 100}).ok());  // depleted: an effective state

  auto listed = [&](store::AllocationFilter f, size_t limit) {
    return ids_of(follow<store::AllocationStatus>(
        [&](auto after, size_t n) {
          f.after = after;
          f.limit = n;
          return store->list_allocations_page(f);
        },
        limit));
  };
  auto ids = [&](std::initializer_list<int> which) {
    std::vector<std::string> out;
    for (int i : which) out.push_back(made[i].allocation.id);
    return out;
  };
  EXPECT_EQ(listed({.supplier = "acme"}, 2), ids({0, 3, 6}));
  EXPECT_EQ(listed({.buyer = "Initech"}, 1), ids({1, 3, 5, 7})) << "exact, case included";
  EXPECT_EQ(listed({.supplier = "globex", .buyer = "initech"}, 2), ids({2, 4, 8}));
  EXPECT_EQ(listed({.state = AllocationState::suspended}, 1), ids({1, 6}));
  EXPECT_EQ(listed({.state = AllocationState::depleted}, 2), ids({4}));
  EXPECT_EQ(listed({.state = AllocationState::active, .supplier = "globex"}, 2), ids({2, 5, 7, 8}));
  EXPECT_EQ(listed({.state = AllocationState::suspended, .supplier = "nobody"}, 2), ids({}));
  // A page ends where the matches do: no has_more after the last match.
  auto last = store->list_allocations_page({.state = AllocationState::suspended, .limit = 2});
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(ids_of(last->data), ids({1, 6}));
  EXPECT_FALSE(last->has_more);
  // `after` may name an allocation the filter does not match.
  auto from = store->list_allocations_page(
      {.supplier = "acme", .after = made[4].allocation.id, .limit = 5});
  ASSERT_TRUE(from.ok());
  EXPECT_EQ(ids_of(from->data), ids({6}));
}

TEST_P(StoreContract, KeysAreListedInCreationOrderWithoutSecrets) {
  auto a = create({10, 1000, 2}, {500, 500});
  auto b = create({10, 1000, 2}, {500, 500});
  clock->advance_seconds(1);
  auto k2 = store->create_key(a.allocation.id);
  auto k3 = store->create_key(a.allocation.id);
  ASSERT_TRUE(k2.ok() && k3.ok());
  ASSERT_TRUE(store->revoke_key(k2->key_id).ok());
  auto keys = follow<store::ApiKeyRow>(
      [&](auto after, size_t limit) {
        return store->list_keys(a.allocation.id, {after, limit});
      },
      2);
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(ids_of(keys), (std::vector<std::string>{a.key_id, k2->key_id, k3->key_id}));
  EXPECT_FALSE(keys[0].revoked);
  EXPECT_TRUE(keys[1].revoked);
  EXPECT_EQ(keys[0].created_at, t0_us);
  EXPECT_EQ(keys[2].created_at, t0_us + micros_per_second);
  for (const auto& k : keys) EXPECT_EQ(k.allocation_id, a.allocation.id);
  EXPECT_EQ(store->list_keys("alloc_nope", {}).error().code, ErrorCode::not_found);
  EXPECT_EQ(store->list_keys(a.allocation.id, {b.key_id, 10}).error().code,
            ErrorCode::invalid_request);
}

TEST_P(StoreContract, RequestsPageByAllocationAndAcrossAllocationsWithFilters) {
  auto a = create({100, 100000, 20}, {100000, 100000});
  auto b = create({100, 100000, 20}, {100000, 100000});
  std::vector<std::string> of_a, all;
  for (int i = 0; i < 7; ++i) {
    const auto& alloc = i % 2 == 0 ? a : b;
    const auto id = admit_ok(alloc, 1, 1);
    all.push_back(id);
    if (&alloc == &a) of_a.push_back(id);
    if (i % 3 == 0) {
      ASSERT_TRUE(settle({id, alloc.allocation.id, SettleKind::failed, "", {}}).ok());
    } else if (i % 3 == 1) {
      ASSERT_TRUE(book(alloc, id, "p" + std::to_string(i), {1, 1}).ok());
    } else {
      ASSERT_TRUE(settle({id, alloc.allocation.id, SettleKind::usage_missing, "", {}}).ok());
    }
    clock->advance_micros(i % 2);
  }
  auto list = [&](std::optional<std::string> alloc, std::optional<RequestState> state,
                  size_t limit) {
    return follow<store::RequestRow>(
        [&](auto after, size_t n) {
          store::RequestFilter f;
          f.allocation_id = alloc;
          f.state = state;
          f.after = after;
          f.limit = n;
          return store->list_requests(f);
        },
        limit);
  };
  EXPECT_EQ(ids_of(list(a.allocation.id, std::nullopt, 2)), of_a);
  EXPECT_EQ(ids_of(list(std::nullopt, std::nullopt, 3)), all);
  for (auto state : {RequestState::failed, RequestState::booked, RequestState::usage_pending}) {
    std::vector<std::string> want, want_a;
    for (size_t i = 0; i < all.size(); ++i) {
      const auto s = i % 3 == 0   ? RequestState::failed
                     : i % 3 == 1 ? RequestState::booked
                                  : RequestState::usage_pending;
      if (s != state) continue;
      want.push_back(all[i]);
      if (i % 2 == 0) want_a.push_back(all[i]);
    }
    EXPECT_EQ(ids_of(list(std::nullopt, state, 1)), want) << core::to_string(state);
    EXPECT_EQ(ids_of(list(a.allocation.id, state, 1)), want_a) << core::to_string(state);
  }
  // In flight: its own (partial) index, both orders.
  const auto running = admit_ok(b, 1, 1);
  EXPECT_EQ(ids_of(list(std::nullopt, RequestState::in_flight, 1)),
            std::vector<std::string>{running});
  EXPECT_EQ(ids_of(list(b.allocation.id, RequestState::in_flight, 1)),
            std::vector<std::string>{running});
  EXPECT_TRUE(list(a.allocation.id, RequestState::in_flight, 1).empty());
  ASSERT_TRUE(settle({running, b.allocation.id, SettleKind::failed, "", {}}).ok());
  // Times: started_at in [from, to).
  store::RequestFilter f;
  f.allocation_id = a.allocation.id;
  f.from = t0_us + 1;
  f.to = t0_us + 3;
  auto ranged = store->list_requests(f);
  ASSERT_TRUE(ranged.ok());
  for (const auto& r : ranged->data)
    EXPECT_TRUE(r.started_at >= t0_us + 1 && r.started_at < t0_us + 3);
  EXPECT_FALSE(ranged->data.empty());
  f = {};
  f.after = "req_nope";
  EXPECT_EQ(store->list_requests(f).error().code, ErrorCode::invalid_request);
  f.allocation_id = b.allocation.id;
  f.after = of_a.front();  // a request of another allocation is no position in this one
  EXPECT_EQ(store->list_requests(f).error().code, ErrorCode::invalid_request);
}

TEST_P(StoreContract, EventsAndConflictsPageAndFilterByBookingTime) {
  auto a = create({100, 100000, 20}, {100000, 100000});
  std::vector<std::string> events;
  for (int i = 0; i < 5; ++i) {
    const auto id = admit_ok(a, 1, 1);
    ASSERT_TRUE(book(a, id, "p" + std::to_string(i), {1, 1}).ok());
    // The same provider id reported again with other counts: a conflict.
    const auto dup = admit_ok(a, 1, 1);
    ASSERT_TRUE(book(a, dup, "p" + std::to_string(i), {2, 2}).ok());
    ASSERT_TRUE(settle({dup, a.allocation.id, SettleKind::failed, "", {}}).ok());
    clock->advance_seconds(10);
  }
  auto all = follow<store::UsageEventRow>(
      [&](auto after, size_t limit) {
        return store->list_events(
            store::EventFilter{.allocation_id = a.allocation.id, .after = after, .limit = limit});
      },
      2);
  ASSERT_EQ(all.size(), 5u);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].booked_at, all[i].booked_at);
  auto ranged = store->list_events(store::EventFilter{.allocation_id = a.allocation.id,
                                                      .from = t0_us + 10 * micros_per_second,
                                                      .to = t0_us + 30 * micros_per_second,
                                                      .after = std::nullopt,
                                                      .limit = 100});
  ASSERT_TRUE(ranged.ok());
  EXPECT_EQ(ids_of(ranged->data), (std::vector<std::string>{all[1].id, all[2].id}));
  auto conflicts = follow<store::ConflictRow>(
      [&](auto after, size_t limit) {
        return store->list_conflicts({a.allocation.id, after, limit});
      },
      2);
  EXPECT_EQ(conflicts.size(), 5u);
  auto every = follow<store::ConflictRow>(
      [&](auto after, size_t limit) {
        return store->list_conflicts({std::nullopt, after, limit});
      },
      3);
  EXPECT_EQ(ids_of(every), ids_of(conflicts));
  EXPECT_EQ(store->list_conflicts({std::nullopt, std::string("cfl_nope"), 3}).error().code,
            ErrorCode::invalid_request);
  EXPECT_EQ(store->list_events(store::EventFilter{.after = std::string("evt_nope")}).error().code,
            ErrorCode::invalid_request);
}

// A follower of every listing, one page at a time, while another thread admits and books
// requests of three allocations: each row is seen exactly once (SPEC-CONSOLE §1).
TEST_P(StoreContract, AFollowerSeesEveryRowOnceWhileRowsArrive) {
  std::vector<store::CreatedAgreement> allocs;
  for (int i = 0; i < 3; ++i)
    allocs.push_back(create({100000, 100000000, 1000}, {100000000, 100000000}));
  constexpr int requests = 60;
  std::mutex mu;
  std::set<std::string> admitted, booked_requests;
  std::atomic<bool> writer_done{false};
  std::thread writer([&] {
    for (int i = 0; i < requests; ++i) {
      const auto& a = allocs[static_cast<size_t>(i) % allocs.size()];
      auto cmd = admit_cmd(a, 1, 1);
      auto r = admit(cmd);
      if (!r.ok() || !r->decision.admitted()) {
        ADD_FAILURE() << "admission refused";
        break;
      }
      {
        std::lock_guard lock(mu);
        admitted.insert(cmd.request_id);
      }
      if (i % 2 == 0) {
        auto b = book(a, cmd.request_id, "prov-" + std::to_string(i), {1, 1});
        if (!b.ok()) ADD_FAILURE() << b.error().message;
        std::lock_guard lock(mu);
        booked_requests.insert(cmd.request_id);
      }
    }
    writer_done = true;
  });
  // Pages until the writer had finished before a page that ended the listing.
  auto follow_live = [&](auto fetch) {
    std::vector<std::string> seen;
    std::optional<std::string> after;
    for (int pages = 0; pages < 100000; ++pages) {
      const bool finished = writer_done.load();
      auto page = fetch(after);
      if (!page.ok()) {
        ADD_FAILURE() << page.error().message;
        break;
      }
      for (const auto& r : page->data) {
        seen.push_back(r.id);
        after = r.id;
      }
      if (!page->has_more && finished) return seen;
    }
    ADD_FAILURE() << "the follower never caught up";
    return seen;
  };
  auto requests_seen = follow_live([&](const std::optional<std::string>& after) {
    store::RequestFilter f;
    f.after = after;
    f.limit = 3;
    return store->list_requests(f);
  });
  auto of_first = follow_live([&](const std::optional<std::string>& after) {
    store::RequestFilter f;
    f.allocation_id = allocs[0].allocation.id;
    f.after = after;
    f.limit = 2;
    return store->list_requests(f);
  });
  auto events_seen = follow_live([&](const std::optional<std::string>& after) {
    return store->list_events(store::EventFilter{.after = after, .limit = 2});
  });
  writer.join();
  auto unique = [](const std::vector<std::string>& v) {
    return std::set<std::string>(v.begin(), v.end());
  };
  EXPECT_EQ(unique(requests_seen).size(), requests_seen.size()) << "a request listed twice";
  EXPECT_EQ(unique(requests_seen), admitted);
  EXPECT_EQ(unique(of_first).size(), of_first.size());
  EXPECT_EQ(of_first.size(), static_cast<size_t>(requests / 3));
  EXPECT_EQ(unique(events_seen).size(), events_seen.size()) << "an event listed twice";
  EXPECT_EQ(events_seen.size(), booked_requests.size());
  // Leave nothing in flight for the audit.
  for (const auto& id : admitted) {
    if (booked_requests.count(id)) continue;
    auto row = store->get_request(id);
    ASSERT_TRUE(row.ok());
    ASSERT_TRUE(settle({id, row->allocation_id, SettleKind::failed, "", {}}).ok());
  }
}

// ---------------------------------------------------------------- §2 usage series

namespace {
Result<store::UsageSeries> series_of(store::Store& s, const std::string& allocation,
                                     UnixMicros from, UnixMicros to, int64_t bucket) {
  Await<store::UsageSeries> w;
  s.usage_series({allocation, from, to, bucket}, w.callback());
  return w.get();
}
}  // namespace

TEST_P(StoreContract, UsageSeriesCountsTokensByBookingAndRequestsByStartInUtcBuckets) {
  auto a = create({100, 1000000, 10}, {100000, 100000});
  auto other = create({100, 1000000, 10}, {100000, 100000});
  clock->set(t0_us + 10 * minute_us);
  const auto r1 = admit_ok(a, 5, 50);  // started in bucket 0, booked in bucket 1
  ASSERT_TRUE(book(other, admit_ok(other, 1, 1), "o1", {7, 7}).ok());  // never in a's series
  clock->set(t0_us + hour_us + 5 * minute_us);
  ASSERT_TRUE(book(a, r1, "p1", {100, 50}).ok());
  const auto failed = admit_ok(a, 1, 1);
  ASSERT_TRUE(settle({failed, a.allocation.id, SettleKind::failed, "", {}}).ok());
  const auto pending = admit_ok(a, 1, 1);
  ASSERT_TRUE(settle({pending, a.allocation.id, SettleKind::usage_missing, "", {}}).ok());
  clock->set(t0_us + 2 * hour_us + 30 * minute_us);
  const auto r4 = admit_ok(a, 1, 20);
  ASSERT_TRUE(book(a, r4, "p4", {10, 5}).ok());
  auto events = store->list_events(store::EventFilter{.allocation_id = a.allocation.id});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->data.size(), 2u);
  auto adj = store->adjust({events->data[0].id, {-40, 5}, "provider credit note 17"});
  ASSERT_TRUE(adj.ok()) << adj.error().message;

  auto s = series_of(*store, a.allocation.id, t0_us, t0_us + 2 * hour_us + 45 * minute_us, hour_us);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->allocation_id, a.allocation.id);
  ASSERT_EQ(s->buckets.size(), 3u);  // the last one partial
  const auto& b = s->buckets;
  EXPECT_EQ(b[0].start, t0_us);
  EXPECT_EQ(b[1].start, t0_us + hour_us);
  EXPECT_EQ(b[2].start, t0_us + 2 * hour_us);
  EXPECT_EQ(b[0].tokens, (Tokens{0, 0}));
  EXPECT_EQ(b[0].requests, 1);
  EXPECT_EQ(b[1].tokens, (Tokens{100, 50}));
  EXPECT_EQ(b[1].requests, 2);
  EXPECT_EQ(b[1].failed, 1);
  EXPECT_EQ(b[1].usage_pending, 1);
  EXPECT_EQ(b[2].tokens, (Tokens{10 - 40, 5 + 5}));  // the adjustment is booked in bucket 2
  EXPECT_EQ(b[2].requests, 1);
  EXPECT_EQ(b[2].failed + b[2].usage_pending, 0);
  // Minute buckets, empty ones included, and a window that ends before the adjustment.
  auto m = series_of(*store, a.allocation.id, t0_us + hour_us, t0_us + hour_us + 10 * minute_us,
                     minute_us);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->buckets.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(m->buckets[i].start, t0_us + hour_us + static_cast<int64_t>(i) * minute_us);
    EXPECT_EQ(m->buckets[i].requests, i == 5 ? 2 : 0) << i;
    EXPECT_EQ(m->buckets[i].tokens, (i == 5 ? Tokens{100, 50} : Tokens{})) << i;
  }
  // The pending request, once reconciled, leaves the usage_pending count of its bucket.
  ASSERT_TRUE(store->reconcile({pending, {1, 1}, "metering"}).ok());
  auto after = series_of(*store, a.allocation.id, t0_us, t0_us + 3 * hour_us, hour_us);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->buckets[1].usage_pending, 0);
  EXPECT_EQ(after->buckets[2].tokens, (Tokens{-30 + 1, 10 + 1}));
  EXPECT_EQ(series_of(*store, "alloc_nope", t0_us, t0_us + hour_us, hour_us).error().code,
            ErrorCode::not_found);
  EXPECT_EQ(series_of(*store, a.allocation.id, t0_us + 1, t0_us + hour_us, hour_us).error().code,
            ErrorCode::invalid_request);  // not aligned
  EXPECT_EQ(
      series_of(*store, a.allocation.id, t0_us, t0_us + 1001 * minute_us, minute_us).error().code,
      ErrorCode::invalid_request);  // more than 1000 buckets
}

TEST_P(StoreContract, UsageSeriesSurvivesAReopen) {
  auto a = create({100, 1000000, 10}, {100000, 100000});
  ASSERT_TRUE(book(a, admit_ok(a, 1, 10), "p1", {3, 4}).ok());
  reopen();
  clock->advance_seconds(30);
  ASSERT_TRUE(book(a, admit_ok(a, 1, 10), "p2", {5, 6}).ok());
  auto s = series_of(*store, a.allocation.id, t0_us, t0_us + minute_us, minute_us);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->buckets.size(), 1u);
  EXPECT_EQ(s->buckets[0].tokens, (Tokens{8, 10}));
  EXPECT_EQ(s->buckets[0].requests, 2);
}

// ---------------------------------------------------------------- §4 bulk reconciliation

TEST_P(StoreContract, BulkReconciliationBooksDryRunsAndReimportsWithoutBookingTwice) {
  auto a = create({100, 1000000, 10}, {100000, 100000});
  const auto by_id = admit_ok(a, 10, 100);
  ASSERT_TRUE(settle({by_id, a.allocation.id, SettleKind::usage_missing, "", {}}).ok());
  const auto by_provider = admit_ok(a, 10, 100);
  ASSERT_TRUE(
      settle({by_provider, a.allocation.id, SettleKind::usage_missing, "chatcmpl-77", {}}).ok());
  const auto booked = admit_ok(a, 10, 100);
  ASSERT_TRUE(book(a, booked, "chatcmpl-1", {8, 9}).ok());
  const auto failed = admit_ok(a, 10, 100);
  ASSERT_TRUE(settle({failed, a.allocation.id, SettleKind::failed, "", {}}).ok());

  store::BulkReconciliation call;
  call.evidence = "provider metering export 2026-01-01";
  call.items = {
      {by_id, "", std::nullopt, {11, 22}},
      {"", "chatcmpl-77", a.allocation.id, {33, 44}},
      {booked, "", std::nullopt, {8, 9}},         // the same counts: already booked
      {"", "chatcmpl-1", std::nullopt, {8, 10}},  // other counts: a conflict
      {failed, "", std::nullopt, {1, 1}},
      {"req_nope", "", std::nullopt, {1, 1}},
      {"", "chatcmpl-unknown", std::nullopt, {1, 1}},
      {by_id, "", std::nullopt, {11, 22}},  // twice in one call: booked once
  };
  const std::vector<BulkOutcome> want = {BulkOutcome::booked,         BulkOutcome::booked,
                                         BulkOutcome::already_booked, BulkOutcome::conflict,
                                         BulkOutcome::not_pending,    BulkOutcome::not_found,
                                         BulkOutcome::not_found,      BulkOutcome::already_booked};
  auto outcomes = [](const std::vector<store::BulkResult>& r) {
    std::vector<BulkOutcome> out;
    for (const auto& x : r) out.push_back(x.outcome);
    return out;
  };
  const auto before = status(a.allocation.id)->snapshot;
  call.dry_run = true;
  auto dry = store::reconcile_bulk(*store, call);
  ASSERT_TRUE(dry.ok()) << dry.error().message;
  EXPECT_EQ(outcomes(*dry), want);
  const auto untouched = status(a.allocation.id)->snapshot;
  EXPECT_EQ(untouched.booked, before.booked);
  EXPECT_EQ(untouched.usage_pending, 2);
  EXPECT_TRUE(store->list_conflicts({a.allocation.id})->data.empty());

  call.dry_run = false;
  auto real = store::reconcile_bulk(*store, call);
  ASSERT_TRUE(real.ok()) << real.error().message;
  EXPECT_EQ(outcomes(*real), want);
  ASSERT_TRUE((*real)[0].event.has_value());
  EXPECT_EQ((*real)[0].event->source, core::EventSource::reconciliation);
  EXPECT_EQ((*real)[0].event->evidence, call.evidence);
  EXPECT_EQ((*real)[1].event->provider_request_id, "chatcmpl-77");
  EXPECT_EQ(store->get_request(by_id)->state, RequestState::booked);
  EXPECT_EQ(store->get_request(by_provider)->state, RequestState::booked);
  auto s = status(a.allocation.id)->snapshot;
  EXPECT_EQ(s.booked, (Tokens{8 + 11 + 33, 9 + 22 + 44}));
  EXPECT_EQ(s.usage_pending, 0);
  auto conflicts = store->list_conflicts({a.allocation.id});
  ASSERT_EQ(conflicts->data.size(), 1u);
  EXPECT_EQ(conflicts->data[0].request_id, booked);
  EXPECT_EQ(conflicts->data[0].provider_request_id, "chatcmpl-1");
  EXPECT_EQ(conflicts->data[0].reported, (Tokens{8, 10}));
  EXPECT_EQ(conflicts->data[0].booked, (Tokens{8, 9}));

  // Importing the same file again books nothing and records nothing new.
  const auto events_before =
      store->list_events(store::EventFilter{.allocation_id = a.allocation.id})->data.size();
  auto again = store::reconcile_bulk(*store, call);
  ASSERT_TRUE(again.ok());
  for (size_t i : {0, 1}) EXPECT_EQ((*again)[i].outcome, BulkOutcome::already_booked) << i;
  EXPECT_EQ(store->list_events(store::EventFilter{.allocation_id = a.allocation.id})->data.size(),
            events_before);
  EXPECT_EQ(status(a.allocation.id)->snapshot.booked, s.booked);
  EXPECT_EQ(store->list_conflicts({a.allocation.id})->data.size(), 1u);
}

TEST_P(StoreContract, BulkReconciliationWithABadItemAppliesNothing) {
  auto a = create({100, 1000000, 10}, {100000, 100000});
  const auto ok = admit_ok(a, 10, 100);
  ASSERT_TRUE(settle({ok, a.allocation.id, SettleKind::usage_missing, "", {}}).ok());
  const auto big = admit_ok(a, 10, 100);
  ASSERT_TRUE(settle({big, a.allocation.id, SettleKind::usage_missing, "", {}}).ok());
  store::BulkReconciliation call;
  call.evidence = "export";
  // Item 1 asks for more than reconcile_hold_ratio_max times its hold: needs force.
  call.items = {{ok, "", std::nullopt, {5, 5}},
                {big, "", std::nullopt, {5, 100 * store::reconcile_hold_ratio_max + 1}}};
  auto r = store::reconcile_bulk(*store, call);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::invalid_request);
  EXPECT_NE(r.error().message.find("items[1]"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("10.0x"), std::string::npos) << r.error().message;
  EXPECT_EQ(store->get_request(ok)->state, RequestState::usage_pending);
  EXPECT_EQ(status(a.allocation.id)->snapshot.booked, (Tokens{0, 0}));
  // An item naming neither id is malformed too.
  store::BulkReconciliation bad = call;
  bad.items = {{ok, "", std::nullopt, {5, 5}}, {"", "", std::nullopt, {1, 1}}};
  EXPECT_EQ(store::reconcile_bulk(*store, bad).error().code, ErrorCode::invalid_request);
  EXPECT_EQ(store->get_request(ok)->state, RequestState::usage_pending);
  call.force = true;
  auto forced = store::reconcile_bulk(*store, call);
  ASSERT_TRUE(forced.ok()) << forced.error().message;
  EXPECT_EQ((*forced)[1].outcome, BulkOutcome::booked);
}

// ---------------------------------------------------------------- §4b corrections

TEST_P(StoreContract, AReconciliationFarAboveTheHoldNeedsForce) {
  auto a = create({100, 1000000, 10}, {100000, 100000});
  const auto at_limit = admit_ok(a, 10, 50);
  ASSERT_TRUE(settle({at_limit, a.allocation.id, SettleKind::usage_missing, "", {}}).ok());
  EXPECT_TRUE(store->reconcile({at_limit, {100, 500}, "exactly 10x"}).ok());
  const auto id = admit_ok(a, 10, 50);
  ASSERT_TRUE(settle({id, a.allocation.id, SettleKind::usage_missing, "", {}}).ok());
  auto refused = store->reconcile({id, {101, 1}, "x"});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::invalid_request);
  EXPECT_NE(refused.error().message.find("10.1x"), std::string::npos) << refused.error().message;
  EXPECT_EQ(store->get_request(id)->state, RequestState::usage_pending);
  store::Reconciliation forced{id, {101, 1}, "x"};
  forced.force = true;
  EXPECT_TRUE(store->reconcile(forced).ok());
}

TEST_P(StoreContract, AnAdjustmentCorrectsABookingWithANewEventAndNeverEditsIt) {
  auto a = create({100, 1000000, 10}, {100000, 100000});
  const auto id = admit_ok(a, 10, 100);
  ASSERT_TRUE(book(a, id, "chatcmpl-5", {100, 50}).ok());
  auto original =
      store->list_events(store::EventFilter{.allocation_id = a.allocation.id})->data.at(0);
  clock->advance_seconds(5);
  auto adj = store->adjust({original.id, {-40, 10}, "credit note 12"});
  ASSERT_TRUE(adj.ok()) << adj.error().message;
  EXPECT_EQ(adj->source, core::EventSource::adjustment);
  EXPECT_EQ(adj->finality, core::Finality::confirmed);
  EXPECT_EQ(adj->corrects, original.id);
  EXPECT_EQ(adj->request_id, id);
  EXPECT_EQ(adj->provider_request_id, "chatcmpl-5");
  EXPECT_EQ(adj->tokens, (Tokens{-40, 10}));
  EXPECT_EQ(adj->evidence, "credit note 12");
  auto s = status(a.allocation.id)->snapshot;
  EXPECT_EQ(s.booked, (Tokens{60, 60}));
  EXPECT_EQ(s.remaining(), (Tokens{100000 - 60, 100000 - 60}));
  EXPECT_EQ(s.tokens_last_minute, 150);  // the booking only: adjustments count toward no window
  auto events = store->list_events(store::EventFilter{.allocation_id = a.allocation.id});
  ASSERT_EQ(events->data.size(), 2u);
  EXPECT_EQ(events->data[0].id, original.id);
  EXPECT_EQ(events->data[0].tokens, (Tokens{100, 50}));  // unchanged
  EXPECT_EQ(events->data[1].id, adj->id);
  EXPECT_EQ(events->data[1].corrects, original.id);
  // Refusals change nothing.
  auto negative = store->adjust({original.id, {-61, 0}, "too much"});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().code, ErrorCode::conflict);
  EXPECT_EQ(store->adjust({adj->id, {1, 1}, "x"}).error().code, ErrorCode::invalid_request);
  EXPECT_EQ(store->adjust({"evt_nope", {1, 1}, "x"}).error().code, ErrorCode::not_found);
  EXPECT_EQ(store->adjust({original.id, {0, 0}, "x"}).error().code, ErrorCode::invalid_request);
  EXPECT_EQ(store->adjust({original.id, {1, 0}, ""}).error().code, ErrorCode::invalid_request);
  EXPECT_EQ(status(a.allocation.id)->snapshot.booked, (Tokens{60, 60}));
  // A reopened store keeps the corrected totals, and a repeated provider report of the
  // corrected event is still a duplicate (an adjustment is no booking key).
  reopen();
  EXPECT_EQ(status(a.allocation.id)->snapshot.booked, (Tokens{60, 60}));
  const auto again = admit_ok(a, 10, 100);
  auto dup = book(a, again, "chatcmpl-5", {100, 50});
  ASSERT_TRUE(dup.ok());
  EXPECT_NE(dup->book, core::BookResult::booked);
  ASSERT_TRUE(settle({again, a.allocation.id, SettleKind::failed, "", {}}).ok());
  EXPECT_EQ(status(a.allocation.id)->snapshot.booked, (Tokens{60, 60}));
}

TEST_P(StoreContract, AnAdjustmentUndoesAMistakenDepletion) {
  auto a = create({100, 1000000, 10}, {100, 100});
  const auto id = admit_ok(a, 10, 50);
  ASSERT_TRUE(settle({id, a.allocation.id, SettleKind::usage_missing, "", {}}).ok());
  store::Reconciliation typo{id, {5000, 5000}, "typed one zero too many"};
  typo.force = true;
  auto e = store->reconcile(typo);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(status(a.allocation.id)->snapshot.state, AllocationState::depleted);
  EXPECT_EQ(store->get_agreement(a.agreement.id)->state, core::AgreementState::completed);
  auto fix = store->adjust({e->id, {-4950, -4950}, "the export said 50/50"});
  ASSERT_TRUE(fix.ok()) << fix.error().message;
  auto s = status(a.allocation.id)->snapshot;
  EXPECT_EQ(s.state, AllocationState::active);
  EXPECT_EQ(s.booked, (Tokens{50, 50}));
  EXPECT_EQ(store->get_agreement(a.agreement.id)->state, core::AgreementState::in_force);
  const auto next = admit_ok(a, 10, 10);
  ASSERT_TRUE(book(a, next, "p-next", {5, 5}).ok());
}

}  // namespace cairva::contract
