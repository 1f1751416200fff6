// The Store contract suite: SPEC §3–§5, §7, §9 through the Store interface only.
#include "store_contract.h"

#include <atomic>
#include <thread>
#include <vector>

#include "base/ids.h"

namespace cairva::contract {

using core::AllocationState;
using core::Refusal;
using core::RequestState;
using core::Tokens;
using store::SettleKind;

namespace {

constexpr int64_t day_us = 86'400 * micros_per_second;

const core::Refused* refused(const store::AdmitResult& r) {
  return std::get_if<core::Refused>(&r.decision.outcome);
}

}  // namespace

// ---------------------------------------------------------------- fixture

void StoreContract::SetUp() {
  harness = GetParam()();
  clock = std::make_shared<ManualClock>(t0_us);
  store = harness->open_fresh(clock, options());
  ASSERT_NE(store, nullptr);
}

void StoreContract::TearDown() {
  if (!store) return;
  auto report = store->audit();
  ASSERT_TRUE(report.ok()) << report.error().message;
  for (const auto& v : report->violations) ADD_FAILURE() << "audit: " << v;
}

store::StoreOptions StoreContract::options() const {
  store::StoreOptions o;
  o.use_database_clock = false;
  o.in_flight_timeout_s = 600;
  o.providers = {"openai", "other"};
  return o;
}

void StoreContract::reopen() {
  store.reset();
  store = harness->reopen(clock, options());
  ASSERT_NE(store, nullptr);
}

Result<store::KeyGrant> StoreContract::authenticate(const std::string& secret) {
  Await<store::KeyGrant> w;
  store->authenticate(hash_secret(secret), w.callback());
  return w.get();
}

Result<store::AdmitResult> StoreContract::admit(const store::AdmitCommand& cmd) {
  Await<store::AdmitResult> w;
  store->admit(cmd, w.callback());
  return w.get();
}

Result<store::SettleResult> StoreContract::settle(const store::SettleCommand& cmd) {
  Await<store::SettleResult> w;
  store->settle(cmd, w.callback());
  return w.get();
}

Result<store::AllocationStatus> StoreContract::status(const std::string& allocation_id) {
  Await<store::AllocationStatus> w;
  store->allocation_status(allocation_id, w.callback());
  return w.get();
}

Status StoreContract::note(const store::CreatedAgreement& a, const std::string& request_id,
                           const std::string& provider_request_id) {
  Await<void> w;
  store->note_provider_id({request_id, a.allocation.id, provider_request_id}, w.callback());
  return w.get();
}

store::NewAgreement StoreContract::agreement(core::Limits limits, core::Tokens allowance) const {
  store::NewAgreement a;
  a.supplier = "supplier";
  a.buyer = "buyer";
  a.provider = "openai";
  a.terms.window = {t0_us, t0_us + 30 * day_us};
  a.terms.limits = limits;
  a.terms.allowance = allowance;
  return a;
}

store::CreatedAgreement StoreContract::create(core::Limits limits, core::Tokens allowance) {
  auto c = store->create_agreement(agreement(limits, allowance));
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? std::move(c).value() : store::CreatedAgreement{};
}

store::AdmitCommand StoreContract::admit_cmd(const store::CreatedAgreement& a,
                                             int64_t input_estimate, int64_t max_tokens) {
  store::AdmitCommand cmd;
  cmd.request_id = new_id("req");
  cmd.allocation_id = a.allocation.id;
  cmd.key_id = a.key_id;
  cmd.model = "gpt-test";
  cmd.facts.input_estimate = input_estimate;
  cmd.facts.max_tokens = max_tokens;
  return cmd;
}

std::string StoreContract::admit_ok(const store::CreatedAgreement& a, int64_t input_estimate,
                                    int64_t max_tokens) {
  auto cmd = admit_cmd(a, input_estimate, max_tokens);
  auto r = admit(cmd);
  EXPECT_TRUE(r.ok()) << r.error().message;
  if (r.ok() && !r->decision.admitted()) {
    ADD_FAILURE() << "refused: " << core::refusal_name(refused(*r)->reason);
  }
  return cmd.request_id;
}

void StoreContract::expect_refused(const store::CreatedAgreement& a, core::Refusal reason,
                                   int64_t input_estimate, int64_t max_tokens) {
  auto r = admit(admit_cmd(a, input_estimate, max_tokens));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_FALSE(r->decision.admitted()) << "admitted, expected " << core::refusal_name(reason);
  EXPECT_EQ(refused(*r)->reason, reason) << core::refusal_name(refused(*r)->reason);
}

Result<store::SettleResult> StoreContract::book(const store::CreatedAgreement& a,
                                                const std::string& request_id,
                                                const std::string& provider_request_id,
                                                core::Tokens usage) {
  return settle({request_id, a.allocation.id, SettleKind::usage, provider_request_id, usage});
}

// ---------------------------------------------------------------- admin: agreements

TEST_P(StoreContract, CreateAgreementMakesActiveAllocationAndWorkingKey) {
  auto a = create({10, 1000, 2}, {500, 500});
  EXPECT_EQ(a.allocation.snapshot.state, AllocationState::active);
  EXPECT_EQ(a.agreement.state, core::AgreementState::in_force);
  EXPECT_EQ(a.allocation.agreement_id, a.agreement.id);
  auto g = authenticate(a.key_secret);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->allocation_id, a.allocation.id);
  EXPECT_EQ(g->key_id, a.key_id);
  EXPECT_EQ(g->provider, "openai");
  EXPECT_EQ(g->limits, (core::Limits{10, 1000, 2}));
  auto got = store->get_agreement(a.agreement.id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->supplier, "supplier");
  EXPECT_EQ(got->terms.allowance, (Tokens{500, 500}));
}

TEST_P(StoreContract, AllowListsReachTheKeyGrantAndSurviveReopen) {
  auto terms = agreement({10, 1000, 2}, {500, 500});
  terms.models = {"gpt-a", "gpt-b"};
  terms.service_tiers = {"priority", "flex"};
  auto created = store->create_agreement(terms);
  ASSERT_TRUE(created.ok()) << created.error().message;
  EXPECT_EQ(created->agreement.service_tiers, (std::vector<std::string>{"priority", "flex"}));
  const auto plain = create({10, 1000, 2}, {500, 500});
  auto check = [&] {
    auto g = authenticate(created->key_secret);
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ(g->models, (std::vector<std::string>{"gpt-a", "gpt-b"}));
    EXPECT_EQ(g->service_tiers, (std::vector<std::string>{"priority", "flex"}));
    auto got = store->get_agreement(created->agreement.id);
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(got->models, (std::vector<std::string>{"gpt-a", "gpt-b"}));
    EXPECT_EQ(got->service_tiers, (std::vector<std::string>{"priority", "flex"}));
    auto none = authenticate(plain.key_secret);
    ASSERT_TRUE(none.ok()) << none.error().message;
    EXPECT_TRUE(none->service_tiers.empty());
    EXPECT_TRUE(store->get_agreement(plain.agreement.id)->service_tiers.empty());
  };
  check();
  reopen();
  check();
  auto empty_tier = agreement({10, 1000, 2}, {500, 500});
  empty_tier.service_tiers = {""};
  auto refused_tier = store->create_agreement(empty_tier);
  ASSERT_FALSE(refused_tier.ok());
  EXPECT_EQ(refused_tier.error().code, ErrorCode::invalid_request);
}

