#include "core/ledger.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/limits.h"

namespace cairva::core {
namespace {

constexpr UnixMicros kSecond = micros_per_second;
constexpr UnixMicros kStart = 1'800'000'000LL * kSecond;
constexpr UnixMicros kNow = kStart + 10 * kSecond;
// The largest count a compact booking slot holds is one below this; counts from it up
// are legal and must come back exactly.
constexpr int64_t kU32Max = std::numeric_limits<uint32_t>::max();

Terms terms(Limits limits = {.requests_per_minute = 100,
                             .tokens_per_minute = 1'000'000,
                             .max_concurrency = 10},
            Tokens allowance = {1'000'000, 1'000'000}) {
  return Terms{
      .window = {kStart, kStart + 3600 * kSecond}, .limits = limits, .allowance = allowance};
}

RequestFacts facts(int64_t max_tokens = 100, int64_t input = 20, int64_t n = 1) {
  RequestFacts f;
  f.input_estimate = input;
  f.max_tokens = max_tokens;
  f.n = n;
  return f;
}

Refusal refusal_of(const AdmissionDecision& d) {
  EXPECT_FALSE(d.admitted());
  return d.admitted() ? Refusal::agreement_cancelled : std::get<Refused>(d.outcome).reason;
}

// ---------------------------------------------------------------- admission

TEST(Ledger, NewAllocationIsReadyInForceAndEmpty) {
  AllocationLedger l(terms());
  EXPECT_EQ(l.state(), AllocationState::ready);
  EXPECT_EQ(l.agreement_state(), AgreementState::in_force);
  const AllocationSnapshot s = l.snapshot(kNow);
  EXPECT_EQ(s.booked, (Tokens{0, 0}));
  EXPECT_EQ(s.held, (Tokens{0, 0}));
  EXPECT_EQ(s.remaining(), (Tokens{1'000'000, 1'000'000}));
}

TEST(Ledger, AdmitActivatesReadyAllocationAndRecordsStartHoldAndInFlight) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("r1", facts(100, 20), kNow).admitted());
  EXPECT_EQ(l.state(), AllocationState::active);
  const AllocationSnapshot s = l.snapshot(kNow);
  EXPECT_EQ(s.requests_last_minute, 1);
  EXPECT_EQ(s.in_flight, 1);
  EXPECT_EQ(s.held, (Tokens{20, 100}));
  const OpenRequest* r = l.find_open("r1");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->state, RequestState::in_flight);
  EXPECT_EQ(r->started_at, kNow);
}

TEST(Ledger, RefusedRequestIsNotStartedAndCountsTowardNoLimit) {
  AllocationLedger l(
      terms({.requests_per_minute = 5, .tokens_per_minute = 1000, .max_concurrency = 1}));
  ASSERT_TRUE(l.admit("r1", facts(), kNow).admitted());
  EXPECT_EQ(refusal_of(l.admit("r2", facts(), kNow)), Refusal::max_concurrency);
  EXPECT_EQ(l.find_open("r2"), nullptr);
  const AllocationSnapshot s = l.snapshot(kNow);
  EXPECT_EQ(s.requests_last_minute, 1);
  EXPECT_EQ(s.in_flight, 1);
  EXPECT_EQ(s.held, (Tokens{20, 100}));
}

TEST(Ledger, RequestsPerMinuteCountsStartsInTheExactTrailingSixtySeconds) {
  AllocationLedger l(
      terms({.requests_per_minute = 2, .tokens_per_minute = 1000, .max_concurrency = 10}));
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_TRUE(l.admit("b", facts(), kNow + 30 * kSecond).admitted());
  // The first start still counts one microsecond before it is 60 s old...
  EXPECT_EQ(refusal_of(l.admit("c", facts(), kNow + 60 * kSecond - 1)),
            Refusal::requests_per_minute);
  EXPECT_EQ(l.snapshot(kNow + 60 * kSecond - 1).requests_last_minute, 2);
  // ...and leaves the window when started_at > now - 60 s stops holding.
  EXPECT_EQ(l.snapshot(kNow + 60 * kSecond).requests_last_minute, 1);
  EXPECT_TRUE(l.admit("c", facts(), kNow + 60 * kSecond).admitted());
}

TEST(Ledger, FailedRequestsStillCountTowardRequestsPerMinute) {
  AllocationLedger l(
      terms({.requests_per_minute = 1, .tokens_per_minute = 1000, .max_concurrency = 10}));
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_TRUE(l.fail("a"));
  EXPECT_EQ(l.snapshot(kNow).requests_last_minute, 1);
  EXPECT_EQ(refusal_of(l.admit("b", facts(), kNow + kSecond)), Refusal::requests_per_minute);
}

TEST(Ledger, AWithdrawnAdmissionLeavesNoTrace) {
  AllocationLedger l(
      terms({.requests_per_minute = 2, .tokens_per_minute = 1000, .max_concurrency = 10}));
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_TRUE(l.admit("b", facts(), kNow).admitted());  // same start time as a's
  EXPECT_EQ(refusal_of(l.admit("c", facts(), kNow)), Refusal::requests_per_minute);
  ASSERT_TRUE(l.withdraw("b"));
  AllocationSnapshot s = l.snapshot(kNow);
  EXPECT_EQ(s.requests_last_minute, 1);
  EXPECT_EQ(s.in_flight, 1);
  EXPECT_EQ(s.held, (Tokens{20, 100}));
  EXPECT_TRUE(l.admit("c", facts(), kNow).admitted()) << "the withdrawn start no longer counts";
  EXPECT_FALSE(l.withdraw("b")) << "once only";
  EXPECT_FALSE(l.withdraw("never"));
  ASSERT_TRUE(l.mark_usage_pending("a"));
  EXPECT_FALSE(l.withdraw("a")) << "only a request still in flight: a's provider answered";
  ASSERT_TRUE(l.fail("c"));
  EXPECT_FALSE(l.withdraw("c"));
  s = l.snapshot(kNow);
  EXPECT_EQ(s.requests_last_minute, 2);  // a (pending) and c (failed) still count
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.held, (Tokens{20, 100}));  // a's hold, kept while pending
}

