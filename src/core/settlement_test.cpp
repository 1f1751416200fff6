#include "core/settlement.h"

#include <gtest/gtest.h>

namespace cairva::core {
namespace {

using K = SettleKind;
using R = BookResult;
using S = RequestState;

constexpr Tokens kUsage{10, 20};
constexpr Tokens kOther{11, 20};
const ReportedUsage kKept{kUsage, "p-1"};

// One row: the facts a store read, the report, and every effect the plan must carry.
struct Row {
  const char* name;
  std::optional<S> state;
  std::optional<BookedEvent> booked;
  const ReportedUsage* reported;
  K kind;
  R outcome;
  S after;
  bool insert_event, release_hold, change_state, record_conflict, keep_reported;
};

const Row kRows[] = {
    // name                        state             booked                 reported kind outcome
    // after              ins    rel    chg    cfl    keep
    {"unknown request", std::nullopt, std::nullopt, nullptr, K::usage, R::unknown_request,
     S::failed, false, false, false, false, false},
    {"books a new id", S::in_flight, std::nullopt, nullptr, K::usage, R::booked, S::booked, true,
     true, true, false, false},
    {"books a late report", S::usage_pending, std::nullopt, nullptr, K::usage, R::booked, S::booked,
     true, true, true, false, false},
    {"own event again", S::booked, BookedEvent{kUsage, true}, nullptr, K::usage, R::duplicate,
     S::booked, false, false, false, false, false},
    {"own event, other counts", S::booked, BookedEvent{kOther, true}, nullptr, K::usage,
     R::conflict, S::booked, false, false, false, true, false},
    {"booked under another id", S::booked, std::nullopt, nullptr, K::usage, R::already_settled,
     S::booked, false, false, false, false, false},
    {"failed, then a report", S::failed, std::nullopt, nullptr, K::usage, R::already_settled,
     S::failed, false, false, false, false, false},
    {"reused id", S::in_flight, BookedEvent{kUsage, false}, nullptr, K::usage, R::reused_id,
     S::usage_pending, false, false, true, true, true},
    {"reused id, other counts", S::in_flight, BookedEvent{kOther, false}, nullptr, K::usage,
     R::reused_id, S::usage_pending, false, false, true, true, true},
    {"reused id, late report", S::usage_pending, BookedEvent{kUsage, false}, nullptr, K::usage,
     R::reused_id, S::usage_pending, false, false, false, true, true},
    {"reused id, retried", S::usage_pending, BookedEvent{kUsage, false}, &kKept, K::usage,
     R::reused_id, S::usage_pending, false, false, false, false, false},
    {"usage missing", S::in_flight, std::nullopt, nullptr, K::usage_missing, R::pending,
     S::usage_pending, false, false, true, false, false},
    {"usage missing, pending", S::usage_pending, std::nullopt, nullptr, K::usage_missing,
     R::pending, S::usage_pending, false, false, false, false, false},
    {"usage missing, booked", S::booked, std::nullopt, nullptr, K::usage_missing,
     R::already_settled, S::booked, false, false, false, false, false},
    {"failed", S::in_flight, std::nullopt, nullptr, K::failed, R::failed, S::failed, false, true,
     true, false, false},
    {"failed, pending", S::usage_pending, std::nullopt, nullptr, K::failed, R::failed, S::failed,
     false, true, true, false, false},
    {"failed twice", S::failed, std::nullopt, nullptr, K::failed, R::already_settled, S::failed,
     false, false, false, false, false},
    {"unbooked counts kept", S::in_flight, std::nullopt, nullptr, K::usage_unbooked, R::pending,
     S::usage_pending, false, false, true, false, true},
    {"unbooked counts, pending", S::usage_pending, std::nullopt, nullptr, K::usage_unbooked,
     R::pending, S::usage_pending, false, false, false, false, true},
    {"unbooked counts, retried", S::usage_pending, std::nullopt, &kKept, K::usage_unbooked,
     R::pending, S::usage_pending, false, false, false, false, false},
    {"unbooked counts, booked", S::booked, std::nullopt, nullptr, K::usage_unbooked,
     R::already_settled, S::booked, false, false, false, false, false},
};

TEST(Settlement, EveryOutcomeAndItsEffects) {
  for (const Row& row : kRows) {
    SettlementFacts f;
    f.state = row.state;
    f.booked = row.booked;
    f.reported = row.reported;
    f.allowance = {1000, 1000};
    const SettlePlan p = plan_settlement(f, {row.kind, "p-1", kUsage});
    EXPECT_EQ(p.outcome, row.outcome) << row.name;
    if (row.state) {
      EXPECT_EQ(p.request_state, row.after) << row.name;
    }
    EXPECT_EQ(p.insert_event, row.insert_event) << row.name;
    EXPECT_EQ(p.release_hold, row.release_hold) << row.name;
    EXPECT_EQ(p.change_state, row.change_state) << row.name;
    EXPECT_EQ(p.record_conflict, row.record_conflict) << row.name;
    EXPECT_EQ(p.keep_reported, row.keep_reported) << row.name;
    // A reused id is never recorded as the request's (reconciliation books under it).
    EXPECT_EQ(p.record_provider_id, row.change_state && row.outcome != R::reused_id) << row.name;
    // What is written: the report's id, the gateway's own in place of a reused one (a noted
    // id must not stay), or nothing (the request keeps the id it has).
    const std::string_view written = recorded_provider_id(p, "p-1", "req-1");
    if (p.record_provider_id) {
      EXPECT_EQ(written, "p-1") << row.name;
    } else if (row.outcome == R::reused_id && row.change_state) {
      EXPECT_EQ(written, "req-1") << row.name;
    } else {
      EXPECT_EQ(written, "") << row.name;
    }
    if (row.booked) {
      EXPECT_EQ(p.booked_counts, row.booked->counts) << row.name;
    }
    EXPECT_FALSE(p.depletes) << row.name;
  }
}

struct DepletionRow {
  AllocationState state;
  AgreementState agreement;
  Tokens booked_before;
  bool depletes, completes;
};

TEST(Settlement, ABookingThatReachesTheAllowanceDepletes) {
  const DepletionRow rows[] = {
      {AllocationState::active, AgreementState::in_force, {0, 0}, false, false},
      {AllocationState::active,
       AgreementState::in_force,
       {990, 0},
       true,
       true},  // input reaches it
      {AllocationState::active,
       AgreementState::in_force,
       {0, 980},
       true,
       true},  // output reaches it
      {AllocationState::suspended, AgreementState::in_force, {990, 0}, true, true},
      {AllocationState::ready, AgreementState::in_force, {990, 0}, true, true},
      {AllocationState::active,
       AgreementState::cancelled,
       {990, 0},
       true,
       false},  // stays cancelled
      {AllocationState::depleted, AgreementState::completed, {990, 0}, false, false},
      {AllocationState::expired, AgreementState::expired, {990, 0}, false, false},
  };
  for (const auto& row : rows) {
    SettlementFacts f;
    f.state = S::in_flight;
    f.allocation_state = row.state;
    f.agreement_state = row.agreement;
    f.allowance = {1000, 1000};
    f.booked_total = row.booked_before;
    const SettlePlan p = plan_settlement(f, {K::usage, "p", kUsage});
    ASSERT_EQ(p.outcome, R::booked);
    EXPECT_EQ(p.depletes, row.depletes) << to_string(row.state) << " " << row.booked_before.input;
    EXPECT_EQ(p.completes_agreement, row.completes) << to_string(row.agreement);
  }
}

TEST(Settlement, KeptCountsAreComparedWithTheirProviderId) {
  SettlementFacts f;
  f.state = S::usage_pending;
  f.reported = &kKept;
  f.booked = BookedEvent{kUsage, false};
  // The same counts under another reused id are another report: kept, and a conflict.
  const SettlePlan p = plan_settlement(f, {K::usage, "p-2", kUsage});
  EXPECT_EQ(p.outcome, R::reused_id);
  EXPECT_TRUE(p.keep_reported);
  EXPECT_TRUE(p.record_conflict);
}

}  // namespace
}  // namespace cairva::core
