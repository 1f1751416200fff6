#include "http/body_budget.h"

namespace cairva::http {

bool BodyBudget::try_take(size_t bytes) {
  size_t used = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > bytes_max_ || used > bytes_max_ - bytes) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

bool BodyLease::grow_to(size_t bytes) {
  if (bytes <= bytes_) return true;
  if (budget_ && !budget_->try_take(bytes - bytes_)) return false;
  bytes_ = bytes;
  return true;
}

void BodyLease::release() {
  if (budget_ && bytes_ > 0) budget_->give_back(bytes_);
  bytes_ = 0;
}

}  // namespace cairva::http