TEST(Ledger, WithdrawingAfterTheStartAgedOutChangesOnlyTheRequest) {
  AllocationLedger l(
      terms({.requests_per_minute = 1, .tokens_per_minute = 1000, .max_concurrency = 10}));
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  const UnixMicros later = kNow + 61 * kSecond;
  ASSERT_TRUE(l.admit("b", facts(), later).admitted());  // a's start has aged out
  ASSERT_TRUE(l.withdraw("a"));
  const AllocationSnapshot s = l.snapshot(later);
  EXPECT_EQ(s.requests_last_minute, 1) << "b's start stays";
  EXPECT_EQ(s.in_flight, 1);
}

TEST(Ledger, RequestsPerMinuteLogNeverHoldsMoreThanTheLimit) {
  AllocationLedger l(
      terms({.requests_per_minute = 3, .tokens_per_minute = 1000, .max_concurrency = 10}));
  // A restart may restore more starts than the limit (rows written by processes that
  // raced); only the newest `limit` of them can ever decide an admission.
  for (int i = 0; i < 10; ++i) l.restore_start(kNow - 50 * kSecond + i * kSecond);
  EXPECT_EQ(l.snapshot(kNow).requests_last_minute, 3);
  EXPECT_EQ(refusal_of(l.admit("a", facts(), kNow)), Refusal::requests_per_minute);
  // The third newest restored start (kNow - 43 s) ages out at kNow + 17 s: from then on
  // fewer than 3 starts are in the window, exactly as with all ten rows kept.
  EXPECT_EQ(refusal_of(l.admit("a", facts(), kNow + 17 * kSecond - 1)),
            Refusal::requests_per_minute);
  EXPECT_EQ(l.snapshot(kNow + 17 * kSecond).requests_last_minute, 2);
  EXPECT_TRUE(l.admit("a", facts(), kNow + 17 * kSecond).admitted());
}

