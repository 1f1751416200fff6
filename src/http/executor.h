// The data path's executor type: an io_context's own. Asio's default, the type-erased
// any_io_executor, is copied, compared and dispatched through on every operation and every
// coroutine resumption, on the data path's every request. The admin listener and the mock
// provider keep the default.
#pragma once

#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace cairva::http {

using Executor = boost::asio::io_context::executor_type;
using Socket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, Executor>;
using Timer = boost::asio::basic_waitable_timer<
    std::chrono::steady_clock, boost::asio::wait_traits<std::chrono::steady_clock>, Executor>;
// A coroutine on the data path.
template <class T>
using Task = boost::asio::awaitable<T, Executor>;
// Completion tokens for operations awaited in a Task: the result, or (task_nothrow) the
// error code and result as a tuple.
inline constexpr boost::asio::use_awaitable_t<Executor> use_task;
inline constexpr auto task_nothrow = boost::asio::as_tuple(use_task);
// The same for coroutines on the default executor (the admin listener, the mock provider).
inline constexpr auto nothrow = boost::asio::as_tuple(boost::asio::use_awaitable);

// The same connection on `ex`'s type: listeners hand out default-executor sockets. The
// descriptor moves; nothing is pending on it yet. A connection that failed meanwhile comes
// back closed (its first read then fails), never as an exception.
inline Socket rebind(boost::asio::ip::tcp::socket s, const Executor& ex) {
  Socket out(ex);
  boost::system::error_code ec;
  const auto local = s.local_endpoint(ec);
  if (ec) return out;
  const auto fd = s.release(ec);
  if (ec) return out;
  out.assign(local.protocol(), fd, ec);
  if (ec) ::close(fd);  // not adopted: ours to close
  return out;
}

}  // namespace cairva::http
