// Connection budgets: how many connections a listener holds, in all and per client
// address, and which of them may be shed. A connection waiting for a request's first byte
// (a fresh one, or an idle keep-alive one) is idle: when its listener's budget or the
// process's descriptors run short, the oldest idle connection of the event loop is closed
// to make room, so that a flood of idle connections never locks new clients out.
//
// Thread safety: a ConnectionBudget is shared by a listener's event loops (thread-safe);
// IdleConnections and Connection belong to one event loop (not thread-safe).
#pragma once

#include <atomic>
#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace cairva::http {

struct ConnectionLimits {
  int64_t connections_max = 0;             // open connections of the listener, all loops
  int64_t connections_per_client_max = 0;  // per client address; 0: no per-address cap
};

class ConnectionBudget {
 public:
  enum class Take { taken, full, client_full };

  explicit ConnectionBudget(ConnectionLimits limits) : limits_(limits) {}
  ConnectionBudget(const ConnectionBudget&) = delete;
  ConnectionBudget& operator=(const ConnectionBudget&) = delete;

  // Takes a slot for a connection from `client`, or says which cap refused it.
  Take try_take(const boost::asio::ip::address& client);
  // Gives back a slot try_take gave.
  void give_back(const boost::asio::ip::address& client);

  int64_t open() const { return open_.load(std::memory_order_relaxed); }
  const ConnectionLimits& limits() const { return limits_; }

 private:
  const ConnectionLimits limits_;
  std::atomic<int64_t> open_{0};
  std::mutex mutex_;
  std::unordered_map<boost::asio::ip::address, int64_t> per_client_;  // GUARDED_BY(mutex_)
};

class IdleConnections;

// One accepted connection's slot in its listener's budget, held for the connection's life.
class Connection {
 public:
  Connection(std::shared_ptr<ConnectionBudget> budget, std::shared_ptr<IdleConnections> idle,
             boost::asio::ip::address client);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // How the session closes its socket when the connection is shed. Set before the first
  // Idle scope; the function must stay callable while an Idle scope is open.
  void on_shed(std::function<void()> close) { close_ = std::move(close); }
  // True once the connection was shed: its socket is closed, its slot given back.
  bool shed() const { return shed_; }
  const boost::asio::ip::address& client() const { return client_; }

  // While alive, the connection waits for a request's first byte and may be shed: under
  // pressure, or once its list is closing (a drain) if it has served a request before. A
  // new connection's first wait is not cut by a drain: its client may have sent its request
  // already, and closing would reset it unanswered; it is answered with Connection: close,
  // or closed by the first-byte timeout.
  class Idle {
   public:
    explicit Idle(Connection& c);
    ~Idle();
    Idle(const Idle&) = delete;
    Idle& operator=(const Idle&) = delete;

   private:
    Connection& c_;
  };

 private:
  friend class IdleConnections;
  void shed_now();

  std::shared_ptr<ConnectionBudget> budget_;
  std::shared_ptr<IdleConnections> idle_;
  boost::asio::ip::address client_;
  std::function<void()> close_;
  bool shed_ = false;
  bool fresh_ = true;  // still in its first wait for a request
  // Links in the event loop's idle list, oldest first.
  Connection* prev_ = nullptr;
  Connection* next_ = nullptr;
  bool linked_ = false;
};

// The idle connections of one listener on one event loop, oldest first.
class IdleConnections {
 public:
  // Closes the connection idle the longest and gives its slot back. False when none is idle.
  bool shed_oldest();
  // Closes every keep-alive connection idle now, and from now on each one as it becomes idle
  // (a draining process: a keep-alive connection closes once its response is sent). New
  // connections still waiting for their first request stay (Connection::Idle).
  void close_all();
  size_t size() const { return size_; }

 private:
  friend class Connection;
  void link(Connection& c);
  void unlink(Connection& c);

  Connection* head_ = nullptr;
  Connection* tail_ = nullptr;
  size_t size_ = 0;
  bool closing_ = false;  // close_all() was called
};

}  // namespace cairva::http