TEST(Ledger, ConcurrencyCountsOnlyRequestsInFlight) {
  AllocationLedger l(
      terms({.requests_per_minute = 100, .tokens_per_minute = 100'000, .max_concurrency = 2}));
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_TRUE(l.admit("b", facts(), kNow).admitted());
  EXPECT_EQ(refusal_of(l.admit("c", facts(), kNow)), Refusal::max_concurrency);
  ASSERT_TRUE(l.mark_usage_pending("a"));  // provider done: no longer in flight
  EXPECT_TRUE(l.admit("c", facts(), kNow).admitted());
  EXPECT_EQ(refusal_of(l.admit("d", facts(), kNow)), Refusal::max_concurrency);
  ASSERT_EQ(l.book("b", "p-b", {10, 10}, kNow).result, BookResult::booked);
  EXPECT_TRUE(l.admit("d", facts(), kNow).admitted());
}

TEST(Ledger, TokensPerMinuteCountsBookedTokensInTheExactTrailingSixtySeconds) {
  AllocationLedger l(
      terms({.requests_per_minute = 100, .tokens_per_minute = 100, .max_concurrency = 10}));
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_EQ(l.book("a", "p-a", {40, 60}, kNow + kSecond).result, BookResult::booked);
  EXPECT_EQ(l.snapshot(kNow + kSecond).tokens_last_minute, 100);
  EXPECT_EQ(refusal_of(l.admit("b", facts(), kNow + 61 * kSecond - 1)), Refusal::tokens_per_minute);
  EXPECT_EQ(l.snapshot(kNow + 61 * kSecond).tokens_last_minute, 0);
  EXPECT_TRUE(l.admit("b", facts(), kNow + 61 * kSecond).admitted());
}

TEST(Ledger, TokensPerMinuteCountsUsageOnlyOnceBookedSoABurstStartsTogether) {
  AllocationLedger l(
      terms({.requests_per_minute = 100, .tokens_per_minute = 500, .max_concurrency = 10}));
  // Holds far above the tokens_per_minute limit do not stop a burst from starting.
  for (const char* id : {"a", "b", "c"})
    ASSERT_TRUE(l.admit(id, facts(1000, 300), kNow).admitted());
  EXPECT_EQ(l.snapshot(kNow).tokens_last_minute, 0);
  ASSERT_EQ(l.book("a", "p-a", {300, 250}, kNow + kSecond).result, BookResult::booked);
  EXPECT_EQ(refusal_of(l.admit("d", facts(), kNow + kSecond)), Refusal::tokens_per_minute);
  // The others still book: the limit only gates new admissions.
  EXPECT_EQ(l.book("b", "p-b", {300, 250}, kNow + kSecond).result, BookResult::booked);
  EXPECT_EQ(l.snapshot(kNow + kSecond).tokens_last_minute, 1100);
}

TEST(Ledger, TokensPerMinuteCountsReconciledBookingsByBookedAt) {
  AllocationLedger l(
      terms({.requests_per_minute = 100, .tokens_per_minute = 100, .max_concurrency = 10}));
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_TRUE(l.mark_usage_pending("a"));
  const UnixMicros later = kNow + 3600 * kSecond / 2;
  ASSERT_EQ(l.reconcile("a", "p-a", {50, 50}, later).result, ReconcileResult::booked);
  EXPECT_EQ(l.snapshot(later).tokens_last_minute, 100);
  EXPECT_EQ(refusal_of(l.admit("b", facts(), later + kSecond)), Refusal::tokens_per_minute);
}

// ---------------------------------------------------------------- rate resets

TEST(Ledger, AFullRequestsWindowResetsWhenItsOldestStartLeaves) {
  AllocationLedger l(
      terms({.requests_per_minute = 3, .tokens_per_minute = 1000, .max_concurrency = 10}));
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  EXPECT_EQ(rate_resets(l.snapshot(kNow), kNow).requests_us, 0);
  ASSERT_TRUE(l.admit("b", facts(), kNow + 5 * kSecond).admitted());
  ASSERT_TRUE(l.fail("a"));  // a failed request's start still counts, and still leaves
  ASSERT_TRUE(l.admit("c", facts(), kNow + 7 * kSecond).admitted());
  const UnixMicros later = kNow + 20 * kSecond;
  AllocationSnapshot s = l.snapshot(later);
  EXPECT_EQ(s.as_of, later);
  EXPECT_EQ(s.oldest_start_at, kNow);
  EXPECT_EQ(rate_resets(s, later).requests_us, 40 * kSecond);
  const AdmissionDecision d = l.admit("d", facts(), later);
  EXPECT_EQ(refusal_of(d), Refusal::requests_per_minute);
  EXPECT_EQ(std::get<Refused>(d.outcome).retry_after_ms, 40'000);
  // At that instant the oldest start has left: room for exactly one, then the next start's time.
  const UnixMicros reset = later + 40 * kSecond;
  EXPECT_EQ(refusal_of(l.admit("d", facts(), reset - 1)), Refusal::requests_per_minute);
  ASSERT_TRUE(l.admit("d", facts(), reset).admitted());
  s = l.snapshot(reset);
  EXPECT_EQ(s.oldest_start_at, kNow + 5 * kSecond);
  EXPECT_EQ(rate_resets(s, reset).requests_us, 5 * kSecond);
}

TEST(Ledger, AFullTokensWindowResetsWhenEnoughBookedTokensLeave) {
  AllocationLedger l(
      terms({.requests_per_minute = 100, .tokens_per_minute = 100, .max_concurrency = 10}));
  for (const char* id : {"a", "b", "c", "d"}) ASSERT_TRUE(l.admit(id, facts(), kNow).admitted());
  ASSERT_EQ(l.book("a", "p-a", {20, 10}, kNow + 1 * kSecond).result, BookResult::booked);  // 30
  ASSERT_EQ(l.book("b", "p-b", {20, 20}, kNow + 2 * kSecond).result, BookResult::booked);  // 70
  EXPECT_EQ(rate_resets(l.snapshot(kNow + 2 * kSecond), kNow + 2 * kSecond).tokens_us, 0);
  ASSERT_EQ(l.book("c", "p-c", {25, 25}, kNow + 3 * kSecond).result, BookResult::booked);  // 120
  ASSERT_EQ(l.book("d", "p-d", {5, 5}, kNow + 4 * kSecond).result, BookResult::booked);    // 130
  // 130 - 100 = 30 must leave, and then some: a's 30 leaves 100, still the limit, so the
  // window has room once b's booking leaves too.
  const UnixMicros t = kNow + 10 * kSecond;
  AllocationSnapshot s = l.snapshot(t);
  EXPECT_EQ(s.freeing_booking_at, kNow + 2 * kSecond);
  EXPECT_EQ(rate_resets(s, t).tokens_us, 52 * kSecond);
  const AdmissionDecision d = l.admit("e", facts(), t);
  EXPECT_EQ(refusal_of(d), Refusal::tokens_per_minute);
  EXPECT_EQ(std::get<Refused>(d.outcome).retry_after_ms, 52'000);
  // After a's booking leaves: 100 in the window, still full, b's still frees it.
  s = l.snapshot(kNow + 61 * kSecond);
  EXPECT_EQ(s.tokens_last_minute, 100);
  EXPECT_EQ(s.freeing_booking_at, kNow + 2 * kSecond);
  EXPECT_EQ(refusal_of(l.admit("e", facts(), kNow + 62 * kSecond - 1)), Refusal::tokens_per_minute);
  EXPECT_TRUE(l.admit("e", facts(), kNow + 62 * kSecond).admitted());
  EXPECT_EQ(rate_resets(l.snapshot(kNow + 62 * kSecond), kNow + 62 * kSecond).tokens_us, 0);
}

TEST(Ledger, ASingleBookingOverTheLimitFreesTheWindowWhenItLeaves) {
  AllocationLedger l(
      terms({.requests_per_minute = 100, .tokens_per_minute = 100, .max_concurrency = 10}));
  for (const char* id : {"a", "b"}) ASSERT_TRUE(l.admit(id, facts(), kNow).admitted());
  ASSERT_EQ(l.book("a", "p-a", {1, 0}, kNow).result, BookResult::booked);
  ASSERT_EQ(l.book("b", "p-b", {400, 400}, kNow + kSecond).result, BookResult::booked);
  const AllocationSnapshot s = l.snapshot(kNow + kSecond);
  EXPECT_EQ(s.freeing_booking_at, kNow + kSecond);  // a leaving alone leaves 800
  EXPECT_EQ(rate_resets(s, kNow + kSecond).tokens_us, 60 * kSecond);
}

TEST(Ledger, RestoredBookingsOutOfOrderKeepTheRunningSumsExact) {
  AllocationLedger l(
      terms({.requests_per_minute = 100, .tokens_per_minute = 100, .max_concurrency = 10}));
  l.restore_booking(kNow - 10 * kSecond, 50);
  l.restore_booking(kNow - 30 * kSecond, 40);  // before the first: renumbers it
  l.restore_booking(kNow - 20 * kSecond, 30);
  // In time order 40, 30, 50 (120): more than 20 must leave, so the first one frees room.
  AllocationSnapshot s = l.snapshot(kNow);
  EXPECT_EQ(s.tokens_last_minute, 120);
  EXPECT_EQ(s.freeing_booking_at, kNow - 30 * kSecond);
  l.restore_booking(kNow - 40 * kSecond, 10);  // 130: 10 + 40 = 50 > 30 must leave
  s = l.snapshot(kNow);
  EXPECT_EQ(s.freeing_booking_at, kNow - 30 * kSecond);
  l.restore_booking(kNow - 35 * kSecond, 45);  // 175: 10 + 45 + 40 = 95 > 75
  s = l.snapshot(kNow);
  EXPECT_EQ(s.freeing_booking_at, kNow - 30 * kSecond);
  EXPECT_EQ(rate_resets(s, kNow).tokens_us, 30 * kSecond);
}

// ---------------------------------------------------------------- holds

TEST(Ledger, HoldCountsAgainstRemainingWhileTheRequestRuns) {
  AllocationLedger l(terms(terms().limits, {1000, 1000}));
  ASSERT_TRUE(l.admit("a", facts(300, 100), kNow).admitted());
  EXPECT_EQ(l.snapshot(kNow).remaining(), (Tokens{900, 700}));
  // Remaining drops while the request runs and comes back up when real counts are lower.
  ASSERT_EQ(l.book("a", "p-a", {60, 40}, kNow).result, BookResult::booked);
  EXPECT_EQ(l.snapshot(kNow).remaining(), (Tokens{940, 960}));
}

TEST(Ledger, ParallelHoldsCannotJointlyOverspendTheAllowance) {
  AllocationLedger l(terms(terms().limits, {10'000, 1000}));
  const AdmissionDecision a = l.admit("a", facts(400), kNow);
  const AdmissionDecision b = l.admit("b", facts(400), kNow);
  const AdmissionDecision c = l.admit("c", facts(400), kNow);
  ASSERT_TRUE(a.admitted() && b.admitted() && c.admitted());
  EXPECT_EQ(std::get<Admitted>(c.outcome).lowered_to, 200);  // lowered to fit
  EXPECT_EQ(refusal_of(l.admit("d", facts(400), kNow)), Refusal::allowance_exhausted);
  EXPECT_EQ(l.held().output, 1000);
}

// ---------------------------------------------------------------- settlement

TEST(Ledger, BookReleasesHoldAndBooksRealCountsOnce) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(100, 20), kNow).admitted());
  const BookOutcome o = l.book("a", "chatcmpl-1", {25, 80}, kNow);
  EXPECT_EQ(o.result, BookResult::booked);
  EXPECT_FALSE(o.became_depleted);
  EXPECT_EQ(l.booked(), (Tokens{25, 80}));
  EXPECT_EQ(l.held(), (Tokens{0, 0}));
  EXPECT_EQ(l.find_open("a"), nullptr);
  EXPECT_EQ(l.snapshot(kNow).in_flight, 0);
}

TEST(Ledger, AnIdBookedByAnotherRequestLeavesThisOnePendingWithItsHold) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_TRUE(l.admit("b", facts(), kNow).admitted());
  ASSERT_EQ(l.book("a", "chatcmpl-1", {25, 80}, kNow).result, BookResult::booked);
  const Tokens held = l.held();
  const BookOutcome o = l.book("b", "chatcmpl-1", {30, 90}, kNow);
  EXPECT_EQ(o.result, BookResult::reused_id);
  EXPECT_EQ(o.booked_event, (Tokens{25, 80}));
  // Nothing more is booked, and the request keeps its hold, usage_pending, with the
  // counts it reported kept.
  EXPECT_EQ(l.booked(), (Tokens{25, 80}));
  EXPECT_EQ(l.held(), held);
  ASSERT_NE(l.find_open("b"), nullptr);
  EXPECT_EQ(l.find_open("b")->state, RequestState::usage_pending);
  EXPECT_EQ(l.find_open("b")->reported, (ReportedUsage{{30, 90}, "chatcmpl-1"}));
  EXPECT_EQ(l.usage_pending(), 1);
  EXPECT_EQ(l.in_flight(), 0);
  // The same report again (a retried settlement) changes nothing more.
  const SettlePlan again = l.settle("b", {SettleKind::usage, "chatcmpl-1", {30, 90}}, kNow);
  EXPECT_EQ(again.outcome, BookResult::reused_id);
  EXPECT_FALSE(again.keep_reported || again.record_conflict || again.change_state);
  EXPECT_EQ(l.snapshot(kNow).tokens_last_minute, 105);
}

TEST(Ledger, OwnsTheIdsItBookedAndThoseItsPendingRequestsRecorded) {
  AllocationLedger l(terms());
  for (const char* id : {"a", "b", "c", "d"}) ASSERT_TRUE(l.admit(id, facts(), kNow).admitted());
  ASSERT_EQ(l.book("a", "resp_a", {5, 5}, kNow).result, BookResult::booked);
  EXPECT_TRUE(l.owns_provider_request("resp_a"));
  // Usage missing: the request's provider id is kept with it while it is pending.
  EXPECT_EQ(l.settle("b", {SettleKind::usage_missing, "resp_b", {}}, kNow).outcome,
            BookResult::pending);
  EXPECT_EQ(l.find_open("b")->provider_request_id, "resp_b");
  EXPECT_TRUE(l.owns_provider_request("resp_b"));
  // Reconciled under it: still owned, now as a booked id.
  EXPECT_EQ(l.reconcile("b", "resp_b", {1, 1}, kNow).result, ReconcileResult::booked);
  EXPECT_TRUE(l.owns_provider_request("resp_b"));
  // A provider error names nothing kept; an in-flight request has recorded nothing yet.
  EXPECT_EQ(l.settle("c", {SettleKind::failed, "resp_c", {}}, kNow).outcome, BookResult::failed);
  EXPECT_FALSE(l.owns_provider_request("resp_c"));
  EXPECT_FALSE(l.owns_provider_request(""));
  EXPECT_FALSE(l.owns_provider_request("resp_elsewhere"));
  // A pending request restored at a restart keeps what it recorded.
  AllocationLedger restored(terms());
  restored.restore_open_request(
      "e", OpenRequest{RequestState::usage_pending, {20, 100}, kNow, std::nullopt, "resp_e"});
  EXPECT_TRUE(restored.owns_provider_request("resp_e"));
  EXPECT_EQ(restored.settle("e", {SettleKind::failed, "", {}}, kNow).outcome, BookResult::failed);
  EXPECT_FALSE(restored.owns_provider_request("resp_e")) << "forgotten with the request";
}

TEST(Ledger, AProviderIdNotedInFlightIsOwnedUntilTheRequestEndsWithout) {
  AllocationLedger l(terms());
  for (const char* id : {"a", "b", "c"}) ASSERT_TRUE(l.admit(id, facts(), kNow).admitted());
  EXPECT_TRUE(l.note_provider_id("a", "resp_a"));
  EXPECT_EQ(l.find_open("a")->provider_request_id, "resp_a");
  EXPECT_TRUE(l.owns_provider_request("resp_a"));
  // Usage missing without an id of its own keeps the noted one.
  EXPECT_EQ(l.settle("a", {SettleKind::usage_missing, "", {}}, kNow).outcome, BookResult::pending);
  EXPECT_TRUE(l.owns_provider_request("resp_a"));
  EXPECT_FALSE(l.note_provider_id("a", "resp_other")) << "no longer in flight";
  EXPECT_EQ(l.find_open("a")->provider_request_id, "resp_a");
  EXPECT_FALSE(l.note_provider_id("nope", "resp_x"));
  // A provider error keeps nothing, noted or not.
  EXPECT_TRUE(l.note_provider_id("b", "resp_b"));
  EXPECT_EQ(l.settle("b", {SettleKind::failed, "", {}}, kNow).outcome, BookResult::failed);
  EXPECT_FALSE(l.owns_provider_request("resp_b"));
  // A noted id that turns out to be another request's event is dropped at the settlement.
  ASSERT_TRUE(l.admit("d", facts(), kNow).admitted());
  EXPECT_TRUE(l.note_provider_id("c", "resp_same"));
  ASSERT_EQ(l.book("d", "resp_same", {5, 5}, kNow).result, BookResult::booked);
  EXPECT_EQ(l.settle("c", {SettleKind::usage, "resp_same", {5, 5}}, kNow).outcome,
            BookResult::reused_id);
  EXPECT_EQ(l.find_open("c")->provider_request_id, "");
}

// Terms under which nothing refuses or depletes however large the bookings.
Terms roomy_terms() {
  constexpr int64_t kHuge = int64_t{1} << 50;
  return terms({.requests_per_minute = 100, .tokens_per_minute = kHuge, .max_concurrency = 100},
               {kHuge, kHuge});
}

TEST(Ledger, AReusedIdReturnsTheEarlierCountsExactlyAtAndAboveUint32Max) {
  AllocationLedger l(roomy_terms());
  const int64_t counts[] = {kU32Max - 1, kU32Max, kU32Max + 1, int64_t{5'000'000'000}};
  int request = 0;
  auto admitted = [&] {
    std::string id = "r" + std::to_string(request++);
    EXPECT_TRUE(l.admit(id, facts(), kNow).admitted());
    return id;
  };
  Tokens booked;
  for (const int64_t c : counts) {
    const std::string pid = "chatcmpl-" + std::to_string(c);
    const Tokens usage{c, c + 1};
    ASSERT_EQ(l.book(admitted(), pid, usage, kNow).result, BookResult::booked);
    booked = {booked.input + usage.input, booked.output + usage.output};
    const BookOutcome dup = l.book(admitted(), pid, usage, kNow);
    EXPECT_EQ(dup.result, BookResult::reused_id) << c;
    EXPECT_EQ(dup.booked_event, usage) << c;
    const BookOutcome other = l.book(admitted(), pid, {c, c + 1 + (int64_t{1} << 32)}, kNow);
    EXPECT_EQ(other.result, BookResult::reused_id) << c;
    EXPECT_EQ(other.booked_event, usage) << c;
    EXPECT_EQ(l.book(admitted(), pid, {c + 1, c + 1}, kNow).booked_event, usage) << c;
  }
  EXPECT_EQ(l.booked(), booked);
}

TEST(Ledger, SettlingAForgottenRequestChangesNothing) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_EQ(l.book("a", "p-1", {1, 1}, kNow).result, BookResult::booked);
  EXPECT_EQ(l.book("a", "p-2", {5, 5}, kNow).result, BookResult::unknown_request);
  EXPECT_EQ(l.book("nope", "p-3", {5, 5}, kNow).result, BookResult::unknown_request);
  EXPECT_FALSE(l.fail("a"));
  EXPECT_FALSE(l.mark_usage_pending("a"));
  EXPECT_EQ(l.booked(), (Tokens{1, 1}));
}

TEST(Ledger, UsageMissingKeepsTheHoldAndMarksUsagePending) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(100, 20), kNow).admitted());
  ASSERT_TRUE(l.mark_usage_pending("a"));
  EXPECT_EQ(l.find_open("a")->state, RequestState::usage_pending);
  const AllocationSnapshot s = l.snapshot(kNow);
  EXPECT_EQ(s.held, (Tokens{20, 100}));
  EXPECT_EQ(s.usage_pending, 1);
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.booked, (Tokens{0, 0}));
  EXPECT_FALSE(l.mark_usage_pending("a"));  // only an in-flight request can become pending
}

TEST(Ledger, ProviderErrorReleasesTheHoldAndBooksNothing) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(100, 20), kNow).admitted());
  ASSERT_TRUE(l.fail("a"));
  const AllocationSnapshot s = l.snapshot(kNow);
  EXPECT_EQ(s.held, (Tokens{0, 0}));
  EXPECT_EQ(s.booked, (Tokens{0, 0}));
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.tokens_last_minute, 0);
}