TEST_P(StoreContract, CreateAgreementRejectsBadTerms) {
  auto bad_provider = agreement({10, 1000, 2}, {500, 500});
  bad_provider.provider = "nobody";
  auto r1 = store->create_agreement(bad_provider);
  ASSERT_FALSE(r1.ok());
  EXPECT_EQ(r1.error().code, ErrorCode::invalid_request);

  auto bad_window = agreement({10, 1000, 2}, {500, 500});
  bad_window.terms.window.ends_at = bad_window.terms.window.starts_at;
  auto r2 = store->create_agreement(bad_window);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().code, ErrorCode::invalid_request);

  for (auto limits : {core::Limits{0, 1, 1}, core::Limits{1, 0, 1}, core::Limits{1, 1, 0}}) {
    auto r = store->create_agreement(agreement(limits, {500, 500}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::invalid_request);
  }
  auto r3 = store->create_agreement(agreement({1, 1, 1}, {0, 500}));
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(r3.error().code, ErrorCode::invalid_request);
  auto all = store->list_allocations();
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

TEST_P(StoreContract, UnknownIdsAreNotFound) {
  EXPECT_EQ(store->get_agreement("agr_nope").error().code, ErrorCode::not_found);
  EXPECT_EQ(store->get_allocation("alloc_nope").error().code, ErrorCode::not_found);
  EXPECT_EQ(store->suspend_allocation("alloc_nope").error().code, ErrorCode::not_found);
  EXPECT_EQ(store->cancel_agreement("agr_nope").error().code, ErrorCode::not_found);
  EXPECT_EQ(store->create_key("alloc_nope").error().code, ErrorCode::not_found);
  EXPECT_EQ(store->revoke_key("key_nope").error().code, ErrorCode::not_found);
  EXPECT_EQ(store->get_request("req_nope").error().code, ErrorCode::not_found);
  EXPECT_EQ(status("alloc_nope").error().code, ErrorCode::not_found);
}

// ---------------------------------------------------------------- keys

TEST_P(StoreContract, UnknownKeyIsInvalidApiKey) {
  auto r = authenticate("cv_not_a_key");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::invalid_api_key);
}

TEST_P(StoreContract, RevokedKeyIsRefusedAtOnceOtherKeysStillWork) {
  auto a = create({10, 1000, 2}, {500, 500});
  auto second = store->create_key(a.allocation.id);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(authenticate(second->key_secret).ok());
  auto revoked = store->revoke_key(a.key_id);
  ASSERT_TRUE(revoked.ok());
  EXPECT_TRUE(revoked->revoked);
  EXPECT_EQ(revoked->allocation_id, a.allocation.id);
  auto r = authenticate(a.key_secret);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::invalid_api_key);
  EXPECT_TRUE(authenticate(second->key_secret).ok());
}

// ---------------------------------------------------------------- admission and windows

TEST_P(StoreContract, AdmittedRequestIsDurablyInFlightWithItsHold) {
  auto a = create({10, 1000, 2}, {500, 500});
  auto cmd = admit_cmd(a, 30, 40);
  auto r = admit(cmd);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->decision.admitted());
  EXPECT_EQ(std::get<core::Admitted>(r->decision.outcome).hold, (Tokens{30, 40}));
  EXPECT_EQ(r->after.in_flight, 1);
  EXPECT_EQ(r->after.held, (Tokens{30, 40}));
  auto row = store->get_request(cmd.request_id);
  ASSERT_TRUE(row.ok()) << row.error().message;
  EXPECT_EQ(row->state, RequestState::in_flight);
  EXPECT_EQ(row->hold, (Tokens{30, 40}));
  EXPECT_EQ(row->started_at, t0_us);
  EXPECT_EQ(row->allocation_id, a.allocation.id);
  EXPECT_EQ(row->model, "gpt-test");
  EXPECT_FALSE(row->finished_at.has_value());
  auto s = status(a.allocation.id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->snapshot.held, (Tokens{30, 40}));
  EXPECT_EQ(s->snapshot.in_flight, 1);
  EXPECT_EQ(s->snapshot.requests_last_minute, 1);
}

TEST_P(StoreContract, RequestsPerMinuteWindowIsExactlyTrailing60Seconds) {
  auto a = create({2, 100000, 10}, {100000, 100000});
  const auto r1 = admit_ok(a, 1, 1);
  clock->advance_micros(1);
  admit_ok(a, 1, 1);
  // Failing a request does not give its start back.
  ASSERT_TRUE(settle({r1, a.allocation.id, SettleKind::failed, "", {}}).ok());
  expect_refused(a, Refusal::requests_per_minute);
  clock->advance_micros(60 * micros_per_second - 2);  // 59.999999 s after the first start
  expect_refused(a, Refusal::requests_per_minute);
  clock->advance_micros(1);  // exactly 60 s: the first start has left the window
  admit_ok(a, 1, 1);
  expect_refused(a, Refusal::requests_per_minute);
  auto r = admit(admit_cmd(a, 1, 1));
  ASSERT_TRUE(r.ok());
  ASSERT_NE(refused(*r), nullptr);
  EXPECT_EQ(refused(*r)->code, ErrorCode::rate_limited);
  EXPECT_EQ(refused(*r)->retry_after_s, 60);
  EXPECT_EQ(refused(*r)->limit, "requests_per_minute");
  // Refused requests started nothing.
  auto s = status(a.allocation.id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->snapshot.requests_last_minute, 2);
  clock->advance_seconds(600);
  ASSERT_TRUE(store->sweep_stale().ok());
}

TEST_P(StoreContract, ConcurrencyLimitFreesWhenARequestSettles) {
  auto a = create({100, 100000, 2}, {100000, 100000});
  const auto r1 = admit_ok(a, 1, 1);
  const auto r2 = admit_ok(a, 1, 1);
  auto r = admit(admit_cmd(a, 1, 1));
  ASSERT_TRUE(r.ok());
  ASSERT_NE(refused(*r), nullptr);
  EXPECT_EQ(refused(*r)->reason, Refusal::max_concurrency);
  EXPECT_EQ(refused(*r)->retry_after_s, 2);
  ASSERT_TRUE(book(a, r1, "prov-1", {1, 1}).ok());
  const auto r3 = admit_ok(a, 1, 1);
  ASSERT_TRUE(settle({r2, a.allocation.id, SettleKind::usage_missing, "", {}}).ok());
  admit_ok(a, 1, 1);  // usage_pending does not count toward concurrency
  ASSERT_TRUE(settle({r3, a.allocation.id, SettleKind::failed, "", {}}).ok());
  clock->advance_seconds(600);
  ASSERT_TRUE(store->sweep_stale().ok());
}

TEST_P(StoreContract, RequestsPerMinuteIsCheckedBeforeConcurrency) {
  auto a = create({1, 100000, 1}, {100000, 100000});
  admit_ok(a, 1, 1);
  expect_refused(a, Refusal::requests_per_minute);
  clock->advance_seconds(60);
  expect_refused(a, Refusal::max_concurrency);
  clock->advance_seconds(600);
  ASSERT_TRUE(store->sweep_stale().ok());
}

TEST_P(StoreContract, TokensPerMinuteCountsBookedTokensNotHolds) {
  auto a = create({100, 100, 10}, {100000, 100000});
  const auto r1 = admit_ok(a, 60, 60);
  const auto r2 = admit_ok(a, 60, 60);  // holds of 240 tokens do not count
  ASSERT_TRUE(book(a, r1, "p1", {50, 49}).ok());
  admit_ok(a, 1, 1);  // 99 booked < 100
  ASSERT_TRUE(book(a, r2, "p2", {1, 0}).ok());
  clock->advance_micros(1);
  auto r = admit(admit_cmd(a, 1, 1));
  ASSERT_TRUE(r.ok());
  ASSERT_NE(refused(*r), nullptr);
  EXPECT_EQ(refused(*r)->reason, Refusal::tokens_per_minute);
  EXPECT_EQ(refused(*r)->retry_after_s, 60);
  clock->advance_micros(60 * micros_per_second - 2);  // 59.999999 s after the bookings
  expect_refused(a, Refusal::tokens_per_minute);
  clock->advance_micros(1);
  admit_ok(a, 1, 1);
  clock->advance_seconds(600);
  ASSERT_TRUE(store->sweep_stale().ok());
}

