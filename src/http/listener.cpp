#include "http/listener.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/socket_base.hpp>
#include <algorithm>
#include <memory>
#include <mutex>

#include <sys/resource.h>

#include "http/limits.h"

namespace cairva::http {
namespace {

constexpr auto nothrow = net::as_tuple(net::use_awaitable);

// Decrements the open-connection count when a session ends, however it ends.
struct ConnectionSlot {
  ConnectionSlot() = default;
  ConnectionSlot(const ConnectionSlot&) = delete;
  ~ConnectionSlot() { open_connections().fetch_sub(1, std::memory_order_relaxed); }
};

net::awaitable<void> run_session(SessionFn& session, tcp::socket socket) {
  ConnectionSlot slot;
  co_await session(std::move(socket));
}

net::awaitable<void> accept_loop(std::shared_ptr<tcp::acceptor> acceptor, SessionFn session) {
  for (;;) {
    auto [ec, socket] = co_await acceptor->async_accept(nothrow);
    if (ec) {
      if (ec == net::error::operation_aborted) co_return;
      continue;  // EMFILE and friends: keep serving the connections we have
    }
    if (open_connections().fetch_add(1, std::memory_order_relaxed) >= connections_max) {
      open_connections().fetch_sub(1, std::memory_order_relaxed);
      boost::system::error_code ignored;
      socket.close(ignored);
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    auto ex = socket.get_executor();
    net::co_spawn(ex, run_session(session, std::move(socket)), net::detached);
  }
}

// Lets the process hold connections_max connections: the soft RLIMIT_NOFILE is often 1024.
void raise_open_files_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  const rlim_t wanted = static_cast<rlim_t>(connections_max + file_descriptors_reserve);
  const rlim_t target = lim.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, lim.rlim_max);
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < target) {
    lim.rlim_cur = target;
    (void)::setrlimit(RLIMIT_NOFILE, &lim);  // best effort: connections_max still bounds what is accepted
  }
}

}  // namespace

std::atomic<int64_t>& open_connections() {
  static std::atomic<int64_t> count{0};
  return count;
}

Result<tcp::endpoint> parse_listen_address(const std::string& addr) {
  const auto colon = addr.rfind(':');
  if (colon == std::string::npos) return make_error(ErrorCode::invalid_request, "expected host:port, got \"" + addr + "\"");
  std::string host = addr.substr(0, colon);
  const std::string port_text = addr.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") host = "127.0.0.1";
  if (host.empty()) host = "0.0.0.0";
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(port_text, &used);
    if (used != port_text.size()) port = -1;
  } catch (...) {
    port = -1;
  }
  if (port < 0 || port > 65535) return make_error(ErrorCode::invalid_request, "bad port in \"" + addr + "\"");
  boost::system::error_code ec;
  auto ip = net::ip::make_address(host, ec);
  if (ec) return make_error(ErrorCode::invalid_request, "bad host in \"" + addr + "\" (use a numeric address)");
  return tcp::endpoint(ip, static_cast<unsigned short>(port));
}

Result<tcp::endpoint> start_listener(net::io_context& ctx, const tcp::endpoint& endpoint, bool reuse_port,
                                     SessionFn session) {
  static std::once_flag raised;
  std::call_once(raised, raise_open_files_limit);
  auto acceptor = std::make_shared<tcp::acceptor>(ctx);
  boost::system::error_code ec;
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec && reuse_port) {
    int one = 1;
    if (::setsockopt(acceptor->native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
      ec = boost::system::error_code(errno, boost::system::system_category());
    }
  }
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return make_error(ErrorCode::internal_error,
                      "cannot listen on " + endpoint.address().to_string() + ":" + std::to_string(endpoint.port()) +
                          ": " + ec.message());
  }
  auto bound = acceptor->local_endpoint();
  net::co_spawn(ctx, accept_loop(acceptor, std::move(session)), net::detached);
  return bound;
}

}  // namespace cairva::http