TEST(Ledger, StaleInFlightRequestBecomesUsagePendingAndLeavesConcurrency) {
  AllocationLedger l(
      terms({.requests_per_minute = 100, .tokens_per_minute = 1000, .max_concurrency = 1}));
  ASSERT_TRUE(l.admit("a", facts(100, 20), kNow).admitted());
  const UnixMicros stale_at = kNow + in_flight_timeout_s_default * kSecond;
  EXPECT_TRUE(l.sweep_stale(stale_at - 1, in_flight_timeout_s_default).empty());
  EXPECT_EQ(refusal_of(l.admit("b", facts(), stale_at - 1)), Refusal::max_concurrency);
  EXPECT_EQ(l.sweep_stale(stale_at, in_flight_timeout_s_default), std::vector<std::string>{"a"});
  EXPECT_EQ(l.find_open("a")->state, RequestState::usage_pending);
  EXPECT_EQ(l.held(), (Tokens{20, 100}));  // the hold stays
  EXPECT_TRUE(l.admit("b", facts(), stale_at).admitted());
}

TEST(Ledger, SweepMovesOnlyRequestsOlderThanTheTimeoutOldestFirst) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_TRUE(l.admit("b", facts(), kNow + kSecond).admitted());
  ASSERT_TRUE(l.admit("c", facts(), kNow + 2 * kSecond).admitted());
  ASSERT_TRUE(l.fail("b"));
  EXPECT_EQ(l.sweep_stale(kNow + 31 * kSecond, 30), (std::vector<std::string>{"a"}));
  EXPECT_EQ(l.sweep_stale(kNow + 40 * kSecond, 30), (std::vector<std::string>{"c"}));
  EXPECT_EQ(l.snapshot(kNow + 40 * kSecond).usage_pending, 2);
}