// ---------------------------------------------------------------- rate resets

namespace {

core::RateResets resets_of(const core::AllocationSnapshot& s) {
  return core::rate_resets(s, s.as_of);
}

}  // namespace

TEST_P(StoreContract, AFullRequestsWindowReportsTheTimeUntilItsOldestStartLeaves) {
  auto a = create({3, 100000, 10}, {100000, 100000});
  const auto r1 = admit_ok(a, 1, 1);
  clock->advance_seconds(5);
  const auto r2 = admit_ok(a, 1, 1);
  ASSERT_TRUE(settle({r1, a.allocation.id, SettleKind::failed, "", {}}).ok());  // still counts
  clock->advance_seconds(2);
  auto third = admit(admit_cmd(a, 1, 1));
  ASSERT_TRUE(third.ok()) << third.error().message;
  ASSERT_TRUE(third->decision.admitted());
  // The admission that filled the window: room again when the first start leaves.
  EXPECT_EQ(third->after.requests_last_minute, 3);
  EXPECT_EQ(third->after.as_of, t0_us + 7 * micros_per_second);
  EXPECT_EQ(resets_of(third->after).requests_us, 53 * micros_per_second);
  EXPECT_EQ(resets_of(third->after).tokens_us, 0);
  clock->advance_seconds(10);
  auto r = admit(admit_cmd(a, 1, 1));
  ASSERT_TRUE(r.ok());
  ASSERT_NE(refused(*r), nullptr);
  EXPECT_EQ(refused(*r)->reason, Refusal::requests_per_minute);
  EXPECT_EQ(refused(*r)->retry_after_s, 60);
  EXPECT_EQ(refused(*r)->retry_after_ms, 43'000);
  EXPECT_EQ(resets_of(r->after).requests_us, 43 * micros_per_second);
  auto s = status(a.allocation.id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->snapshot.as_of, t0_us + 17 * micros_per_second);
  EXPECT_EQ(resets_of(s->snapshot).requests_us, 43 * micros_per_second);
  // The starts survive a restart, and so does the answer.
  reopen();
  s = status(a.allocation.id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(resets_of(s->snapshot).requests_us, 43 * micros_per_second);
  clock->set(t0_us + 60 * micros_per_second - 1);
  r = admit(admit_cmd(a, 1, 1));
  ASSERT_TRUE(r.ok());
  ASSERT_NE(refused(*r), nullptr);
  EXPECT_EQ(refused(*r)->retry_after_ms, 1);  // 1 µs, rounded up
  clock->advance_micros(1);                   // the instant named: the first start has left
  auto fourth = admit(admit_cmd(a, 1, 1));
  ASSERT_TRUE(fourth.ok());
  ASSERT_TRUE(fourth->decision.admitted());
  EXPECT_EQ(resets_of(fourth->after).requests_us, 5 * micros_per_second);  // r2's start next
  ASSERT_TRUE(settle({r2, a.allocation.id, SettleKind::failed, "", {}}).ok());
  clock->advance_seconds(600);
  ASSERT_TRUE(store->sweep_stale().ok());
}

TEST_P(StoreContract, TheAdmissionIntoTheLastSlotOfAnEmptyWindowResetsAMinuteLater) {
  auto a = create({1, 100000, 10}, {100000, 100000});
  auto r = admit(admit_cmd(a, 1, 1));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->decision.admitted());
  EXPECT_EQ(r->after.oldest_start_at, t0_us);
  EXPECT_EQ(resets_of(r->after).requests_us, 60 * micros_per_second);
  clock->advance_seconds(600);
  ASSERT_TRUE(store->sweep_stale().ok());
}

TEST_P(StoreContract, AFullTokensWindowReportsTheTimeUntilEnoughBookedTokensLeave) {
  auto a = create({100, 100, 10}, {100000, 100000});
  const auto ra = admit_ok(a, 1, 1);
  const auto rb = admit_ok(a, 1, 1);
  const auto rc = admit_ok(a, 1, 1);
  const auto rd = admit_ok(a, 1, 1);
  clock->advance_seconds(1);
  ASSERT_TRUE(book(a, ra, "pa", {20, 10}).ok());  // 30
  clock->advance_seconds(1);
  ASSERT_TRUE(book(a, rb, "pb", {10, 10}).ok());  // 50
  ASSERT_TRUE(book(a, rc, "pc", {20, 20}).ok());  // 90, at the same instant as pb
  auto s = status(a.allocation.id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(resets_of(s->snapshot).tokens_us, 0);  // room: 90 < 100
  clock->advance_seconds(1);
  ASSERT_TRUE(book(a, rd, "pd", {20, 20}).ok());  // 130
  // More than 30 must leave: pa's 30 is not enough, pa and pb's 50 is.
  clock->set(t0_us + 10 * micros_per_second);
  auto r = admit(admit_cmd(a, 1, 1));
  ASSERT_TRUE(r.ok());
  ASSERT_NE(refused(*r), nullptr);
  EXPECT_EQ(refused(*r)->reason, Refusal::tokens_per_minute);
  EXPECT_EQ(refused(*r)->retry_after_s, 60);
  EXPECT_EQ(refused(*r)->retry_after_ms, 52'000);
  EXPECT_EQ(resets_of(r->after).tokens_us, 52 * micros_per_second);
  EXPECT_EQ(resets_of(r->after).requests_us, 0);
  reopen();
  s = status(a.allocation.id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->snapshot.tokens_last_minute, 130);
  EXPECT_EQ(resets_of(s->snapshot).tokens_us, 52 * micros_per_second);
  // pa has left: 100 remain, still the limit; pb's leaving (with pc) frees the window.
  clock->set(t0_us + 61 * micros_per_second);
  s = status(a.allocation.id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->snapshot.tokens_last_minute, 100);
  EXPECT_EQ(resets_of(s->snapshot).tokens_us, micros_per_second);
  clock->advance_micros(micros_per_second - 1);
  expect_refused(a, Refusal::tokens_per_minute);
  clock->advance_micros(1);
  s = status(a.allocation.id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->snapshot.tokens_last_minute, 40);
  EXPECT_EQ(resets_of(s->snapshot).tokens_us, 0);
  const auto last = admit_ok(a, 1, 1);
  ASSERT_TRUE(settle({last, a.allocation.id, SettleKind::failed, "", {}}).ok());
}

TEST_P(StoreContract, HoldsCountAgainstRemainingAndLowerTheOutputLimit) {
  auto a = create({100, 100000, 10}, {1000, 100});
  const auto r1 = admit_ok(a, 10, 60);
  auto cmd = admit_cmd(a, 10, 60);
  auto r = admit(cmd);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->decision.admitted());
  const auto& admitted = std::get<core::Admitted>(r->decision.outcome);
  EXPECT_EQ(admitted.lowered_to, 40);
  EXPECT_EQ(admitted.hold, (Tokens{10, 40}));
  auto s = status(a.allocation.id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->snapshot.remaining(), (Tokens{980, 0}));
  auto ex = admit(admit_cmd(a, 10, 1));
  ASSERT_TRUE(ex.ok());
  ASSERT_NE(refused(*ex), nullptr);
  EXPECT_EQ(refused(*ex)->reason, Refusal::allowance_exhausted);
  EXPECT_EQ(refused(*ex)->code, ErrorCode::allocation_exhausted);
  // Booking less than held gives the difference back.
  ASSERT_TRUE(book(a, r1, "p1", {5, 20}).ok());
  auto after = status(a.allocation.id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->snapshot.booked, (Tokens{5, 20}));
  EXPECT_EQ(after->snapshot.held, (Tokens{10, 40}));
  EXPECT_EQ(after->snapshot.remaining(), (Tokens{985, 40}));
  ASSERT_TRUE(settle({cmd.request_id, a.allocation.id, SettleKind::failed, "", {}}).ok());
}

TEST_P(StoreContract, InputEstimateOverRemainingInputIsExhausted) {
  auto a = create({100, 100000, 10}, {50, 1000});
  expect_refused(a, Refusal::allowance_exhausted, 51, 10);
  const auto r = admit_ok(a, 50, 10);
  ASSERT_TRUE(settle({r, a.allocation.id, SettleKind::failed, "", {}}).ok());
}

TEST_P(StoreContract, WindowNotOpenAndExpiredAreRefused) {
  auto future = agreement({10, 1000, 2}, {500, 500});
  future.terms.window = {t0_us + day_us, t0_us + 2 * day_us};
  auto f = store->create_agreement(future);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->allocation.snapshot.state, AllocationState::ready);
  auto r = admit(admit_cmd(*f, 1, 1));
  ASSERT_TRUE(r.ok());
  ASSERT_NE(refused(*r), nullptr);
  EXPECT_EQ(refused(*r)->reason, Refusal::window_not_open);
  EXPECT_EQ(refused(*r)->code, ErrorCode::allocation_not_active);
  clock->advance_micros(day_us);  // window opens: ready -> active at admission
  const auto id = admit_ok(*f, 1, 1);
  ASSERT_TRUE(book(*f, id, "p", {1, 1}).ok());
  EXPECT_EQ(store->get_allocation(f->allocation.id)->snapshot.state, AllocationState::active);
  clock->advance_micros(day_us);  // window over
  EXPECT_EQ(status(f->allocation.id)->snapshot.state, AllocationState::expired);
  auto e = admit(admit_cmd(*f, 1, 1));
  ASSERT_TRUE(e.ok());
  ASSERT_NE(refused(*e), nullptr);
  EXPECT_EQ(refused(*e)->reason, Refusal::expired);
  EXPECT_EQ(refused(*e)->code, ErrorCode::allocation_expired);
  auto sus = store->suspend_allocation(f->allocation.id);
  ASSERT_FALSE(sus.ok());
  EXPECT_EQ(sus.error().code, ErrorCode::conflict);
}

// ---------------------------------------------------------------- settlement

TEST_P(StoreContract, UsageIsBookedOnceAsAProviderEvent) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto id = admit_ok(a, 10, 20);
  auto b = book(a, id, "chatcmpl-1", {7, 9});
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->book, core::BookResult::booked);
  EXPECT_EQ(b->request_state, RequestState::booked);
  auto row = store->get_request(id);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->state, RequestState::booked);
  EXPECT_EQ(row->provider_request_id, "chatcmpl-1");
  EXPECT_TRUE(row->finished_at.has_value());
  auto events = store->list_events(
      store::EventFilter{.allocation_id = a.allocation.id, .after = std::nullopt, .limit = 100});
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->data.size(), 1u);
  const auto& e = events->data.front();
  EXPECT_EQ(e.request_id, id);
  EXPECT_EQ(e.provider_request_id, "chatcmpl-1");
  EXPECT_EQ(e.tokens, (Tokens{7, 9}));
  EXPECT_EQ(e.source, core::EventSource::provider);
  EXPECT_EQ(e.finality, core::Finality::reported);
  EXPECT_EQ(e.booked_at, t0_us);
  EXPECT_EQ(e.id.rfind("evt_", 0), 0u);
  // The same request settled again (a retried settlement) books nothing more: its own
  // event again is a duplicate; under another id it is settled already (no index keeps
  // one event per request on the embedded store: the ledger does).
  for (const char* provider_id : {"chatcmpl-1", "chatcmpl-other"}) {
    auto again = book(a, id, provider_id, {7, 9});
    ASSERT_TRUE(again.ok());
    const bool own = std::string_view(provider_id) == "chatcmpl-1";
    EXPECT_EQ(again->book, own ? core::BookResult::duplicate : core::BookResult::already_settled)
        << provider_id;
    EXPECT_EQ(again->request_state, RequestState::booked);
  }
  EXPECT_TRUE(
      store->list_conflicts(store::ConflictFilter{.allocation_id = a.allocation.id})->data.empty());
  EXPECT_EQ(store
                ->list_events(store::EventFilter{
                    .allocation_id = a.allocation.id, .after = std::nullopt, .limit = 100})
                ->data.size(),
            1u);
  auto s = status(a.allocation.id);
  EXPECT_EQ(s->snapshot.booked, (Tokens{7, 9}));
  EXPECT_EQ(s->snapshot.held, (Tokens{0, 0}));
  EXPECT_EQ(s->snapshot.tokens_last_minute, 16);
}

