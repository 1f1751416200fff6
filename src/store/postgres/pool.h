// ConnectionPool: at most `size` libpq connections per process (StoreOptions::pool_size),
// opened lazily. A caller that finds none free waits on a condition variable for at most
// pool_wait_ms_max, then gets store_unavailable (503), never an unbounded wait.
//
// Thread safety: all methods are thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "store/defaults.h"
#include "store/postgres/pg.h"

namespace cairva::store::pg {

// How long a request waits for a free connection before the store reports itself down.
inline constexpr int64_t pool_wait_ms_max = 5000;

class ConnectionPool {
 public:
  // `wait_ms`: how long acquire() waits for a free connection (tests shorten it).
  ConnectionPool(std::string url, int size, int64_t wait_ms = pool_wait_ms_max);
  ~ConnectionPool();

  // A connection on loan; returned to the pool (or dropped when broken) on destruction.
  class Lease {
   public:
    Lease(ConnectionPool* pool, std::unique_ptr<Connection> c) : pool_(pool), c_(std::move(c)) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Connection& operator*() { return *c_; }
    Connection* operator->() { return c_.get(); }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<Connection> c_;
  };

  Result<Lease> acquire();
  int size() const { return size_; }

 private:
  void give_back(std::unique_ptr<Connection> c);

  const std::string url_;
  const int size_;
  const int64_t wait_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Connection>> idle_;  // GUARDED_BY(mu_)
  int open_ = 0;                                   // GUARDED_BY(mu_): idle + on loan + opening
};

}  // namespace cairva::store::pg
