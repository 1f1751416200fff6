// Listener: accepts TCP connections on one address for one event loop and hands each
// to a session coroutine. Several event loops listen on the same port (SO_REUSEPORT),
// so the kernel spreads connections over cores. A process-wide connection count is
// bounded by connections_max: over it, new connections are closed at once.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "base/result.h"

namespace cairva::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// "host:port" → endpoint (numeric host or "localhost"; port 0 = any).
Result<tcp::endpoint> parse_listen_address(const std::string& addr);

using SessionFn = std::function<net::awaitable<void>(tcp::socket)>;

// Open connections across every listener of the process.
std::atomic<int64_t>& open_connections();

// Binds `endpoint` (with SO_REUSEPORT when `reuse_port`) on `ctx`, and starts accepting.
// Returns the bound endpoint (useful with port 0).
Result<tcp::endpoint> start_listener(net::io_context& ctx, const tcp::endpoint& endpoint,
                                     bool reuse_port, SessionFn session);

}  // namespace cairva::http