TEST_P(StoreContract, UnknownRequestSettlesAsUnknown) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  auto r = book(a, "req_never", "p", {1, 1});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->book, core::BookResult::unknown_request);
}

TEST_P(StoreContract, AProviderIdReusedByOtherRequestsLeavesThemPendingWithTheirHolds) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto r1 = admit_ok(a, 10, 20);
  const auto r2 = admit_ok(a, 10, 20);
  const auto r3 = admit_ok(a, 10, 20);
  ASSERT_EQ(book(a, r1, "same", {5, 5})->book, core::BookResult::booked);
  // Same counts or other: another request's id never makes a request free.
  for (const auto& [id, counts] : {std::pair{r2, Tokens{5, 5}}, std::pair{r3, Tokens{8, 9}}}) {
    auto r = book(a, id, "same", counts);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->book, core::BookResult::reused_id);
    EXPECT_EQ(r->request_state, RequestState::usage_pending);
    auto row = store->get_request(id);
    EXPECT_EQ(row->state, RequestState::usage_pending);
    EXPECT_EQ(row->provider_request_id,
              id);  // the id is r1's: reconciliation books under the gateway's
    EXPECT_EQ(row->reported_usage, (core::ReportedUsage{counts, "same"}));
  }
  EXPECT_EQ(store
                ->list_events(store::EventFilter{
                    .allocation_id = a.allocation.id, .after = std::nullopt, .limit = 100})
                ->data.size(),
            1u);
  auto s = status(a.allocation.id);
  EXPECT_EQ(s->snapshot.booked, (Tokens{5, 5}));
  EXPECT_EQ(s->snapshot.held, (Tokens{20, 40}));
  EXPECT_EQ(s->snapshot.usage_pending, 2);
  EXPECT_EQ(s->snapshot.in_flight, 0);
  auto conflicts = store->list_conflicts(store::ConflictFilter{.allocation_id = a.allocation.id});
  ASSERT_TRUE(conflicts.ok());
  ASSERT_EQ(conflicts->data.size(), 2u);
  EXPECT_EQ(conflicts->data.at(0).request_id, r2);
  EXPECT_EQ(conflicts->data.at(0).provider_request_id, "same");
  EXPECT_EQ(conflicts->data.at(0).reported, (Tokens{5, 5}));
  EXPECT_EQ(conflicts->data.at(0).booked, (Tokens{5, 5}));
  EXPECT_EQ(conflicts->data.at(1).request_id, r3);
  EXPECT_EQ(conflicts->data.at(1).reported, (Tokens{8, 9}));
  EXPECT_EQ(conflicts->data.at(1).allocation_id, a.allocation.id);
  EXPECT_EQ(
      store->list_conflicts(store::ConflictFilter{.allocation_id = std::nullopt})->data.size(), 2u);
  // Each settled again (a retried settlement) writes nothing more.
  EXPECT_EQ(book(a, r1, "same", {5, 5})->book, core::BookResult::duplicate);
  EXPECT_EQ(book(a, r2, "same", {5, 5})->book, core::BookResult::reused_id);
  EXPECT_EQ(
      store->list_conflicts(store::ConflictFilter{.allocation_id = a.allocation.id})->data.size(),
      2u);
  EXPECT_EQ(store->get_request(r1)->state, RequestState::booked);
  // An operator books the kept counts; the gateway's id is the booking key.
  auto e = store->reconcile({r3, {}, "provider dashboard", /*use_reported=*/true});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->tokens, (Tokens{8, 9}));
  EXPECT_EQ(e->provider_request_id, r3);
  EXPECT_EQ(status(a.allocation.id)->snapshot.held, (Tokens{10, 20}));
}

