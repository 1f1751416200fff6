#include "gateway/store_await.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <string>
#include <thread>
#include <vector>

namespace cairva::gateway {
namespace {

namespace net = boost::asio;

// Runs one coroutine awaiting `start` on `ctx`, recording its resumption in `order`.
template <class Start>
void spawn_waiter(net::io_context& ctx, Start& start, std::vector<std::string>& order,
                  std::thread::id* resumed_on = nullptr) {
  net::co_spawn(
      ctx.get_executor(),
      [&start, &order, resumed_on]() -> http::Task<void> {
        auto r = co_await await_store<int>(start);
        order.push_back("resumed " + std::to_string(r.ok() ? *r : -1));
        if (resumed_on != nullptr) *resumed_on = std::this_thread::get_id();
      },
      net::detached);
}

TEST(AwaitStore, ACallbackInsideTheStoreCallResumesOnlyAfterTheCallReturned) {
  net::io_context ctx;
  std::vector<std::string> order;
  auto start = [&order](const store::Callback<int>& cb) {
    cb(5);
    order.push_back("store call returned");
  };
  spawn_waiter(ctx, start, order);
  ctx.run();
  EXPECT_EQ(order, (std::vector<std::string>{"store call returned", "resumed 5"}));
}

TEST(AwaitStore, ALaterCallbackOnTheLoopResumesAtOnceNotBehindReadyHandlers) {
  net::io_context ctx;
  std::vector<std::string> order;
  store::Callback<int> saved;
  auto start = [&saved](store::Callback<int> cb) { saved = std::move(cb); };
  spawn_waiter(ctx, start, order);
  ctx.poll();  // the coroutine now waits in the store call
  ASSERT_TRUE(saved);
  net::post(ctx, [&] {
    saved(7);  // as the embedded store's journal run does, on the loop's thread
    order.push_back("callback returned");
  });
  net::post(ctx, [&] { order.push_back("next ready handler"); });
  ctx.run();
  EXPECT_EQ(order,
            (std::vector<std::string>{"resumed 7", "callback returned", "next ready handler"}));
}

TEST(AwaitStore, ACallbackFromAnotherThreadResumesOnTheLoopsThread) {
  net::io_context ctx;
  std::vector<std::string> order;
  store::Callback<int> saved;
  auto start = [&saved](store::Callback<int> cb) { saved = std::move(cb); };
  std::thread::id resumed_on;
  spawn_waiter(ctx, start, order, &resumed_on);
  ctx.poll();
  ASSERT_TRUE(saved);
  auto work = net::make_work_guard(ctx);
  std::thread store_thread([&] {
    saved(9);
    work.reset();
  });
  ctx.run();
  store_thread.join();
  EXPECT_EQ(order, (std::vector<std::string>{"resumed 9"}));
  EXPECT_EQ(resumed_on, std::this_thread::get_id());
}

}  // namespace
}  // namespace cairva::gateway
