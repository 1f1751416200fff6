// Lingering close: after refusing a request whose body it did not read, a server that
// closes at once makes the kernel answer the client's further bytes with a reset, which can
// destroy the refusal before the client reads it (a client writing its whole body before
// reading gets EPIPE instead of the 401 or 413). So the connection first stops sending, then
// reads and discards what the client still sends, up to discard_body_bytes_max and
// discard_body_timeout_s, and only then closes: as nginx's lingering close.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>

#include "http/limits.h"

namespace cairva::http {

// Reads and drops bytes from `stream` until the client closes, an error, or a bound.
// `expires_after(duration)` bounds the reads in time (the connection's own timer).
// `buffer` is the connection's: what it holds is dropped and its room reused.
template <class Stream, class ExpiresAfter>
boost::asio::awaitable<void, typename Stream::executor_type> discard_until_closed(
    Stream& stream, boost::beast::flat_buffer& buffer, ExpiresAfter expires_after) {
  constexpr auto nothrow =
      boost::asio::as_tuple(boost::asio::use_awaitable_t<typename Stream::executor_type>{});
  size_t discarded = buffer.size();
  buffer.consume(buffer.size());
  expires_after(std::chrono::seconds(discard_body_timeout_s));
  while (discarded < discard_body_bytes_max) {
    auto [ec, n] = co_await stream.async_read_some(buffer.prepare(discard_read_bytes), nothrow);
    if (ec) break;   // the client closed, reset, or the time bound cancelled the read
    discarded += n;  // never committed: the same room takes the next read
  }
}

}  // namespace cairva::http