TEST_P(StoreContract, ARequestsOwnEventReportedWithOtherCountsIsAConflictRecordedNotBooked) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto r1 = admit_ok(a, 10, 20);
  ASSERT_EQ(book(a, r1, "same", {5, 5})->book, core::BookResult::booked);
  auto c = book(a, r1, "same", {8, 9});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->book, core::BookResult::conflict);
  EXPECT_EQ(c->request_state, RequestState::booked);
  EXPECT_EQ(store
                ->list_events(store::EventFilter{
                    .allocation_id = a.allocation.id, .after = std::nullopt, .limit = 100})
                ->data.size(),
            1u);
  EXPECT_EQ(status(a.allocation.id)->snapshot.booked, (Tokens{5, 5}));
  auto conflicts = store->list_conflicts(store::ConflictFilter{.allocation_id = a.allocation.id});
  ASSERT_TRUE(conflicts.ok());
  ASSERT_EQ(conflicts->data.size(), 1u);
  const auto& cf = conflicts->data.front();
  EXPECT_EQ(cf.request_id, r1);
  EXPECT_EQ(cf.provider_request_id, "same");
  EXPECT_EQ(cf.reported, (Tokens{8, 9}));
  EXPECT_EQ(cf.booked, (Tokens{5, 5}));
}

// SPEC-APIS §3: a stored response is reached only through the allocation it belongs to.
TEST_P(StoreContract, AProviderRequestIdIsOwnedOnlyByTheAllocationThatBookedOrKeptIt) {
  const auto a = create({10, 1000, 5}, {500, 500});
  const auto b = create({10, 1000, 5}, {500, 500});
  auto owns = [&](const std::string& allocation_id, const std::string& id) {
    Await<bool> w;
    store->owns_provider_request(allocation_id, id, w.callback());
    auto r = w.get();
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() && *r;
  };
  const std::string booked = admit_ok(a, 10, 10);
  EXPECT_FALSE(owns(a.allocation.id, "resp_booked")) << "in flight: no provider id recorded yet";
  ASSERT_TRUE(book(a, booked, "resp_booked", {5, 5}).ok());
  const std::string pending = admit_ok(a, 10, 10);
  ASSERT_TRUE(
      settle({pending, a.allocation.id, SettleKind::usage_missing, "resp_pending", {}}).ok());
  const std::string failed = admit_ok(a, 10, 10);
  ASSERT_TRUE(settle({failed, a.allocation.id, SettleKind::failed, "resp_failed", {}}).ok());
  auto check = [&] {
    EXPECT_TRUE(owns(a.allocation.id, "resp_booked"));
    EXPECT_TRUE(owns(a.allocation.id, "resp_pending"));
    EXPECT_FALSE(owns(b.allocation.id, "resp_booked")) << "another allocation's";
    EXPECT_FALSE(owns(b.allocation.id, "resp_pending"));
    EXPECT_FALSE(owns(a.allocation.id, "resp_failed")) << "a provider error keeps nothing to reach";
    EXPECT_FALSE(owns(a.allocation.id, "resp_unknown"));
    EXPECT_FALSE(owns("alloc_nope", "resp_booked"));
  };
  check();
  reopen();
  check();
  ASSERT_TRUE(store->reconcile({pending, {3, 3}, "usage export"}).ok());
  EXPECT_TRUE(owns(a.allocation.id, "resp_pending")) << "booked under it once reconciled";
  EXPECT_FALSE(owns(b.allocation.id, "resp_pending"));
}

TEST_P(StoreContract, CountsTheStoreCouldNotBookAreKeptOnThePendingRequest) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto id = admit_ok(a, 10, 20);
  auto r = settle({id, a.allocation.id, SettleKind::usage_unbooked, "chatcmpl-u", {12, 34}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->book, core::BookResult::pending);
  EXPECT_EQ(r->request_state, RequestState::usage_pending);
  auto row = store->get_request(id);
  EXPECT_EQ(row->state, RequestState::usage_pending);
  EXPECT_EQ(row->provider_request_id, "chatcmpl-u");
  EXPECT_EQ(row->reported_usage, (core::ReportedUsage{{12, 34}, "chatcmpl-u"}));
  EXPECT_EQ(status(a.allocation.id)->snapshot.held, (Tokens{10, 20}));
  EXPECT_TRUE(
      store->list_conflicts(store::ConflictFilter{.allocation_id = a.allocation.id})->data.empty());
  // Kept again: nothing changes. A request without kept counts cannot book them.
  EXPECT_EQ(settle({id, a.allocation.id, SettleKind::usage_unbooked, "chatcmpl-u", {12, 34}})->book,
            core::BookResult::pending);
  const auto other = admit_ok(a, 1, 1);
  ASSERT_TRUE(settle({other, a.allocation.id, SettleKind::usage_missing, "", {}}).ok());
  EXPECT_EQ(store->reconcile({other, {}, "x", true}).error().code, ErrorCode::invalid_request);
  // One command books them, under the provider's id.
  auto e = store->reconcile({id, {}, "booked from the gateway's kept counts", true});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->tokens, (Tokens{12, 34}));
  EXPECT_EQ(e->provider_request_id, "chatcmpl-u");
  EXPECT_EQ(e->source, core::EventSource::reconciliation);
  EXPECT_EQ(store->get_request(id)->state, RequestState::booked);
  EXPECT_EQ(status(a.allocation.id)->snapshot.booked, (Tokens{12, 34}));
  // A late provider report books nothing more.
  EXPECT_EQ(book(a, id, "chatcmpl-u", {12, 34})->book, core::BookResult::duplicate);
  EXPECT_EQ(store->reconcile({other, {1, 1}, "x"})->tokens, (Tokens{1, 1}));
}

