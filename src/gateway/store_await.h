// Awaiting the Store's callback API from a coroutine: the callback may run on a store
// thread (or inline), so the result is posted back to the awaiting coroutine's executor.
#pragma once

#include <memory>
#include <utility>

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "store/store.h"

namespace cairva::gateway {

// `start(callback)` starts one Store call; co_await yields its Result<T> on our executor.
template <class T, class Start>
boost::asio::awaitable<Result<T>> await_store(Start start) {
  auto ex = co_await boost::asio::this_coro::executor;
  co_return co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(Result<T>)>(
      [ex, start = std::move(start)](auto handler) mutable {
        // std::function needs a copyable callable: share the move-only handler.
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        start([ex, shared](Result<T> r) mutable {
          boost::asio::post(ex, [shared, r = std::move(r)]() mutable { (*shared)(std::move(r)); });
        });
      },
      boost::asio::use_awaitable);
}

}  // namespace cairva::gateway
