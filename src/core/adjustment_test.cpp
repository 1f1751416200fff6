#include "core/adjustment.h"

#include <gtest/gtest.h>

namespace cairva::core {
namespace {

constexpr Tokens allowance{100, 50};

TEST(Adjustment, RefusesATotalBelowZeroInEitherDirection) {
  EXPECT_FALSE(plan_adjustment(AllocationState::active, AgreementState::in_force, allowance,
                               {10, 10}, {-11, 0})
                   .allowed);
  EXPECT_FALSE(plan_adjustment(AllocationState::active, AgreementState::in_force, allowance,
                               {10, 10}, {5, -11})
                   .allowed);
  const auto p = plan_adjustment(AllocationState::active, AgreementState::in_force, allowance,
                                 {10, 10}, {-10, -10});
  ASSERT_TRUE(p.allowed);
  EXPECT_EQ(p.booked_after, (Tokens{0, 0}));
  EXPECT_EQ(p.state, AllocationState::active);
}

TEST(Adjustment, ReachingTheAllowanceDepletesAndCompletesTheAgreement) {
  const auto p = plan_adjustment(AllocationState::active, AgreementState::in_force, allowance,
                                 {90, 10}, {10, 0});
  ASSERT_TRUE(p.allowed);
  EXPECT_EQ(p.state, AllocationState::depleted);
  EXPECT_EQ(p.agreement_state, AgreementState::completed);
}

TEST(Adjustment, TakingADepletedAllocationBelowItsAllowanceMakesItActiveAgain) {
  const auto p = plan_adjustment(AllocationState::depleted, AgreementState::completed, allowance,
                                 {5000, 5000}, {-4950, -4990});
  ASSERT_TRUE(p.allowed);
  EXPECT_EQ(p.booked_after, (Tokens{50, 10}));
  EXPECT_EQ(p.state, AllocationState::active);
  EXPECT_EQ(p.agreement_state, AgreementState::in_force);
}

TEST(Adjustment, ADepletedAllocationStillAtItsAllowanceInOneDirectionStaysDepleted) {
  const auto p = plan_adjustment(AllocationState::depleted, AgreementState::completed, allowance,
                                 {100, 60}, {-50, 0});
  ASSERT_TRUE(p.allowed);
  EXPECT_EQ(p.state, AllocationState::depleted);
  EXPECT_EQ(p.agreement_state, AgreementState::completed);
}

TEST(Adjustment, OtherStatesAreKept) {
  for (auto s : {AllocationState::suspended, AllocationState::expired, AllocationState::ready}) {
    const auto p = plan_adjustment(s, AgreementState::cancelled, allowance, {10, 10}, {-5, 5});
    ASSERT_TRUE(p.allowed);
    EXPECT_EQ(p.state, s);
    EXPECT_EQ(p.agreement_state, AgreementState::cancelled);
  }
}

}  // namespace
}  // namespace cairva::core