TEST_P(StoreContract, EveryKindSettlesASettledRequestAsAlreadySettled) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto id = admit_ok(a, 10, 20);
  ASSERT_EQ(settle({id, a.allocation.id, SettleKind::failed, "", {}})->book,
            core::BookResult::failed);
  for (const auto kind : {SettleKind::usage, SettleKind::usage_missing, SettleKind::failed,
                          SettleKind::usage_unbooked}) {
    auto r = settle({id, a.allocation.id, kind, "p", {1, 1}});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->book, core::BookResult::already_settled) << static_cast<int>(kind);
    EXPECT_EQ(r->request_state, RequestState::failed);
  }
  EXPECT_EQ(settle({"req_none", a.allocation.id, SettleKind::failed, "", {}})->book,
            core::BookResult::unknown_request);
  EXPECT_EQ(store->get_request(id)->state, RequestState::failed);
  EXPECT_EQ(status(a.allocation.id)->snapshot.held, (Tokens{0, 0}));
  EXPECT_TRUE(store
                  ->list_events(store::EventFilter{
                      .allocation_id = a.allocation.id, .after = std::nullopt, .limit = 100})
                  ->data.empty());
}

TEST_P(StoreContract, UsageMissingMakesTheRequestPendingAndKeepsItsHold) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto id = admit_ok(a, 10, 20);
  auto r = settle({id, a.allocation.id, SettleKind::usage_missing, "chatcmpl-x", {}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->book, core::BookResult::pending);
  EXPECT_EQ(r->request_state, RequestState::usage_pending);
  EXPECT_EQ(settle({id, a.allocation.id, SettleKind::usage_missing, "chatcmpl-x", {}})->book,
            core::BookResult::pending);
  EXPECT_EQ(store->get_request(id)->state, RequestState::usage_pending);
  auto s = status(a.allocation.id);
  EXPECT_EQ(s->snapshot.held, (Tokens{10, 20}));
  EXPECT_EQ(s->snapshot.usage_pending, 1);
  EXPECT_EQ(s->snapshot.in_flight, 0);
  {
    store::RequestFilter f;
    f.state = RequestState::usage_pending;
    auto pending = store->list_requests(f);
    ASSERT_TRUE(pending.ok());
    ASSERT_EQ(pending->data.size(), 1u);
    EXPECT_EQ(pending->data.front().id, id);
  }
}

TEST_P(StoreContract, FailedRequestReleasesItsHoldAndBooksNothing) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto id = admit_ok(a, 10, 20);
  auto r = settle({id, a.allocation.id, SettleKind::failed, "", {}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->request_state, RequestState::failed);
  auto row = store->get_request(id);
  EXPECT_EQ(row->state, RequestState::failed);
  EXPECT_TRUE(row->finished_at.has_value());
  auto s = status(a.allocation.id);
  EXPECT_EQ(s->snapshot.held, (Tokens{0, 0}));
  EXPECT_EQ(s->snapshot.booked, (Tokens{0, 0}));
  EXPECT_EQ(s->snapshot.requests_last_minute, 1);
  EXPECT_TRUE(store
                  ->list_events(store::EventFilter{
                      .allocation_id = a.allocation.id, .after = std::nullopt, .limit = 100})
                  ->data.empty());
}

TEST_P(StoreContract, StaleInFlightRequestsBecomePendingAndLateUsageIsStillBooked) {
  auto a = create({100, 100000, 1}, {1000, 1000});
  const auto id = admit_ok(a, 10, 20);
  clock->advance_micros(600 * micros_per_second - 1);
  EXPECT_EQ(*store->sweep_stale(), 0);
  clock->advance_micros(1);
  EXPECT_EQ(*store->sweep_stale(), 1);
  EXPECT_EQ(store->get_request(id)->state, RequestState::usage_pending);
  auto s = status(a.allocation.id);
  EXPECT_EQ(s->snapshot.in_flight, 0);
  EXPECT_EQ(s->snapshot.held, (Tokens{10, 20}));
  const auto other = admit_ok(a, 1, 1);  // no longer counts toward concurrency
  auto late = book(a, id, "late", {3, 4});
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->book, core::BookResult::booked);
  EXPECT_EQ(status(a.allocation.id)->snapshot.booked, (Tokens{3, 4}));
  ASSERT_TRUE(settle({other, a.allocation.id, SettleKind::failed, "", {}}).ok());
}

TEST_P(StoreContract, ReconcileBooksAConfirmedEventForAPendingRequest) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto id = admit_ok(a, 10, 20);
  auto in_flight = store->reconcile({id, {1, 1}, "metering export"});
  ASSERT_FALSE(in_flight.ok());
  EXPECT_EQ(in_flight.error().code, ErrorCode::not_pending);
  EXPECT_EQ(store->reconcile({"req_nope", {1, 1}, "x"}).error().code, ErrorCode::not_found);
  ASSERT_TRUE(settle({id, a.allocation.id, SettleKind::usage_missing, "", {}}).ok());
  EXPECT_EQ(store->reconcile({id, {-1, 1}, "x"}).error().code, ErrorCode::invalid_request);
  EXPECT_EQ(store->reconcile({id, {1, 1}, ""}).error().code, ErrorCode::invalid_request);
  auto e = store->reconcile({id, {12, 15}, "metering export line 4"});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->source, core::EventSource::reconciliation);
  EXPECT_EQ(e->finality, core::Finality::confirmed);
  EXPECT_EQ(e->evidence, "metering export line 4");
  EXPECT_EQ(e->provider_request_id, id);  // no provider id known: the gateway's id
  EXPECT_EQ(e->tokens, (Tokens{12, 15}));
  EXPECT_EQ(store->get_request(id)->state, RequestState::booked);
  auto s = status(a.allocation.id);
  EXPECT_EQ(s->snapshot.booked, (Tokens{12, 15}));
  EXPECT_EQ(s->snapshot.held, (Tokens{0, 0}));
  auto twice = store->reconcile({id, {1, 1}, "again"});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code, ErrorCode::not_pending);
  // A provider report after reconciliation books nothing.
  auto late = book(a, id, "late", {1, 1});
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->book, core::BookResult::already_settled);
  EXPECT_EQ(store
                ->list_events(store::EventFilter{
                    .allocation_id = a.allocation.id, .after = std::nullopt, .limit = 100})
                ->data.size(),
            1u);
}

TEST_P(StoreContract, ReconcileUsesTheProviderRequestIdWhenKnown) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto id = admit_ok(a, 10, 20);
  ASSERT_TRUE(settle({id, a.allocation.id, SettleKind::usage_missing, "chatcmpl-9", {}}).ok());
  auto e = store->reconcile({id, {2, 3}, "dashboard"});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->provider_request_id, "chatcmpl-9");
}

TEST_P(StoreContract, AProviderIdNotedInFlightIsKeptWhenTheRequestEndsPending) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto swept = admit_ok(a, 10, 20);
  const auto missing = admit_ok(a, 10, 20);
  ASSERT_TRUE(note(a, swept, "chatcmpl-swept").ok());
  ASSERT_TRUE(note(a, missing, "chatcmpl-missing").ok());
  EXPECT_EQ(store->get_request(swept)->provider_request_id, "chatcmpl-swept");
  EXPECT_EQ(store->get_request(swept)->state, RequestState::in_flight);
  // A cut without an id of its own keeps the noted one.
  ASSERT_TRUE(settle({missing, a.allocation.id, SettleKind::usage_missing, "", {}}).ok());
  EXPECT_EQ(store->get_request(missing)->provider_request_id, "chatcmpl-missing");
  clock->advance_seconds(600);
  EXPECT_EQ(*store->sweep_stale(), 1);
  auto row = store->get_request(swept);
  EXPECT_EQ(row->state, RequestState::usage_pending);
  EXPECT_EQ(row->provider_request_id, "chatcmpl-swept");
  auto e = store->reconcile({swept, {2, 3}, "provider dashboard"});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->provider_request_id, "chatcmpl-swept");
  // A note for a request no longer in flight changes nothing.
  ASSERT_TRUE(note(a, missing, "chatcmpl-other").ok());
  ASSERT_TRUE(note(a, swept, "chatcmpl-other").ok());
  EXPECT_EQ(store->get_request(missing)->provider_request_id, "chatcmpl-missing");
  EXPECT_EQ(store->get_request(swept)->provider_request_id, "chatcmpl-swept");
  EXPECT_EQ(store->get_request(swept)->state, RequestState::booked);
}

