// Awaiting the Store's callback API from a coroutine: the callback may run on a store
// thread, inside the store call itself, or later on the coroutine's own event loop (the
// embedded store's journal run, which the writes of one loop round share).
#pragma once

#include <atomic>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <utility>

#include "http/executor.h"
#include "store/store.h"

namespace cairva::gateway {

// `start(callback)` starts one Store call; co_await yields its Result<T> on our executor.
// Not a coroutine itself: the awaitable is the operation's own, one coroutine frame and one
// resumption fewer per store call than awaiting it inside a wrapper.
//
// GCC 12 destroys lambda temporaries that capture non-trivial values twice when they
// appear in a co_await expression (a known compiler bug). So callers pass a named Start
// object, which must outlive the co_await, and the initiation captures only a reference.
template <class T, class Start>
http::Task<Result<T>> await_store(Start& start) {
  auto initiation = [&start](auto handler) {
    // The awaiting coroutine's executor, where the callback resumes it.
    const auto ex = boost::asio::get_associated_executor(handler);
    // std::function needs a copyable callable: share the move-only handler.
    using Handler = decltype(handler);
    struct Waiting {
      explicit Waiting(Handler h) : resume(std::move(h)) {}
      Handler resume;
      std::atomic<bool> initiating{true};
    };
    auto waiting = std::make_shared<Waiting>(std::move(handler));
    start([ex, waiting](Result<T> r) mutable {
      auto resume = [waiting, r = std::move(r)]() mutable { waiting->resume(std::move(r)); };
      // Inside start() the coroutine is not to be resumed (an operation never completes
      // inside its initiation): posted. Later, on the loop's own thread, it resumes at
      // once: a post would queue it behind every handler ready by then, one more loop
      // round per store call. From any other thread, dispatch posts.
      if (waiting->initiating.load(std::memory_order_acquire)) {
        boost::asio::post(ex, std::move(resume));
      } else {
        boost::asio::dispatch(ex, std::move(resume));
      }
    });
    waiting->initiating.store(false, std::memory_order_release);
  };
  return boost::asio::async_initiate<decltype(http::use_task), void(Result<T>)>(initiation,
                                                                                http::use_task);
}

}  // namespace cairva::gateway
