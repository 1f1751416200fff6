#include "http/listener.h"

#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/socket_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <limits>
#include <memory>

#include "http/executor.h"
#include "http/limits.h"

namespace cairva::http {
namespace {

bool out_of_descriptors(const boost::system::error_code& ec) {
  return ec == net::error::no_descriptors || ec == net::error::no_buffer_space ||
         ec == net::error::no_memory || ec.value() == ENFILE;
}

// Hands an accepted connection to its session, within the connection budget.
void serve_accepted(tcp::socket socket, const std::shared_ptr<ConnectionBudget>& budget,
                    const std::shared_ptr<IdleConnections>& idle, const SessionFn& session) {
  boost::system::error_code ec;
  const auto peer = socket.remote_endpoint(ec);
  if (ec) return;  // gone already; the socket closes here
  auto taken = budget->try_take(peer.address());
  if (taken == ConnectionBudget::Take::full && idle->shed_oldest())
    taken = budget->try_take(peer.address());
  if (taken != ConnectionBudget::Take::taken) return;  // closed at once
  socket.set_option(tcp::no_delay(true), ec);
  auto connection = std::make_shared<Connection>(budget, idle, peer.address());
  auto ex = socket.get_executor();
  net::co_spawn(ex, session(std::move(socket), std::move(connection)), net::detached);
}

net::awaitable<void> accept_loop(std::shared_ptr<tcp::acceptor> acceptor,
                                 std::shared_ptr<ConnectionBudget> budget,
                                 std::shared_ptr<IdleConnections> idle, SessionFn session) {
  net::steady_timer pause(acceptor->get_executor());
  for (;;) {
    auto [ec, socket] = co_await acceptor->async_accept(nothrow);
    if (ec) {
      if (ec == net::error::operation_aborted) co_return;
      // Out of descriptors: an idle connection makes room; with none, wait instead of
      // spinning on a listening socket that stays readable. Keep serving the rest.
      if (out_of_descriptors(ec) && !idle->shed_oldest()) {
        pause.expires_after(std::chrono::milliseconds(accept_pause_ms));
        co_await pause.async_wait(nothrow);
      }
      continue;
    }
    serve_accepted(std::move(socket), budget, idle, session);
  }
}

}  // namespace

int64_t raise_open_files_limit(int64_t wanted) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return wanted;  // unknown: assume enough
  const auto wanted_files = static_cast<rlim_t>(wanted);
  const rlim_t target =
      lim.rlim_max == RLIM_INFINITY ? wanted_files : std::min(wanted_files, lim.rlim_max);
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < target) {
    rlimit raised = lim;
    raised.rlim_cur = target;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  if (lim.rlim_cur == RLIM_INFINITY ||
      lim.rlim_cur > static_cast<rlim_t>(std::numeric_limits<int64_t>::max())) {
    return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(lim.rlim_cur);
}

Result<tcp::endpoint> parse_listen_address(const std::string& addr) {
  const auto colon = addr.rfind(':');
  if (colon == std::string::npos)
    return make_error(ErrorCode::invalid_request, "expected host:port, got \"" + addr + "\"");
  std::string host = addr.substr(0, colon);
  const std::string port_text = addr.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
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
  if (port < 0 || port > 65535)
    return make_error(ErrorCode::invalid_request, "bad port in \"" + addr + "\"");
  boost::system::error_code ec;
  auto ip = net::ip::make_address(host, ec);
  if (ec)
    return make_error(ErrorCode::invalid_request,
                      "bad host in \"" + addr + "\" (use a numeric address)");
  return tcp::endpoint(ip, static_cast<unsigned short>(port));
}

Result<Listening> start_listener(net::io_context& ctx, const tcp::endpoint& endpoint,
                                 bool reuse_port, const std::shared_ptr<ConnectionBudget>& budget,
                                 const SessionFn& session) {
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
                      "cannot listen on " + endpoint.address().to_string() + ":" +
                          std::to_string(endpoint.port()) + ": " + ec.message());
  }
  auto bound = acceptor->local_endpoint();
  auto idle = std::make_shared<IdleConnections>();
  // Copies: the stop function below serves what is queued at the close with the same ones.
  net::co_spawn(ctx, accept_loop(acceptor, budget, idle, session), net::detached);
  auto stop = [acceptor, idle, budget, session] {
    // Closing a listening socket resets the connections the kernel completed but the loop
    // had not accepted yet: their clients see a reset after sending a request, which no
    // client or balancer may retry. Accept and serve them first (a draining gateway answers
    // them with Connection: close); a connection arriving after the close is refused, which
    // is safe to retry elsewhere. Runs on the listener's loop, as the accept loop does.
    boost::system::error_code ec;
    acceptor->non_blocking(true, ec);
    for (int i = 0; !ec && i < accept_backlog_drain_max; ++i) {
      tcp::socket socket(acceptor->get_executor());
      acceptor->accept(socket, ec);
      if (!ec) serve_accepted(std::move(socket), budget, idle, session);
    }
    boost::system::error_code ignored;
    acceptor->close(ignored);  // the accept loop ends with operation_aborted
    idle->close_all();
  };
  return Listening{bound, std::move(stop)};
}

}  // namespace cairva::http