TEST_P(StoreContract, AProviderIdNotedInFlightSurvivesARestart) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto id = admit_ok(a, 10, 20);
  ASSERT_TRUE(note(a, id, "chatcmpl-killed").ok());
  reopen();
  if (!harness->marks_in_flight_pending_on_reopen()) {
    clock->advance_seconds(600);
    EXPECT_EQ(*store->sweep_stale(), 1);
  }
  auto row = store->get_request(id);
  EXPECT_EQ(row->state, RequestState::usage_pending);
  EXPECT_EQ(row->provider_request_id, "chatcmpl-killed");
}

TEST_P(StoreContract, AProviderIdNotedInFlightIsOwnedByItsAllocationOnly) {
  const auto a = create({10, 1000, 5}, {500, 500});
  const auto b = create({10, 1000, 5}, {500, 500});
  auto owns = [&](const std::string& allocation_id, const std::string& id) {
    Await<bool> w;
    store->owns_provider_request(allocation_id, id, w.callback());
    auto r = w.get();
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() && *r;
  };
  const std::string streaming = admit_ok(a, 10, 10);
  EXPECT_FALSE(owns(a.allocation.id, "resp_streaming"));
  ASSERT_TRUE(note(a, streaming, "resp_streaming").ok());
  EXPECT_TRUE(owns(a.allocation.id, "resp_streaming")) << "its stream showed the id";
  EXPECT_FALSE(owns(b.allocation.id, "resp_streaming"));
  // A request that fails keeps nothing to reach, noted or not.
  const std::string failing = admit_ok(a, 10, 10);
  ASSERT_TRUE(note(a, failing, "resp_failing").ok());
  ASSERT_TRUE(settle({failing, a.allocation.id, SettleKind::failed, "", {}}).ok());
  EXPECT_FALSE(owns(a.allocation.id, "resp_failing"));
  ASSERT_TRUE(book(a, streaming, "resp_streaming", {2, 2}).ok());
  EXPECT_TRUE(owns(a.allocation.id, "resp_streaming"));
}

TEST_P(StoreContract, ANotedIdThatIsAnotherRequestsEventIsNotKeptAsTheBookingKey) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto first = admit_ok(a, 10, 20);
  const auto second = admit_ok(a, 10, 20);
  // A provider that gives every request the same id: the second's is noted before the
  // first books it.
  ASSERT_TRUE(note(a, second, "same").ok());
  ASSERT_EQ(book(a, first, "same", {5, 5})->book, core::BookResult::booked);
  ASSERT_EQ(book(a, second, "same", {6, 6})->book, core::BookResult::reused_id);
  EXPECT_EQ(store->get_request(second)->provider_request_id, second);
  auto e = store->reconcile({second, {}, "provider dashboard", /*use_reported=*/true});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->provider_request_id, second);
}

// ---------------------------------------------------------------- depletion and operators

TEST_P(StoreContract, ReachingTheAllowanceDepletesAndCompletesTheAgreement) {
  auto a = create({100, 100000, 10}, {1000, 100});
  const auto r1 = admit_ok(a, 10, 50);
  const auto r2 = admit_ok(a, 10, 50);
  ASSERT_TRUE(book(a, r1, "p1", {10, 100}).ok());  // real counts over the hold
  auto s = status(a.allocation.id);
  EXPECT_EQ(s->snapshot.state, AllocationState::depleted);
  EXPECT_EQ(store->get_agreement(a.agreement.id)->state, core::AgreementState::completed);
  auto r = admit(admit_cmd(a, 1, 1));
  ASSERT_TRUE(r.ok());
  ASSERT_NE(refused(*r), nullptr);
  EXPECT_EQ(refused(*r)->reason, Refusal::depleted);
  EXPECT_EQ(refused(*r)->code, ErrorCode::allocation_depleted);
  // A request already in flight still settles normally.
  auto b2 = book(a, r2, "p2", {5, 5});
  ASSERT_TRUE(b2.ok());
  EXPECT_EQ(b2->book, core::BookResult::booked);
  EXPECT_EQ(status(a.allocation.id)->snapshot.booked, (Tokens{15, 105}));
  auto sus = store->suspend_allocation(a.allocation.id);
  ASSERT_FALSE(sus.ok());
  EXPECT_EQ(sus.error().code, ErrorCode::conflict);
}

TEST_P(StoreContract, SuspendRefusesAndResumeRestores) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  auto s = store->suspend_allocation(a.allocation.id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->snapshot.state, AllocationState::suspended);
  auto r = admit(admit_cmd(a, 1, 1));
  ASSERT_NE(refused(*r), nullptr);
  EXPECT_EQ(refused(*r)->reason, Refusal::suspended);
  EXPECT_EQ(refused(*r)->code, ErrorCode::allocation_not_active);
  auto back = store->resume_allocation(a.allocation.id);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->snapshot.state, AllocationState::active);
  const auto id = admit_ok(a, 1, 1);
  ASSERT_TRUE(settle({id, a.allocation.id, SettleKind::failed, "", {}}).ok());
}

TEST_P(StoreContract, CancelRefusesAdmissionsButInFlightRequestsSettle) {
  auto a = create({100, 100000, 10}, {1000, 1000});
  const auto id = admit_ok(a, 1, 1);
  auto c = store->cancel_agreement(a.agreement.id);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->state, core::AgreementState::cancelled);
  EXPECT_EQ(store->get_agreement(a.agreement.id)->state, core::AgreementState::cancelled);
  auto r = admit(admit_cmd(a, 1, 1));
  ASSERT_NE(refused(*r), nullptr);
  EXPECT_EQ(refused(*r)->reason, Refusal::agreement_cancelled);
  EXPECT_EQ(refused(*r)->code, ErrorCode::allocation_not_active);
  auto resume = store->resume_allocation(a.allocation.id);
  ASSERT_FALSE(resume.ok());
  EXPECT_EQ(resume.error().code, ErrorCode::conflict);
  EXPECT_EQ(book(a, id, "p", {1, 1})->book, core::BookResult::booked);
}

// ---------------------------------------------------------------- listings

TEST_P(StoreContract, EventsArePagedInBookingOrderWithAfterExclusive) {
  auto a = create({100, 100000, 10}, {100000, 100000});
  auto other = create({100, 100000, 10}, {100000, 100000});
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    const auto id = admit_ok(a, 1, 1);
    ASSERT_TRUE(book(a, id, "p" + std::to_string(i), {1, static_cast<int64_t>(i)}).ok());
    const auto o = admit_ok(other, 1, 1);
    ASSERT_TRUE(book(other, o, "p" + std::to_string(i), {1, 1}).ok());
    ids.push_back(id);
    clock->advance_micros(1);
  }
  auto first = store->list_events(
      store::EventFilter{.allocation_id = a.allocation.id, .after = std::nullopt, .limit = 2});
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->data.size(), 2u);
  EXPECT_EQ(first->data[0].request_id, ids[0]);
  EXPECT_EQ(first->data[1].request_id, ids[1]);
  auto rest = store->list_events(store::EventFilter{
      .allocation_id = a.allocation.id, .after = first->data.back().id, .limit = 100});
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->data.size(), 3u);
  EXPECT_EQ(rest->data[0].request_id, ids[2]);
  EXPECT_EQ(rest->data[2].request_id, ids[4]);
  auto none = store->list_events(store::EventFilter{
      .allocation_id = a.allocation.id, .after = rest->data.back().id, .limit = 100});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->data.empty());
  auto all = store->list_events(
      store::EventFilter{.allocation_id = std::nullopt, .after = std::nullopt, .limit = 100});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->data.size(), 10u);
}