TEST(Ledger, LateReportForAStaleRequestIsBookedNormally) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(100, 20), kNow).admitted());
  ASSERT_EQ(l.sweep_stale(kNow + 600 * kSecond, 600).size(), 1u);
  const BookOutcome o = l.book("a", "p-a", {30, 70}, kNow + 601 * kSecond);
  EXPECT_EQ(o.result, BookResult::booked);
  EXPECT_EQ(l.booked(), (Tokens{30, 70}));
  EXPECT_EQ(l.held(), (Tokens{0, 0}));
  EXPECT_EQ(l.snapshot(kNow + 601 * kSecond).usage_pending, 0);
}

TEST(Ledger, ReconcileBooksAPendingRequestAndReleasesItsHold) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(100, 20), kNow).admitted());
  ASSERT_TRUE(l.mark_usage_pending("a"));
  const ReconcileOutcome o = l.reconcile("a", "a", {12, 34}, kNow + kSecond);
  EXPECT_EQ(o.result, ReconcileResult::booked);
  EXPECT_EQ(l.booked(), (Tokens{12, 34}));
  EXPECT_EQ(l.held(), (Tokens{0, 0}));
  EXPECT_EQ(l.find_open("a"), nullptr);
}

TEST(Ledger, ReconcileRefusesARequestStillInFlight) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  EXPECT_EQ(l.reconcile("a", "a", {1, 1}, kNow).result, ReconcileResult::not_pending);
  EXPECT_EQ(l.reconcile("zz", "zz", {1, 1}, kNow).result, ReconcileResult::unknown_request);
  EXPECT_EQ(l.booked(), (Tokens{0, 0}));
}

