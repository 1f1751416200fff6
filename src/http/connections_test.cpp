#include "http/connections.h"

#include <gtest/gtest.h>

#include "http/body_budget.h"

namespace cairva::http {
namespace {

using Take = ConnectionBudget::Take;
const auto a = boost::asio::ip::make_address("10.0.0.1");
const auto b = boost::asio::ip::make_address("10.0.0.2");

TEST(ConnectionBudget, CapsConnectionsInAllAndPerClientAddress) {
  ConnectionBudget budget({3, 2});
  EXPECT_EQ(budget.try_take(a), Take::taken);
  EXPECT_EQ(budget.try_take(a), Take::taken);
  EXPECT_EQ(budget.try_take(a), Take::client_full);
  EXPECT_EQ(budget.try_take(b), Take::taken);
  EXPECT_EQ(budget.try_take(b), Take::full);
  EXPECT_EQ(budget.open(), 3);
  budget.give_back(a);
  EXPECT_EQ(budget.try_take(b), Take::taken);
  EXPECT_EQ(budget.try_take(a), Take::full) << "a has room of its own, the listener has none";
  budget.give_back(b);
  EXPECT_EQ(budget.try_take(a), Take::taken) << "a refusal for the total gave a's slot back";
}

TEST(ConnectionBudget, ZeroPerClientMeansNoPerAddressCap) {
  ConnectionBudget budget({5, 0});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(budget.try_take(a), Take::taken);
  EXPECT_EQ(budget.try_take(a), Take::full);
}

TEST(IdleConnections, ShedsTheOldestIdleConnectionAndGivesItsSlotBackAtOnce) {
  auto budget = std::make_shared<ConnectionBudget>(ConnectionLimits{2, 0});
  auto idle = std::make_shared<IdleConnections>();
  ASSERT_EQ(budget->try_take(a), Take::taken);
  ASSERT_EQ(budget->try_take(b), Take::taken);
  Connection first(budget, idle, a), second(budget, idle, b);
  int closed_first = 0, closed_second = 0;
  first.on_shed([&] { ++closed_first; });
  second.on_shed([&] { ++closed_second; });
  EXPECT_FALSE(idle->shed_oldest()) << "nothing idle: a busy connection is never shed";
  {
    Connection::Idle i2(second);  // idle first: the oldest
    Connection::Idle i1(first);
    EXPECT_EQ(idle->size(), 2u);
    EXPECT_TRUE(idle->shed_oldest());
    EXPECT_EQ(closed_second, 1);
    EXPECT_EQ(closed_first, 0);
    EXPECT_TRUE(second.shed());
    EXPECT_EQ(budget->open(), 1);
    EXPECT_EQ(idle->size(), 1u);
  }
  EXPECT_EQ(idle->size(), 0u) << "a connection that got its request is no longer idle";
  EXPECT_FALSE(idle->shed_oldest());
}

TEST(IdleConnections, AConnectionEndingGivesItsSlotBackOnceWhetherShedOrNot) {
  auto budget = std::make_shared<ConnectionBudget>(ConnectionLimits{2, 1});
  auto idle = std::make_shared<IdleConnections>();
  {
    ASSERT_EQ(budget->try_take(a), Take::taken);
    Connection c(budget, idle, a);
    Connection::Idle i(c);
    EXPECT_TRUE(idle->shed_oldest());
  }
  {
    ASSERT_EQ(budget->try_take(a), Take::taken);
    Connection c(budget, idle, a);
  }
  EXPECT_EQ(budget->open(), 0);
  EXPECT_EQ(budget->try_take(a), Take::taken) << "a's per-address count is back to zero";
}

TEST(IdleConnections, CloseAllClosesTheIdleAndThenEachConnectionAsItBecomesIdle) {
  auto budget = std::make_shared<ConnectionBudget>(ConnectionLimits{3, 0});
  auto idle = std::make_shared<IdleConnections>();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(budget->try_take(a), Take::taken);
  Connection waiting(budget, idle, a), busy(budget, idle, a), other(budget, idle, a);
  int closed_waiting = 0, closed_busy = 0;
  waiting.on_shed([&] { ++closed_waiting; });
  busy.on_shed([&] { ++closed_busy; });
  // Both have served a request: their first wait is over.
  { Connection::Idle first(waiting); }
  { Connection::Idle first(busy); }
  {
    Connection::Idle i(waiting);
    idle->close_all();
    EXPECT_EQ(closed_waiting, 1);
    EXPECT_TRUE(waiting.shed());
    EXPECT_EQ(closed_busy, 0) << "a connection serving a request is left to finish it";
    EXPECT_EQ(idle->size(), 0u);
  }
  {
    Connection::Idle i(busy);  // its response sent, it waits for the next request
    EXPECT_EQ(closed_busy, 1);
    EXPECT_TRUE(busy.shed());
    EXPECT_EQ(idle->size(), 0u);
  }
  EXPECT_EQ(budget->open(), 1);
  EXPECT_FALSE(other.shed());
}

// A drain never cuts a new connection's wait for its first request: its client may have
// sent it already (the reset would leave it unanswered). It is served, then closed.
TEST(IdleConnections, CloseAllLeavesANewConnectionToItsFirstRequest) {
  auto budget = std::make_shared<ConnectionBudget>(ConnectionLimits{3, 0});
  auto idle = std::make_shared<IdleConnections>();
  for (int i = 0; i < 2; ++i) ASSERT_EQ(budget->try_take(a), Take::taken);
  Connection before(budget, idle, a), after(budget, idle, a);
  int closed_before = 0, closed_after = 0;
  before.on_shed([&] { ++closed_before; });
  after.on_shed([&] { ++closed_after; });
  {
    Connection::Idle i(before);  // accepted before the drain, its request not read yet
    idle->close_all();
    EXPECT_EQ(closed_before, 0);
    EXPECT_FALSE(before.shed());
    Connection::Idle j(after);  // accepted during the drain
    EXPECT_EQ(closed_after, 0);
    EXPECT_EQ(idle->size(), 2u) << "still sheddable under pressure";
  }
  Connection::Idle next(before);  // answered: its next wait ends the connection
  EXPECT_EQ(closed_before, 1);
  EXPECT_TRUE(before.shed());
  EXPECT_EQ(budget->open(), 1);
}

TEST(BodyBudget, LeasesTakeUpToTheBudgetAndGiveBackWhenDone) {
  BodyBudget budget(100);
  {
    BodyLease one(&budget);
    EXPECT_TRUE(one.grow_to(60));
    BodyLease two(&budget);
    EXPECT_FALSE(two.grow_to(41));
    EXPECT_EQ(two.bytes(), 0u);
    EXPECT_TRUE(two.grow_to(40));
    EXPECT_TRUE(one.grow_to(50)) << "never less than held";
    EXPECT_EQ(budget.used(), 100u);
    EXPECT_FALSE(one.grow_to(61));
    EXPECT_EQ(one.bytes(), 60u);
  }
  EXPECT_EQ(budget.used(), 0u);
  BodyLease unbounded(nullptr);
  EXPECT_TRUE(unbounded.grow_to(size_t{1} << 40));
}

}  // namespace
}  // namespace cairva::http