TEST_P(StoreContract, ListRequestsFiltersByAllocationAndState) {
  auto a = create({100, 100000, 10}, {100000, 100000});
  auto b = create({100, 100000, 10}, {100000, 100000});
  const auto a1 = admit_ok(a, 1, 1);
  const auto a2 = admit_ok(a, 1, 1);
  const auto b1 = admit_ok(b, 1, 1);
  ASSERT_TRUE(settle({a2, a.allocation.id, SettleKind::failed, "", {}}).ok());
  store::RequestFilter f;
  f.allocation_id = a.allocation.id;
  EXPECT_EQ(store->list_requests(f)->data.size(), 2u);
  f.state = RequestState::failed;
  auto failed = store->list_requests(f);
  ASSERT_EQ(failed->data.size(), 1u);
  EXPECT_EQ(failed->data.front().id, a2);
  ASSERT_TRUE(settle({a1, a.allocation.id, SettleKind::failed, "", {}}).ok());
  ASSERT_TRUE(settle({b1, b.allocation.id, SettleKind::failed, "", {}}).ok());
  EXPECT_EQ(store->list_allocations()->size(), 2u);
}

// ---------------------------------------------------------------- restart

TEST_P(StoreContract, ReopenPreservesEverythingAcknowledged) {
  auto a = create({3, 100000, 10}, {1000, 1000});
  const auto booked = admit_ok(a, 10, 20);
  const auto pending = admit_ok(a, 10, 20);
  const auto running = admit_ok(a, 10, 20);
  ASSERT_TRUE(book(a, booked, "p1", {4, 6}).ok());
  ASSERT_TRUE(settle({pending, a.allocation.id, SettleKind::usage_missing, "", {}}).ok());
  auto key2 = store->create_key(a.allocation.id);
  ASSERT_TRUE(key2.ok());
  ASSERT_TRUE(store->revoke_key(a.key_id).ok());
  ASSERT_TRUE(store->suspend_allocation(a.allocation.id).ok());
  ASSERT_TRUE(store->resume_allocation(a.allocation.id).ok());
  clock->advance_seconds(1);
  reopen();
  EXPECT_EQ(authenticate(a.key_secret).error().code, ErrorCode::invalid_api_key);
  ASSERT_TRUE(authenticate(key2->key_secret).ok());
  auto s = status(a.allocation.id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->snapshot.booked, (Tokens{4, 6}));
  EXPECT_EQ(s->snapshot.held, (Tokens{20, 40}));
  EXPECT_EQ(s->snapshot.requests_last_minute, 3);
  EXPECT_EQ(s->snapshot.tokens_last_minute, 10);
  EXPECT_EQ(s->snapshot.state, AllocationState::active);
  // The starts survived the restart (admitted with the live key: a's own is revoked, which
  // a store whose grants are cached refuses at admission).
  auto live = a;
  live.key_id = key2->key_id;
  expect_refused(live, Refusal::requests_per_minute);
  // The booking key survived too.
  const auto expected_running = harness->marks_in_flight_pending_on_reopen()
                                    ? RequestState::usage_pending
                                    : RequestState::in_flight;
  EXPECT_EQ(store->get_request(running)->state, expected_running);
  EXPECT_EQ(store->get_request(pending)->state, RequestState::usage_pending);
  EXPECT_EQ(store->get_request(booked)->state, RequestState::booked);
  auto dup = book(a, booked, "p1", {4, 6});
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ(dup->book, core::BookResult::duplicate);
  ASSERT_TRUE(settle({running, a.allocation.id, SettleKind::failed, "", {}}).ok());
  EXPECT_EQ(store
                ->list_events(store::EventFilter{
                    .allocation_id = a.allocation.id, .after = std::nullopt, .limit = 100})
                ->data.size(),
            1u);
  EXPECT_EQ(store->reconcile({pending, {1, 1}, "ok"})->source, core::EventSource::reconciliation);
  EXPECT_EQ(status(a.allocation.id)->snapshot.held, (Tokens{0, 0}));
}

TEST_P(StoreContract, ReopenTurnsInFlightIntoPendingOrTheSweepDoes) {
  auto a = create({100, 100000, 1}, {1000, 1000});
  const auto id = admit_ok(a, 10, 20);
  reopen();
  if (harness->marks_in_flight_pending_on_reopen()) {
    EXPECT_EQ(store->get_request(id)->state, RequestState::usage_pending);
    EXPECT_EQ(status(a.allocation.id)->snapshot.in_flight, 0);
  } else {
    EXPECT_EQ(store->get_request(id)->state, RequestState::in_flight);
    clock->advance_seconds(600);
    EXPECT_EQ(*store->sweep_stale(), 1);
    EXPECT_EQ(store->get_request(id)->state, RequestState::usage_pending);
  }
  EXPECT_EQ(status(a.allocation.id)->snapshot.held, (Tokens{10, 20}));
  EXPECT_EQ(status(a.allocation.id)->snapshot.usage_pending, 1);
  const auto next = admit_ok(a, 1, 1);
  ASSERT_TRUE(settle({next, a.allocation.id, SettleKind::failed, "", {}}).ok());
}

// ---------------------------------------------------------------- concurrency

TEST_P(StoreContract, ConcurrentAdmissionsNeverExceedConcurrencyOrAllowance) {
  constexpr int threads = 8;
  constexpr int attempts_per_thread_max = 100000;  // ends long before: the allowance runs out
  auto a = create({1000000, 100000000, 5}, {1000000, 300});
  std::atomic<int64_t> in_flight{0};
  std::atomic<int64_t> max_seen{0};
  std::atomic<int64_t> admitted{0};
  std::atomic<int64_t> store_in_flight_max{0};
  std::atomic<int> next_provider_id{0};
  auto raise = [](std::atomic<int64_t>& m, int64_t v) {
    int64_t prev = m.load();
    while (v > prev && !m.compare_exchange_weak(prev, v)) {
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = 0; i < attempts_per_thread_max; ++i) {
        auto cmd = admit_cmd(a, 1, 10);
        auto r = admit(cmd);
        if (!r.ok()) continue;
        if (const auto* no = refused(*r)) {
          if (no->reason == Refusal::max_concurrency) continue;
          break;  // depleted or exhausted: the allowance is spent
        }
        raise(max_seen, ++in_flight);
        raise(store_in_flight_max, r->after.in_flight);
        ++admitted;
        --in_flight;  // before settling: the store may admit the next one at once
        auto b = book(a, cmd.request_id, "p" + std::to_string(next_provider_id++), {1, 10});
        EXPECT_TRUE(b.ok());
      }
    });
  }
  for (auto& t : pool) t.join();
  EXPECT_LE(max_seen.load(), 5);
  EXPECT_LE(store_in_flight_max.load(), 5);
  auto s = status(a.allocation.id);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(admitted.load(), 30);  // 300 output tokens / 10 per request, never more
  EXPECT_EQ(s->snapshot.booked.output, 300);
  EXPECT_EQ(s->snapshot.state, AllocationState::depleted);
  EXPECT_EQ(s->snapshot.held, (Tokens{0, 0}));
}

}  // namespace cairva::contract