TEST(Ledger, ReconcileRefusesAProviderRequestIdAlreadyBooked) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_TRUE(l.admit("b", facts(), kNow).admitted());
  ASSERT_EQ(l.book("a", "p-1", {5, 5}, kNow).result, BookResult::booked);
  ASSERT_TRUE(l.mark_usage_pending("b"));
  EXPECT_EQ(l.reconcile("b", "p-1", {7, 7}, kNow).result, ReconcileResult::provider_id_taken);
  EXPECT_EQ(l.find_open("b")->state, RequestState::usage_pending);  // still pending
  EXPECT_EQ(l.booked(), (Tokens{5, 5}));
}

TEST(Ledger, ProviderReportAfterReconciliationBooksNothing) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_TRUE(l.mark_usage_pending("a"));
  ASSERT_EQ(l.reconcile("a", "a", {12, 34}, kNow).result, ReconcileResult::booked);
  EXPECT_NE(l.book("a", "chatcmpl-late", {12, 34}, kNow).result, BookResult::booked);
  EXPECT_EQ(l.booked(), (Tokens{12, 34}));
}

TEST(Ledger, ReconcileRefusesAProviderRequestIdBookedWithCountsAboveUint32Max) {
  AllocationLedger l(roomy_terms());
  for (const char* id : {"a", "b", "c"}) ASSERT_TRUE(l.admit(id, facts(), kNow).admitted());
  const Tokens big{kU32Max + 1, 0};
  ASSERT_EQ(l.book("a", "p-1", big, kNow).result, BookResult::booked);
  ASSERT_TRUE(l.mark_usage_pending("b"));
  EXPECT_EQ(l.reconcile("b", "p-1", big, kNow).result, ReconcileResult::provider_id_taken);
  EXPECT_EQ(l.find_open("b")->state, RequestState::usage_pending);
  const Tokens bigger{kU32Max, kU32Max + 9};
  ASSERT_EQ(l.reconcile("b", "p-2", bigger, kNow).result, ReconcileResult::booked);
  const BookOutcome o = l.book("c", "p-2", bigger, kNow);
  EXPECT_EQ(o.result, BookResult::reused_id);
  EXPECT_EQ(o.booked_event, bigger);
  EXPECT_EQ(l.booked(), (Tokens{big.input + bigger.input, bigger.output}));
}

