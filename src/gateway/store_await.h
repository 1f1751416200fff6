// Awaiting the Store's callback API from a coroutine: the callback may run on a store
// thread (or inline), so the result is posted back to the awaiting coroutine's executor.
#pragma once

#include <memory>
#include <utility>

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "http/executor.h"
#include "store/store.h"

namespace cairva::gateway {

// `start(callback)` starts one Store call; co_await yields its Result<T> on our executor.
//
// GCC 12 destroys lambda temporaries that capture non-trivial values twice when they
// appear in a co_await expression (a known compiler bug). So callers pass a named Start
// object, and the initiation below is a named local, never a temporary.
template <class T, class Start>
http::Task<Result<T>> await_store(Start& start) {
  auto ex = co_await boost::asio::this_coro::executor;
  auto initiation = [ex, &start](auto handler) {
    // std::function needs a copyable callable: share the move-only handler.
    auto shared = std::make_shared<decltype(handler)>(std::move(handler));
    start([ex, shared](Result<T> r) mutable {
      boost::asio::post(ex, [shared, r = std::move(r)]() mutable { (*shared)(std::move(r)); });
    });
  };
  co_return co_await boost::asio::async_initiate<decltype(http::use_task), void(Result<T>)>(initiation,
                                                                                          http::use_task);
}

}  // namespace cairva::gateway
