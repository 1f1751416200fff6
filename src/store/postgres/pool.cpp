#include "store/postgres/pool.h"

#include <algorithm>
#include <chrono>

namespace cairva::store::pg {

ConnectionPool::ConnectionPool(std::string url, int size, int64_t wait_ms)
    : url_(std::move(url)), size_(std::clamp(size, 1, pool_size_max)), wait_ms_(wait_ms) {}

ConnectionPool::~ConnectionPool() {
  std::lock_guard lock(mu_);
  CAIRVA_ASSERT(static_cast<int>(idle_.size()) == open_);  // every lease returned
}

ConnectionPool::Lease::~Lease() {
  if (c_) pool_->give_back(std::move(c_));
}

Result<ConnectionPool::Lease> ConnectionPool::acquire() {
  {
    std::unique_lock lock(mu_);
    bool ready = cv_.wait_for(lock, std::chrono::milliseconds(wait_ms_),
                              [&] { return !idle_.empty() || open_ < size_; });
    if (!ready) {
      return make_error(ErrorCode::store_unavailable, "postgres: no free connection in the pool");
    }
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(c));
    }
    ++open_;  // reserve a slot; connect outside the lock
  }
  auto c = Connection::open(url_);
  if (!c.ok()) {
    std::lock_guard lock(mu_);
    --open_;
    cv_.notify_one();
    return c.error();
  }
  return Lease(this, std::move(c).value());
}

void ConnectionPool::give_back(std::unique_ptr<Connection> c) {
  std::unique_ptr<Connection> broken;
  {
    std::lock_guard lock(mu_);
    if (c->reusable()) {
      idle_.push_back(std::move(c));
    } else {
      broken = std::move(c);  // closed outside the lock; its slot frees up for a new one
                              // (a connection left mid-transaction is dropped, not reused)
      --open_;
    }
  }
  cv_.notify_one();
}

}  // namespace cairva::store::pg