// ---------------------------------------------------------------- depletion

TEST(Ledger, DepletesWhenBookedInputReachesTheAllowance) {
  AllocationLedger l(terms(terms().limits, {100, 10'000}));
  ASSERT_TRUE(l.admit("a", facts(100, 50), kNow).admitted());
  const BookOutcome o = l.book("a", "p-a", {100, 10}, kNow);
  EXPECT_TRUE(o.became_depleted);
  EXPECT_EQ(l.state(), AllocationState::depleted);
  EXPECT_EQ(l.agreement_state(), AgreementState::completed);
  const AdmissionDecision d = l.admit("b", facts(), kNow);
  EXPECT_EQ(refusal_of(d), Refusal::depleted);
  EXPECT_EQ(std::get<Refused>(d.outcome).code, ErrorCode::allocation_depleted);
}

TEST(Ledger, DepletesWhenBookedOutputReachesTheAllowance) {
  AllocationLedger l(terms(terms().limits, {10'000, 100}));
  ASSERT_TRUE(l.admit("a", facts(100), kNow).admitted());
  EXPECT_TRUE(l.book("a", "p-a", {10, 100}, kNow).became_depleted);
  EXPECT_EQ(l.state(), AllocationState::depleted);
}

TEST(Ledger, DoesNotDepleteBelowTheAllowance) {
  AllocationLedger l(terms(terms().limits, {100, 100}));
  ASSERT_TRUE(l.admit("a", facts(100, 50), kNow).admitted());
  EXPECT_FALSE(l.book("a", "p-a", {99, 99}, kNow).became_depleted);
  EXPECT_EQ(l.state(), AllocationState::active);
}

TEST(Ledger, RequestsInFlightSettleNormallyAfterDepletion) {
  AllocationLedger l(terms(terms().limits, {1000, 1000}));
  ASSERT_TRUE(l.admit("a", facts(400, 50), kNow).admitted());
  ASSERT_TRUE(l.admit("b", facts(400, 50), kNow).admitted());
  ASSERT_TRUE(l.book("a", "p-a", {50, 1000}, kNow).became_depleted);  // real counts overran
  const BookOutcome o = l.book("b", "p-b", {40, 300}, kNow);
  EXPECT_EQ(o.result, BookResult::booked);
  EXPECT_FALSE(o.became_depleted);  // already depleted
  EXPECT_EQ(l.booked(), (Tokens{90, 1300}));
  EXPECT_EQ(l.held(), (Tokens{0, 0}));
  EXPECT_EQ(l.snapshot(kNow).remaining(), (Tokens{910, 0}));  // never negative
}

// ---------------------------------------------------------------- operator changes

TEST(Ledger, SuspendRefusesAdmissionAndResumeMakesItActive) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_TRUE(l.suspend());
  EXPECT_EQ(refusal_of(l.admit("b", facts(), kNow)), Refusal::suspended);
  ASSERT_TRUE(l.resume(kNow));
  EXPECT_EQ(l.state(), AllocationState::active);
  EXPECT_TRUE(l.admit("b", facts(), kNow).admitted());
}

TEST(Ledger, ResumeBeforeTheWindowGivesReady) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.suspend());
  ASSERT_TRUE(l.resume(kStart - kSecond));
  EXPECT_EQ(l.state(), AllocationState::ready);
}

TEST(Ledger, SuspendIsRefusedWhenDepletedOrExpired) {
  AllocationLedger depleted(terms(terms().limits, {10, 1000}));
  ASSERT_TRUE(depleted.admit("a", facts(100, 10), kNow).admitted());
  ASSERT_TRUE(depleted.book("a", "p-a", {10, 1}, kNow).became_depleted);
  EXPECT_FALSE(depleted.suspend());
  EXPECT_FALSE(depleted.resume(kNow));
  EXPECT_EQ(depleted.state(), AllocationState::depleted);

  AllocationLedger expired(terms());
  EXPECT_EQ(refusal_of(expired.admit("a", facts(), kStart + 3600 * kSecond)), Refusal::expired);
  EXPECT_EQ(expired.state(), AllocationState::expired);
  EXPECT_EQ(expired.agreement_state(), AgreementState::expired);
  EXPECT_FALSE(expired.suspend());
  EXPECT_FALSE(expired.resume(kNow));
}

TEST(Ledger, CancelRefusesAdmissionButRequestsInFlightSettle) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(), kNow).admitted());
  ASSERT_TRUE(l.cancel());
  EXPECT_EQ(l.agreement_state(), AgreementState::cancelled);
  const AdmissionDecision d = l.admit("b", facts(), kNow);
  EXPECT_EQ(refusal_of(d), Refusal::agreement_cancelled);
  EXPECT_EQ(std::get<Refused>(d.outcome).code, ErrorCode::allocation_not_active);
  EXPECT_EQ(l.book("a", "p-a", {5, 5}, kNow).result, BookResult::booked);
  EXPECT_FALSE(l.resume(kNow));
  EXPECT_FALSE(l.suspend());
}

