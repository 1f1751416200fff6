#include "http/connections.h"

#include "base/assert.h"

namespace cairva::http {

ConnectionBudget::Take ConnectionBudget::try_take(const boost::asio::ip::address& client) {
  const bool per_client = limits_.connections_per_client_max > 0;
  if (per_client) {
    std::lock_guard lock(mutex_);
    int64_t& n = per_client_[client];
    if (n >= limits_.connections_per_client_max) return Take::client_full;
    ++n;
  }
  if (open_.fetch_add(1, std::memory_order_relaxed) >= limits_.connections_max) {
    open_.fetch_sub(1, std::memory_order_relaxed);
    if (per_client) {
      std::lock_guard lock(mutex_);
      auto it = per_client_.find(client);
      if (--it->second == 0) per_client_.erase(it);
    }
    return Take::full;
  }
  return Take::taken;
}

void ConnectionBudget::give_back(const boost::asio::ip::address& client) {
  open_.fetch_sub(1, std::memory_order_relaxed);
  if (limits_.connections_per_client_max <= 0) return;
  std::lock_guard lock(mutex_);
  auto it = per_client_.find(client);
  CAIRVA_ASSERT(it != per_client_.end() && it->second > 0);
  if (--it->second == 0) per_client_.erase(it);  // the map holds only addresses connected now
}

Connection::Connection(std::shared_ptr<ConnectionBudget> budget,
                       std::shared_ptr<IdleConnections> idle, boost::asio::ip::address client)
    : budget_(std::move(budget)), idle_(std::move(idle)), client_(std::move(client)) {}

Connection::~Connection() {
  if (linked_) idle_->unlink(*this);
  if (!shed_) budget_->give_back(client_);
}

void Connection::shed_now() {
  if (linked_) idle_->unlink(*this);
  shed_ = true;
  budget_->give_back(client_);  // now: the connection that asked for room takes it at once
  if (close_) close_();
}

Connection::Idle::Idle(Connection& c) : c_(c) {
  if (c_.shed_) return;
  if (c_.idle_->closing_ && !c_.fresh_) {
    c_.shed_now();
    return;
  }
  c_.idle_->link(c_);
}

Connection::Idle::~Idle() {
  c_.fresh_ = false;
  if (c_.linked_) c_.idle_->unlink(c_);
}

void IdleConnections::link(Connection& c) {
  CAIRVA_ASSERT(!c.linked_);
  c.prev_ = tail_;
  c.next_ = nullptr;
  if (tail_) {
    tail_->next_ = &c;
  } else {
    head_ = &c;
  }
  tail_ = &c;
  c.linked_ = true;
  ++size_;
}

void IdleConnections::unlink(Connection& c) {
  CAIRVA_ASSERT(c.linked_);
  (c.prev_ ? c.prev_->next_ : head_) = c.next_;
  (c.next_ ? c.next_->prev_ : tail_) = c.prev_;
  c.prev_ = c.next_ = nullptr;
  c.linked_ = false;
  --size_;
}

void IdleConnections::close_all() {
  closing_ = true;
  for (Connection* c = head_; c != nullptr;) {
    Connection* next = c->next_;
    if (!c->fresh_) c->shed_now();
    c = next;
  }
}

bool IdleConnections::shed_oldest() {
  if (!head_) return false;
  head_->shed_now();
  return true;
}

}  // namespace cairva::http
