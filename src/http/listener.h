// Listener: accepts TCP connections on one address for one event loop and hands each
// to a session coroutine. Several event loops listen on the same port (SO_REUSEPORT),
// so the kernel spreads connections over cores. Each listener has its own
// ConnectionBudget (http/connections.h): over it, or out of descriptors, the event loop's
// oldest idle connection is shed to make room, else the new connection is closed at once.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "http/connections.h"

namespace cairva::http {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// "host:port" → endpoint (numeric host or "localhost"; port 0 = any).
Result<tcp::endpoint> parse_listen_address(const std::string& addr);

// A session gets its socket and its connection's slot, which it keeps for its life.
using SessionFn = std::function<net::awaitable<void>(tcp::socket, std::shared_ptr<Connection>)>;

// Raises the soft RLIMIT_NOFILE towards `wanted` (at most the hard limit): the default soft
// limit is often 1024. Returns the soft limit now in force.
int64_t raise_open_files_limit(int64_t wanted);

// A listener started on one event loop.
struct Listening {
  tcp::endpoint endpoint;  // bound (useful with port 0)
  // Closes the listening socket (new connections are refused) and the loop's connections
  // idle now, then each as it becomes idle (IdleConnections::close_all). Runs on the
  // listener's event loop only: post it there.
  std::function<void()> stop;
};

// Binds `endpoint` (with SO_REUSEPORT when `reuse_port`) on `ctx`, and starts accepting
// connections within `budget` (shared by every loop of the same listener).
Result<Listening> start_listener(net::io_context& ctx, const tcp::endpoint& endpoint,
                                 bool reuse_port, const std::shared_ptr<ConnectionBudget>& budget,
                                 const SessionFn& session);

}  // namespace cairva::http