// ---------------------------------------------------------------- restart

TEST(Ledger, RestoreRebuildsWindowsHoldsAndBookingKeys) {
  AllocationLedger l(
      terms({.requests_per_minute = 3, .tokens_per_minute = 100, .max_concurrency = 2}));
  l.restore_states(AgreementState::in_force, AllocationState::active);
  l.restore_booked({500, 600});
  l.restore_start(kNow - 10 * kSecond);
  l.restore_booking(kNow - 5 * kSecond, 60);
  l.restore_booked_provider_id("p-old", {200, 300});
  l.restore_open_request("x", {RequestState::usage_pending, {10, 20}, kNow - 700 * kSecond});
  l.restore_open_request("y", {RequestState::in_flight, {1, 2}, kNow - kSecond});
  const AllocationSnapshot s = l.snapshot(kNow);
  EXPECT_EQ(s.booked, (Tokens{500, 600}));
  EXPECT_EQ(s.held, (Tokens{11, 22}));
  EXPECT_EQ(s.requests_last_minute, 1);
  EXPECT_EQ(s.tokens_last_minute, 60);
  EXPECT_EQ(s.in_flight, 1);
  EXPECT_EQ(s.usage_pending, 1);
  EXPECT_EQ(l.book("y", "p-old", {200, 300}, kNow).result, BookResult::reused_id);
  EXPECT_EQ(l.reconcile("x", "x", {9, 9}, kNow).result, ReconcileResult::booked);
  EXPECT_EQ(l.booked(), (Tokens{509, 609}));
}

TEST(Ledger, RestoredBookingKeysKeepCountsAtAndAboveUint32MaxExactly) {
  AllocationLedger l(roomy_terms());
  l.restore_booked_provider_id("p-edge", {kU32Max - 1, kU32Max});
  l.restore_booked_provider_id("p-big", {kU32Max + 2, 7});
  l.restore_booked_provider_id("p-again", {kU32Max + 2, 7});
  l.restore_booked_provider_id("p-again", {3, 4});  // a repeated row: the later one stands
  for (const char* id : {"a", "b", "c", "d"}) ASSERT_TRUE(l.admit(id, facts(), kNow).admitted());
  const BookOutcome edge = l.book("a", "p-edge", {kU32Max - 1, kU32Max}, kNow);
  EXPECT_EQ(edge.result, BookResult::reused_id);
  EXPECT_EQ(edge.booked_event, (Tokens{kU32Max - 1, kU32Max}));
  const BookOutcome big = l.book("b", "p-big", {kU32Max + 2, 8}, kNow);
  EXPECT_EQ(big.result, BookResult::reused_id);
  EXPECT_EQ(big.booked_event, (Tokens{kU32Max + 2, 7}));
  const BookOutcome again = l.book("c", "p-again", {kU32Max + 2, 7}, kNow);
  EXPECT_EQ(again.result, BookResult::reused_id);
  EXPECT_EQ(again.booked_event, (Tokens{3, 4}));
  ASSERT_TRUE(l.mark_usage_pending("d"));
  EXPECT_EQ(l.reconcile("d", "p-big", {1, 1}, kNow).result, ReconcileResult::provider_id_taken);
  EXPECT_EQ(l.booked(), (Tokens{0, 0}));
}

}  // namespace
}  // namespace cairva::core

namespace cairva::core {
namespace {

// ---------------------------------------------------------------- corrections

TEST(Ledger, AnAdjustmentMovesBookedAndRemainingButNoTrailingWindow) {
  AllocationLedger l(terms());
  ASSERT_TRUE(l.admit("a", facts(100, 20), kNow).admitted());
  ASSERT_EQ(l.book("a", "p-a", {60, 40}, kNow).result, BookResult::booked);
  ASSERT_TRUE(l.adjust({-10, 25}).allowed);
  const AllocationSnapshot s = l.snapshot(kNow);
  EXPECT_EQ(s.booked, (Tokens{50, 65}));
  EXPECT_EQ(s.tokens_last_minute, 100);  // the booking's 60 + 40 only
  EXPECT_FALSE(l.adjust({-51, 0}).allowed);
  EXPECT_EQ(l.booked(), (Tokens{50, 65}));
}

TEST(Ledger, AnAdjustmentBelowTheAllowanceRevivesADepletedAllocation) {
  AllocationLedger l(terms({100, 1'000'000, 10}, {100, 100}));
  ASSERT_TRUE(l.admit("a", facts(50, 20), kNow).admitted());
  ASSERT_TRUE(l.book("a", "p-a", {5000, 5000}, kNow).became_depleted);
  EXPECT_EQ(l.agreement_state(), AgreementState::completed);
  ASSERT_TRUE(l.adjust({-4950, -4950}).allowed);
  EXPECT_EQ(l.state(), AllocationState::active);
  EXPECT_EQ(l.agreement_state(), AgreementState::in_force);
  EXPECT_TRUE(l.admit("b", facts(10, 10), kNow + kSecond).admitted());
}

}  // namespace
}  // namespace cairva::core
