#include "core/admission.h"

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <string>
#include <vector>

#include "core/limits.h"

namespace cairva::core {
namespace {

constexpr UnixMicros kStart = 1'800'000'000LL * micros_per_second;
constexpr UnixMicros kHour = 3600 * micros_per_second;

// An active allocation inside its window with room under every limit.
AllocationSnapshot open_snapshot() {
  AllocationSnapshot s;
  s.state = AllocationState::active;
  s.terms.window = {kStart, kStart + kHour};
  s.terms.limits = {.requests_per_minute = 10, .tokens_per_minute = 10'000, .max_concurrency = 3};
  s.terms.allowance = {100'000, 100'000};
  return s;
}

RequestFacts facts(std::optional<int64_t> max_tokens = 100, int64_t n = 1, int64_t input = 13) {
  RequestFacts f;
  f.input_estimate = input;
  f.max_tokens = max_tokens;
  f.n = n;
  return f;
}

const UnixMicros kNow = kStart + 10 * micros_per_second;

// By value: callers often pass a temporary decision.
Refused refused(const AdmissionDecision& d) {
  if (d.admitted()) {
    ADD_FAILURE() << "expected a refusal, got an admission";
    return Refused{};
  }
  return std::get<Refused>(d.outcome);
}

Admitted admitted(const AdmissionDecision& d) {
  if (!d.admitted()) {
    ADD_FAILURE() << "expected an admission, got "
                  << refusal_name(std::get<Refused>(d.outcome).reason);
    return Admitted{};
  }
  return std::get<Admitted>(d.outcome);
}

// ---------------------------------------------------------------- 1. window and state

TEST(Admission, ReadyAllocationBecomesActiveWhenWindowHasOpened) {
  AllocationSnapshot s = open_snapshot();
  s.state = AllocationState::ready;
  const AdmissionDecision d = decide_admission(s, facts(), kNow);
  EXPECT_TRUE(d.admitted());
  EXPECT_EQ(d.new_state, AllocationState::active);
  EXPECT_FALSE(d.new_agreement_state.has_value());
}

TEST(Admission, ReadyAllocationBecomesActiveEvenWhenALaterCheckRefuses) {
  AllocationSnapshot s = open_snapshot();
  s.state = AllocationState::ready;
  s.in_flight = s.terms.limits.max_concurrency;
  const AdmissionDecision d = decide_admission(s, facts(), kNow);
  EXPECT_EQ(refused(d).reason, Refusal::max_concurrency);
  EXPECT_EQ(d.new_state, AllocationState::active);
}

TEST(Admission, ActiveAllocationInsideWindowChangesNoState) {
  const AdmissionDecision d = decide_admission(open_snapshot(), facts(), kNow);
  EXPECT_TRUE(d.admitted());
  EXPECT_FALSE(d.new_state.has_value());
  EXPECT_FALSE(d.new_agreement_state.has_value());
}

TEST(Admission, RefusesBeforeWindowOpensAsNotActive) {
  AllocationSnapshot s = open_snapshot();
  s.state = AllocationState::ready;
  const AdmissionDecision d = decide_admission(s, facts(), kStart - 1);
  EXPECT_EQ(refused(d).reason, Refusal::window_not_open);
  EXPECT_EQ(refused(d).code, ErrorCode::allocation_not_active);
  EXPECT_EQ(http_status(refused(d).code), 403);
  EXPECT_FALSE(d.new_state.has_value());  // stays ready
}

TEST(Admission, AdmitsAtTheFirstMicrosecondOfTheWindow) {
  AllocationSnapshot s = open_snapshot();
  s.state = AllocationState::ready;
  EXPECT_TRUE(decide_admission(s, facts(), kStart).admitted());
}

TEST(Admission, RefusesAtEndsAtAsExpiredAndExpiresAllocationAndAgreement) {
  const AllocationSnapshot s = open_snapshot();
  const AdmissionDecision d = decide_admission(s, facts(), s.terms.window.ends_at);
  EXPECT_EQ(refused(d).reason, Refusal::expired);
  EXPECT_EQ(refused(d).code, ErrorCode::allocation_expired);
  EXPECT_EQ(http_status(refused(d).code), 403);
  EXPECT_EQ(d.new_state, AllocationState::expired);
  EXPECT_EQ(d.new_agreement_state, AgreementState::expired);
}

TEST(Admission, RefusesAlreadyExpiredAllocationWithoutRepeatingTheTransition) {
  AllocationSnapshot s = open_snapshot();
  s.state = AllocationState::expired;
  s.agreement_state = AgreementState::expired;
  const AdmissionDecision d = decide_admission(s, facts(), kNow);
  EXPECT_EQ(refused(d).reason, Refusal::expired);
  EXPECT_FALSE(d.new_state.has_value());
  EXPECT_FALSE(d.new_agreement_state.has_value());
}

TEST(Admission, ExpiryLeavesACompletedAgreementCompleted) {
  AllocationSnapshot s = open_snapshot();
  s.agreement_state = AgreementState::completed;
  const AdmissionDecision d = decide_admission(s, facts(), s.terms.window.ends_at + 1);
  EXPECT_EQ(refused(d).reason, Refusal::expired);
  EXPECT_EQ(d.new_state, AllocationState::expired);
  EXPECT_FALSE(d.new_agreement_state.has_value());
}

TEST(Admission, SuspendedAllocationExpiresOnceItsWindowEnds) {
  AllocationSnapshot s = open_snapshot();
  s.state = AllocationState::suspended;
  const AdmissionDecision d = decide_admission(s, facts(), s.terms.window.ends_at);
  EXPECT_EQ(refused(d).reason, Refusal::expired);
  EXPECT_EQ(d.new_state, AllocationState::expired);
}

TEST(Admission, RefusesSuspendedAsNotActive) {
  AllocationSnapshot s = open_snapshot();
  s.state = AllocationState::suspended;
  const AdmissionDecision d = decide_admission(s, facts(), kNow);
  EXPECT_EQ(refused(d).reason, Refusal::suspended);
  EXPECT_EQ(refused(d).code, ErrorCode::allocation_not_active);
  EXPECT_FALSE(d.new_state.has_value());
}

TEST(Admission, RefusesDepletedWith402Depleted) {
  AllocationSnapshot s = open_snapshot();
  s.state = AllocationState::depleted;
  s.agreement_state = AgreementState::completed;
  const AdmissionDecision d = decide_admission(s, facts(), kNow);
  EXPECT_EQ(refused(d).reason, Refusal::depleted);
  EXPECT_EQ(refused(d).code, ErrorCode::allocation_depleted);
  EXPECT_EQ(http_status(refused(d).code), 402);
}

TEST(Admission, RefusesCancelledAgreementAsNotActive) {
  AllocationSnapshot s = open_snapshot();
  s.agreement_state = AgreementState::cancelled;
  const AdmissionDecision d = decide_admission(s, facts(), kNow);
  EXPECT_EQ(refused(d).reason, Refusal::agreement_cancelled);
  EXPECT_EQ(refused(d).code, ErrorCode::allocation_not_active);
  EXPECT_FALSE(d.new_state.has_value());
}

// ---------------------------------------------------------------- 2-4. rate limits

TEST(Admission, RefusesWhenRequestsPerMinuteAtLimit) {
  AllocationSnapshot s = open_snapshot();
  s.requests_last_minute = s.terms.limits.requests_per_minute;
  const Refused r = refused(decide_admission(s, facts(), kNow));
  EXPECT_EQ(r.reason, Refusal::requests_per_minute);
  EXPECT_EQ(r.code, ErrorCode::rate_limited);
  EXPECT_EQ(http_status(r.code), 429);
  EXPECT_EQ(r.limit, "requests_per_minute");
  EXPECT_EQ(r.retry_after_s, 60);
}

TEST(Admission, AdmitsWhenRequestsPerMinuteOneBelowLimit) {
  AllocationSnapshot s = open_snapshot();
  s.requests_last_minute = s.terms.limits.requests_per_minute - 1;
  EXPECT_TRUE(decide_admission(s, facts(), kNow).admitted());
}

TEST(Admission, RefusesWhenConcurrencyAtLimit) {
  AllocationSnapshot s = open_snapshot();
  s.in_flight = s.terms.limits.max_concurrency;
  const Refused r = refused(decide_admission(s, facts(), kNow));
  EXPECT_EQ(r.reason, Refusal::max_concurrency);
  EXPECT_EQ(r.code, ErrorCode::rate_limited);
  EXPECT_EQ(r.limit, "max_concurrency");
  EXPECT_EQ(r.retry_after_s, 2);
}

TEST(Admission, UsagePendingRequestsDoNotCountTowardConcurrency) {
  AllocationSnapshot s = open_snapshot();
  s.in_flight = s.terms.limits.max_concurrency - 1;
  s.usage_pending = 50;
  EXPECT_TRUE(decide_admission(s, facts(), kNow).admitted());
}

TEST(Admission, RefusesWhenTokensPerMinuteAtLimit) {
  AllocationSnapshot s = open_snapshot();
  s.tokens_last_minute = s.terms.limits.tokens_per_minute;
  const Refused r = refused(decide_admission(s, facts(), kNow));
  EXPECT_EQ(r.reason, Refusal::tokens_per_minute);
  EXPECT_EQ(r.code, ErrorCode::rate_limited);
  EXPECT_EQ(r.limit, "tokens_per_minute");
  EXPECT_EQ(r.retry_after_s, 60);
}

TEST(Admission, HoldsDoNotCountTowardTokensPerMinute) {
  AllocationSnapshot s = open_snapshot();
  s.held = {s.terms.limits.tokens_per_minute, s.terms.limits.tokens_per_minute};
  s.tokens_last_minute = s.terms.limits.tokens_per_minute - 1;
  EXPECT_TRUE(decide_admission(s, facts(), kNow).admitted());
}

// ---------------------------------------------------------------- 5. allowance (SPEC §4)

TEST(Admission, HoldIsInputEstimateAndOutputLimitTimesN) {
  const Admitted a = admitted(decide_admission(open_snapshot(), facts(10, 3, 13), kNow));
  EXPECT_EQ(a.hold, (Tokens{13, 30}));
  EXPECT_EQ(a.per_choice_limit, 10);
  EXPECT_FALSE(a.lowered_to.has_value());
}

TEST(Admission, HoldUsesMaxCompletionTokensBeforeMaxTokens) {
  RequestFacts f = facts(500);
  f.max_completion_tokens = 40;
  const Admitted a = admitted(decide_admission(open_snapshot(), f, kNow));
  EXPECT_EQ(a.hold.output, 40);
}

TEST(Admission, HoldUsesDefaultMaxTokensWhenNoneSent) {
  const Admitted a = admitted(decide_admission(open_snapshot(), facts(std::nullopt), kNow));
  EXPECT_EQ(a.hold.output, output_hold_tokens_default);
  EXPECT_EQ(a.per_choice_limit, 1024);
}

// The SPEC's lowering vectors (tests/vectors/input-estimate.json), remaining output given.
struct LoweringCase {
  const char* name;
  std::optional<int64_t> max_tokens;
  int64_t n;
  int64_t remaining_output;
  bool admitted;
  int64_t hold_output;
  std::optional<int64_t> lowered_to;
};

TEST(Admission, LowersOutputLimitToFitRemainingOutput) {
  const std::vector<LoweringCase> cases = {
      {"lowered to fit", 500, 1, 100, true, 100, 100},
      {"lowered per choice with n", 80, 2, 100, true, 100, 50},
      {"default hold lowered", std::nullopt, 1, 300, true, 300, 300},
      {"n larger than what remains: exhausted", 5, 4, 3, false, 0, std::nullopt},
      {"fits exactly: not lowered", 50, 2, 100, true, 100, std::nullopt},
      {"odd remainder rounds the per-choice limit down", 100, 3, 100, true, 99, 33},
  };
  for (const LoweringCase& c : cases) {
    SCOPED_TRACE(c.name);
    AllocationSnapshot s = open_snapshot();
    s.booked.output = s.terms.allowance.output - c.remaining_output;
    const AdmissionDecision d = decide_admission(s, facts(c.max_tokens, c.n), kNow);
    ASSERT_EQ(d.admitted(), c.admitted);
    if (!c.admitted) {
      EXPECT_EQ(std::get<Refused>(d.outcome).code, ErrorCode::allocation_exhausted);
      continue;
    }
    const Admitted& a = std::get<Admitted>(d.outcome);
    EXPECT_EQ(a.hold.output, c.hold_output);
    EXPECT_EQ(a.lowered_to, c.lowered_to);
    EXPECT_EQ(a.per_choice_limit * c.n, a.hold.output);
  }
}

TEST(Admission, RefusesExhaustedWhenLoweredLimitWouldBeZero) {
  AllocationSnapshot s = open_snapshot();
  s.booked.output = s.terms.allowance.output - 1;
  const Refused r = refused(decide_admission(s, facts(100, 2), kNow));
  EXPECT_EQ(r.reason, Refusal::allowance_exhausted);
  EXPECT_EQ(r.code, ErrorCode::allocation_exhausted);
  EXPECT_EQ(http_status(r.code), 402);
}

TEST(Admission, RefusesExhaustedWhenNoOutputRemains) {
  AllocationSnapshot s = open_snapshot();
  s.held.output = s.terms.allowance.output;
  const Refused r = refused(decide_admission(s, facts(1), kNow));
  EXPECT_EQ(r.reason, Refusal::allowance_exhausted);
}

TEST(Admission, LoweringUnderThePerChoiceMinimumIsRefusedNotForwarded) {
  AllocationSnapshot s = open_snapshot();
  s.booked.output = s.terms.allowance.output - 15;
  RequestFacts f = facts(500);
  f.per_choice_min = 16;
  const Refused r = refused(decide_admission(s, f, kNow));
  EXPECT_EQ(r.reason, Refusal::allowance_exhausted);
  EXPECT_EQ(r.code, ErrorCode::allocation_exhausted);
  s.booked.output = s.terms.allowance.output - 16;
  const Admitted a = admitted(decide_admission(s, f, kNow));
  EXPECT_EQ(a.lowered_to, 16);
  EXPECT_EQ(a.hold.output, 16);
}

TEST(Admission, ThePerChoiceMinimumBindsOnlyALoweredLimit) {
  // A client's own small limit is the client's to send; the gateway did not rewrite it.
  RequestFacts f = facts(5);
  f.per_choice_min = 16;
  const Admitted a = admitted(decide_admission(open_snapshot(), f, kNow));
  EXPECT_EQ(a.per_choice_limit, 5);
  EXPECT_EQ(a.lowered_to, std::nullopt);
}

TEST(Admission, AnApiWithoutOutputHoldsInputOnlyAndNeedsNoOutputLeft) {
  AllocationSnapshot s = open_snapshot();
  s.booked.output = s.terms.allowance.output - 1;
  s.held.output = 1;  // no output remains
  RequestFacts f = facts(std::nullopt, 1, 40);
  f.holds_output = false;
  const Admitted a = admitted(decide_admission(s, f, kNow));
  EXPECT_EQ(a.hold.input, 40);
  EXPECT_EQ(a.hold.output, 0);
  EXPECT_EQ(a.lowered_to, std::nullopt);
  s.booked.input = s.terms.allowance.input - 39;
  EXPECT_EQ(refused(decide_admission(s, f, kNow)).reason, Refusal::allowance_exhausted);
}

TEST(RefuseByState, RefusesAsAdmissionsFirstCheckWouldButNeverForALimit) {
  AllocationSnapshot s = open_snapshot();
  s.requests_last_minute = s.terms.limits.requests_per_minute;  // every limit reached
  s.in_flight = s.terms.limits.max_concurrency;
  s.held = s.terms.allowance;
  EXPECT_EQ(refuse_by_state(s, kNow), std::nullopt)
      << "calls that book nothing count toward no limit";
  s.state = AllocationState::ready;
  EXPECT_EQ(refuse_by_state(s, kNow), std::nullopt)
      << "a ready allocation inside its window serves";
  struct Case {
    std::function<void(AllocationSnapshot&)> change;
    UnixMicros at;
    Refusal reason;
    ErrorCode code;
  };
  const std::vector<Case> cases = {
      {[](AllocationSnapshot& a) { a.state = AllocationState::suspended; }, kNow,
       Refusal::suspended, ErrorCode::allocation_not_active},
      {[](AllocationSnapshot& a) { a.state = AllocationState::depleted; }, kNow, Refusal::depleted,
       ErrorCode::allocation_depleted},
      {[](AllocationSnapshot& a) { a.state = AllocationState::expired; }, kNow, Refusal::expired,
       ErrorCode::allocation_expired},
      {[](AllocationSnapshot&) {}, kStart + kHour, Refusal::expired, ErrorCode::allocation_expired},
      {[](AllocationSnapshot&) {}, kStart - 1, Refusal::window_not_open,
       ErrorCode::allocation_not_active},
      {[](AllocationSnapshot& a) { a.agreement_state = AgreementState::cancelled; }, kNow,
       Refusal::agreement_cancelled, ErrorCode::allocation_not_active},
  };
  for (const Case& c : cases) {
    AllocationSnapshot a = open_snapshot();
    c.change(a);
    const auto r = refuse_by_state(a, c.at);
    ASSERT_TRUE(r) << refusal_name(c.reason);
    EXPECT_EQ(r->reason, c.reason);
    EXPECT_EQ(r->code, c.code);
    EXPECT_EQ(r->message, refused(decide_admission(a, facts(), c.at)).message)
        << "the same words as admission";
  }
}

TEST(Admission, RefusesExhaustedWhenInputEstimateExceedsRemainingInput) {
  AllocationSnapshot s = open_snapshot();
  s.booked.input = s.terms.allowance.input - 12;
  const Refused r = refused(decide_admission(s, facts(100, 1, 13), kNow));
  EXPECT_EQ(r.reason, Refusal::allowance_exhausted);
  EXPECT_EQ(r.code, ErrorCode::allocation_exhausted);
}

TEST(Admission, AdmitsWhenInputEstimateEqualsRemainingInput) {
  AllocationSnapshot s = open_snapshot();
  s.booked.input = s.terms.allowance.input - 13;
  EXPECT_TRUE(decide_admission(s, facts(100, 1, 13), kNow).admitted());
}

TEST(Admission, InputIsNeverLoweredOnlyRefused) {
  AllocationSnapshot s = open_snapshot();
  s.held.input = s.terms.allowance.input - 100;
  const Refused r = refused(decide_admission(s, facts(100, 1, 101), kNow));
  EXPECT_EQ(r.reason, Refusal::allowance_exhausted);
}

TEST(Admission, HeldAllowanceCountsAgainstRemaining) {
  AllocationSnapshot s = open_snapshot();
  s.booked.output = 40'000;
  s.held.output = 59'950;
  EXPECT_EQ(s.remaining().output, 50);
  const Admitted a = admitted(decide_admission(s, facts(100), kNow));
  EXPECT_EQ(a.lowered_to, 50);
  EXPECT_EQ(a.hold.output, 50);
}

TEST(Admission, RemainingIsNeverNegativeAfterAnOverrun) {
  AllocationSnapshot s = open_snapshot();
  s.booked = {s.terms.allowance.input + 7, s.terms.allowance.output - 5};
  s.held = {0, 10};
  EXPECT_EQ(s.remaining(), (Tokens{0, 0}));
}

// ---------------------------------------------------------------- precedence

// Each row makes exactly its own check fail; rows are in the Refusal enum's order.
struct CheckRow {
  Refusal reason;
  ErrorCode code;
  int status;
  std::string_view limit;
  int retry_after_s;
  std::function<void(AllocationSnapshot&, RequestFacts&, UnixMicros&)> fail;
};

std::vector<CheckRow> check_rows() {
  return {
      {Refusal::agreement_cancelled, ErrorCode::allocation_not_active, 403, "", 0,
       [](auto& s, auto&, auto&) { s.agreement_state = AgreementState::cancelled; }},
      {Refusal::depleted, ErrorCode::allocation_depleted, 402, "", 0,
       [](auto& s, auto&, auto&) { s.state = AllocationState::depleted; }},
      {Refusal::expired, ErrorCode::allocation_expired, 403, "", 0,
       [](auto& s, auto&, auto& now) { s.terms.window.ends_at = now; }},
      {Refusal::window_not_open, ErrorCode::allocation_not_active, 403, "", 0,
       [](auto& s, auto&, auto& now) { s.terms.window.starts_at = now + 1; }},
      {Refusal::suspended, ErrorCode::allocation_not_active, 403, "", 0,
       [](auto& s, auto&, auto&) { s.state = AllocationState::suspended; }},
      {Refusal::requests_per_minute, ErrorCode::rate_limited, 429, "requests_per_minute", 60,
       [](auto& s, auto&, auto&) { s.requests_last_minute = s.terms.limits.requests_per_minute; }},
      {Refusal::max_concurrency, ErrorCode::rate_limited, 429, "max_concurrency", 2,
       [](auto& s, auto&, auto&) { s.in_flight = s.terms.limits.max_concurrency; }},
      {Refusal::tokens_per_minute, ErrorCode::rate_limited, 429, "tokens_per_minute", 60,
       [](auto& s, auto&, auto&) { s.tokens_last_minute = s.terms.limits.tokens_per_minute; }},
      {Refusal::allowance_exhausted, ErrorCode::allocation_exhausted, 402, "", 0,
       [](auto&, auto& f, auto&) { f.input_estimate = 1'000'000; }},
  };
}

TEST(Admission, FirstFailingCheckWins) {
  const std::vector<CheckRow> rows = check_rows();
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(static_cast<size_t>(rows[i].reason), i) << "rows must follow the enum's order";
    // Fail check i and every later one; apply later rows first so that, where two rows
    // write the same field (the allocation state), the earlier check's value stands.
    AllocationSnapshot s = open_snapshot();
    RequestFacts f = facts();
    UnixMicros now = kNow;
    for (size_t j = rows.size(); j-- > i;) rows[j].fail(s, f, now);
    const AdmissionDecision d = decide_admission(s, f, now);
    SCOPED_TRACE(refusal_name(rows[i].reason));
    const Refused r = refused(d);
    EXPECT_EQ(r.reason, rows[i].reason);
    EXPECT_EQ(r.code, rows[i].code);
    EXPECT_EQ(http_status(r.code), rows[i].status);
    EXPECT_EQ(r.limit, rows[i].limit);
    EXPECT_EQ(r.retry_after_s, rows[i].retry_after_s);
  }
}

TEST(Admission, EachCheckAloneRefusesWithItsOwnReason) {
  for (const CheckRow& row : check_rows()) {
    SCOPED_TRACE(refusal_name(row.reason));
    AllocationSnapshot s = open_snapshot();
    RequestFacts f = facts();
    UnixMicros now = kNow;
    row.fail(s, f, now);
    EXPECT_EQ(refused(decide_admission(s, f, now)).reason, row.reason);
  }
}

TEST(Admission, RefusalMessagesAreSentences) {
  for (const CheckRow& row : check_rows()) {
    AllocationSnapshot s = open_snapshot();
    RequestFacts f = facts();
    UnixMicros now = kNow;
    row.fail(s, f, now);
    const std::string_view msg = refused(decide_admission(s, f, now)).message;
    ASSERT_GT(msg.size(), 10u) << refusal_name(row.reason);
    EXPECT_TRUE(std::isupper(static_cast<unsigned char>(msg.front()))) << msg;
    EXPECT_EQ(msg.back(), '.') << msg;
  }
}

// ---------------------------------------------------------------- shown state

TEST(EffectiveState, ShowsReadyAsActiveOnceWindowHasOpened) {
  AllocationSnapshot s = open_snapshot();
  s.state = AllocationState::ready;
  EXPECT_EQ(effective_state(s, kStart - 1), AllocationState::ready);
  EXPECT_EQ(effective_state(s, kStart), AllocationState::active);
}

TEST(EffectiveState, ShowsExpiredFromEndsAtUnlessDepleted) {
  AllocationSnapshot s = open_snapshot();
  EXPECT_EQ(effective_state(s, s.terms.window.ends_at - 1), AllocationState::active);
  EXPECT_EQ(effective_state(s, s.terms.window.ends_at), AllocationState::expired);
  s.state = AllocationState::suspended;
  EXPECT_EQ(effective_state(s, s.terms.window.ends_at), AllocationState::expired);
  s.state = AllocationState::depleted;
  EXPECT_EQ(effective_state(s, s.terms.window.ends_at), AllocationState::depleted);
}

TEST(Depletion, ReachedWhenEitherDirectionIsFullyBooked) {
  const Tokens allowance{100, 50};
  EXPECT_FALSE(is_depleted(allowance, {99, 49}));
  EXPECT_TRUE(is_depleted(allowance, {100, 0}));
  EXPECT_TRUE(is_depleted(allowance, {0, 50}));
  EXPECT_TRUE(is_depleted(allowance, {120, 60}));
}

TEST(Types, StatesRoundTripThroughTheirWireNames) {
  for (auto s : {AgreementState::in_force, AgreementState::completed, AgreementState::expired,
                 AgreementState::cancelled}) {
    EXPECT_EQ(parse_agreement_state(to_string(s)), s);
  }
  for (auto s : {AllocationState::ready, AllocationState::active, AllocationState::suspended,
                 AllocationState::depleted, AllocationState::expired}) {
    EXPECT_EQ(parse_allocation_state(to_string(s)), s);
  }
  for (auto s : {RequestState::in_flight, RequestState::booked, RequestState::usage_pending,
                 RequestState::failed}) {
    EXPECT_EQ(parse_request_state(to_string(s)), s);
  }
  EXPECT_EQ(to_string(RequestState::usage_pending), "usage_pending");
  EXPECT_EQ(to_string(EventSource::reconciliation), "reconciliation");
  EXPECT_EQ(parse_event_source("provider"), EventSource::provider);
  EXPECT_EQ(to_string(Finality::confirmed), "confirmed");
  EXPECT_EQ(parse_finality("reported"), Finality::reported);
  EXPECT_FALSE(parse_allocation_state("Active").has_value());
  EXPECT_FALSE(parse_request_state("").has_value());
}

TEST(ApplyAdmission, EachDecisionOnTheSnapshotTheLastOneLeftStopsAtMaxConcurrency) {
  AllocationSnapshot s = open_snapshot();
  s.state = AllocationState::ready;  // the first admission activates it
  std::vector<Tokens> holds;
  for (int i = 0; i < 5; ++i) {
    const AdmissionDecision d = decide_admission(s, facts(), kNow);
    apply_admission(s, d);
    if (d.admitted())
      holds.push_back(std::get<Admitted>(d.outcome).hold);
    else
      EXPECT_EQ(refused(d).reason, Refusal::max_concurrency);
  }
  ASSERT_EQ(holds.size(), 3u);  // max_concurrency
  EXPECT_EQ(s.state, AllocationState::active);
  EXPECT_EQ(s.in_flight, 3);
  EXPECT_EQ(s.requests_last_minute, 3);
  EXPECT_EQ(s.held, (Tokens{3 * int64_t{13}, 3 * int64_t{100}}));
}

TEST(ApplyAdmission, TheLastHoldIsLoweredToWhatTheEarlierOnesLeft) {
  AllocationSnapshot s = open_snapshot();
  s.terms.allowance = {100'000, 250};
  const AdmissionDecision first = decide_admission(s, facts(200), kNow);
  apply_admission(s, first);
  const AdmissionDecision second = decide_admission(s, facts(200), kNow);
  apply_admission(s, second);
  ASSERT_TRUE(second.admitted());
  EXPECT_EQ(std::get<Admitted>(second.outcome).hold.output, 50);
  EXPECT_EQ(s.remaining().output, 0);
  EXPECT_EQ(refused(decide_admission(s, facts(200), kNow)).reason, Refusal::allowance_exhausted);
}

TEST(ApplyAdmission, ARefusalChangesOnlyTheStatesItNames) {
  AllocationSnapshot s = open_snapshot();
  s.agreement_state = AgreementState::in_force;
  const AdmissionDecision d = decide_admission(s, facts(), s.terms.window.ends_at);
  apply_admission(s, d);
  EXPECT_EQ(refused(d).reason, Refusal::expired);
  EXPECT_EQ(s.state, AllocationState::expired);
  EXPECT_EQ(s.agreement_state, AgreementState::expired);
  EXPECT_EQ(s.in_flight, 0);
  EXPECT_EQ(s.requests_last_minute, 0);
  EXPECT_EQ(s.held, (Tokens{0, 0}));
}

// ---------------------------------------------------------------- rate resets

TEST(RateResets, ZeroWhileEachWindowHasRoom) {
  AllocationSnapshot s = open_snapshot();
  s.requests_last_minute = s.terms.limits.requests_per_minute - 1;
  s.oldest_start_at = kNow - micros_per_second;
  s.tokens_last_minute = s.terms.limits.tokens_per_minute - 1;
  const RateResets r = rate_resets(s, kNow);
  EXPECT_EQ(r.requests_us, 0);
  EXPECT_EQ(r.tokens_us, 0);
}

TEST(RateResets, AFullRequestsWindowHasRoomWhenItsOldestStartLeaves) {
  AllocationSnapshot s = open_snapshot();
  s.requests_last_minute = s.terms.limits.requests_per_minute;
  s.oldest_start_at = kNow - 25 * micros_per_second - 1;
  EXPECT_EQ(rate_resets(s, kNow).requests_us, rate_window_us - 25 * micros_per_second - 1);
  EXPECT_EQ(rate_resets(s, kNow).tokens_us, 0);
  // A start at `now` (just admitted into the last slot) leaves a full window later.
  s.oldest_start_at = kNow;
  EXPECT_EQ(rate_resets(s, kNow).requests_us, rate_window_us);
}

TEST(RateResets, AFullTokensWindowHasRoomWhenItsFreeingBookingLeaves) {
  AllocationSnapshot s = open_snapshot();
  s.tokens_last_minute = s.terms.limits.tokens_per_minute + 500;
  s.freeing_booking_at = kNow - 59 * micros_per_second;
  EXPECT_EQ(rate_resets(s, kNow).tokens_us, micros_per_second);
  EXPECT_EQ(rate_resets(s, kNow).requests_us, 0);
}

TEST(RateResets, NeverNegative) {
  AllocationSnapshot s = open_snapshot();
  s.requests_last_minute = s.terms.limits.requests_per_minute;
  s.oldest_start_at = kNow - 2 * rate_window_us;  // a store's figure that cannot be: read as room
  s.tokens_last_minute = s.terms.limits.tokens_per_minute;
  s.freeing_booking_at = kNow - rate_window_us;
  const RateResets r = rate_resets(s, kNow);
  EXPECT_EQ(r.requests_us, 0);
  EXPECT_EQ(r.tokens_us, 0);
}

TEST(RateResets, MillisecondsRoundUpSoTheWaitFindsTheRoom) {
  EXPECT_EQ(millis_rounded_up(0), 0);
  EXPECT_EQ(millis_rounded_up(1), 1);
  EXPECT_EQ(millis_rounded_up(1000), 1);
  EXPECT_EQ(millis_rounded_up(1001), 2);
  EXPECT_EQ(millis_rounded_up(rate_window_us), 60'000);
}

TEST(Admission, ARequestsPerMinuteRefusalSaysWhenItsOldestStartLeaves) {
  AllocationSnapshot s = open_snapshot();
  s.requests_last_minute = s.terms.limits.requests_per_minute;
  s.oldest_start_at = kNow - 20 * micros_per_second - 1500;  // leaves in 40 s - 1.5 ms
  s.tokens_last_minute = s.terms.limits.tokens_per_minute;   // full too: not the answer
  s.freeing_booking_at = kNow - 50 * micros_per_second;
  const Refused r = refused(decide_admission(s, facts(), kNow));
  EXPECT_EQ(r.reason, Refusal::requests_per_minute);
  EXPECT_EQ(r.retry_after_s, 60);       // the seed's header stays as written
  EXPECT_EQ(r.retry_after_ms, 39'999);  // 39,998.5 ms rounded up
}

TEST(Admission, ATokensPerMinuteRefusalSaysWhenItsFreeingBookingLeaves) {
  AllocationSnapshot s = open_snapshot();
  s.tokens_last_minute = s.terms.limits.tokens_per_minute;
  s.freeing_booking_at = kNow - 50 * micros_per_second;
  const Refused r = refused(decide_admission(s, facts(), kNow));
  EXPECT_EQ(r.reason, Refusal::tokens_per_minute);
  EXPECT_EQ(r.retry_after_s, 60);
  EXPECT_EQ(r.retry_after_ms, 10'000);
}

TEST(Admission, OtherRefusalsSayNoRetryAfterMs) {
  AllocationSnapshot s = open_snapshot();
  s.in_flight = s.terms.limits.max_concurrency;  // when one finishes is not known
  s.tokens_last_minute = s.terms.limits.tokens_per_minute;
  s.freeing_booking_at = kNow - 50 * micros_per_second;
  EXPECT_EQ(refused(decide_admission(s, facts(), kNow)).retry_after_ms, 0);
  s.in_flight = 0;
  s.tokens_last_minute = 0;
  s.terms.allowance = {1, 1};
  const Refused r = refused(decide_admission(s, facts(), kNow));
  EXPECT_EQ(r.reason, Refusal::allowance_exhausted);
  EXPECT_EQ(r.retry_after_ms, 0);
}

TEST(ApplyAdmission, TheAdmissionThatFillsAnEmptyRequestsWindowResetsAFullWindowLater) {
  AllocationSnapshot s = open_snapshot();
  s.terms.limits.requests_per_minute = 2;
  s.as_of = kNow;
  apply_admission(s, decide_admission(s, facts(), kNow));
  EXPECT_EQ(rate_resets(s, kNow).requests_us, 0);  // one slot left
  apply_admission(s, decide_admission(s, facts(), kNow));
  EXPECT_EQ(s.requests_last_minute, 2);
  EXPECT_EQ(s.oldest_start_at, kNow);
  EXPECT_EQ(rate_resets(s, kNow).requests_us, rate_window_us);
  const Refused r = refused(decide_admission(s, facts(), kNow));
  EXPECT_EQ(r.retry_after_ms, 60'000);
}

TEST(ApplyAdmission, AnAdmissionKeepsTheOldestStartOfAWindowThatHasOne) {
  AllocationSnapshot s = open_snapshot();
  s.terms.limits.requests_per_minute = 2;
  s.as_of = kNow;
  s.requests_last_minute = 1;
  s.oldest_start_at = kNow - 45 * micros_per_second;
  apply_admission(s, decide_admission(s, facts(), kNow));
  EXPECT_EQ(s.oldest_start_at, kNow - 45 * micros_per_second);
  EXPECT_EQ(rate_resets(s, kNow).requests_us, 15 * micros_per_second);
}

TEST(EffectiveState, InForceAgreementExpiresAtWindowEndOthersKeepTheirState) {
  const Window w{100, 200};
  EXPECT_EQ(effective_agreement_state(AgreementState::in_force, w, 199), AgreementState::in_force);
  EXPECT_EQ(effective_agreement_state(AgreementState::in_force, w, 200), AgreementState::expired);
  EXPECT_EQ(effective_agreement_state(AgreementState::completed, w, 500),
            AgreementState::completed);
  EXPECT_EQ(effective_agreement_state(AgreementState::cancelled, w, 500),
            AgreementState::cancelled);
}

}  // namespace
}  // namespace cairva::core

namespace cairva::core {
namespace {

TEST(ShownState, ACancelledAgreementShowsItsAllocationCancelledACompletedOneDepleted) {
  AllocationSnapshot s = open_snapshot();
  EXPECT_EQ(shown_state(s), AllocationState::active);
  s.agreement_state = AgreementState::cancelled;
  EXPECT_EQ(shown_state(s), AllocationState::cancelled);
  s.state = AllocationState::suspended;  // what the ledger last recorded does not matter
  EXPECT_EQ(shown_state(s), AllocationState::cancelled);
  s.agreement_state = AgreementState::completed;
  EXPECT_EQ(shown_state(s), AllocationState::depleted);
  s.agreement_state = AgreementState::expired;
  s.state = AllocationState::expired;
  EXPECT_EQ(shown_state(s), AllocationState::expired);
  EXPECT_EQ(to_string(AllocationState::cancelled), "cancelled");
  EXPECT_EQ(parse_allocation_state("cancelled"), AllocationState::cancelled);
}

TEST(ShownState, ARefusedStateChangeSaysWhatCanBeDoneInstead) {
  EXPECT_EQ(state_change_refusal(false, AllocationState::cancelled),
            "cannot resume an allocation that is cancelled: its agreement was cancelled; create a "
            "new agreement "
            "to sell more capacity");
  EXPECT_EQ(state_change_refusal(true, AllocationState::suspended),
            "cannot suspend an allocation that is suspended: it is suspended already; resume it to "
            "serve requests "
            "again");
  EXPECT_EQ(state_change_refusal(false, AllocationState::active),
            "cannot resume an allocation that is active: it is not suspended");
}

}  // namespace
}  // namespace cairva::core
