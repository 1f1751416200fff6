// call_within: runs a blocking call that cannot be interrupted (getaddrinfo, for one) on a
// thread of its own and waits for its answer until a deadline. Past the deadline the caller
// stops waiting; the thread keeps the call's state alive until the call returns (or the
// process ends), so nothing it touches dangles.
//
// For short-lived callers (the CLI): each late call leaves a thread behind until it returns.
#pragma once

#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

namespace cairva {

// `f`'s result, or nullopt when it has not returned by `deadline`. An exception from `f`
// is rethrown here.
template <class F>
std::optional<std::invoke_result_t<F>> call_within(F f,
                                                   std::chrono::steady_clock::time_point deadline) {
  using T = std::invoke_result_t<F>;
  auto answer = std::make_shared<std::promise<T>>();
  std::future<T> result = answer->get_future();
  std::thread([answer, f = std::move(f)]() mutable {
    try {
      answer->set_value(f());
    } catch (...) {
      answer->set_exception(std::current_exception());
    }
  }).detach();
  if (result.wait_until(deadline) != std::future_status::ready) return std::nullopt;
  return result.get();
}

}  // namespace cairva
