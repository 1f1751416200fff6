#include "store/postgres/workers.h"

#include <string>

#include "base/assert.h"
#include "base/thread_name.h"

namespace cairva::store::pg {

Workers::Workers(int threads) {
  CAIRVA_ASSERT(threads >= 1);
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, i] {
      name_this_thread("cairva-pg-" + std::to_string(i));
      loop();
    });
  }
}

Workers::~Workers() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

bool Workers::post(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() + waiting_for_key_ >= worker_queue_jobs_max) return false;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

bool Workers::post_in_order(const std::string& key, std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() + waiting_for_key_ >= worker_queue_jobs_max) return false;
    auto [it, first] = keys_.try_emplace(key);
    if (!first) {
      it->second.push_back(std::move(job));
      ++waiting_for_key_;
      return true;
    }
    queue_.push_back([this, key, job = std::move(job)]() mutable { run_key(key, std::move(job)); });
  }
  cv_.notify_one();
  return true;
}

void Workers::run_key(const std::string& key, std::function<void()> job) {
  for (size_t ran = 1;; ++ran) {
    job();
    std::lock_guard lock(mu_);
    auto it = keys_.find(key);
    CAIRVA_ASSERT(it != keys_.end());
    if (it->second.empty()) {
      keys_.erase(it);
      return;
    }
    job = std::move(it->second.front());
    it->second.pop_front();
    --waiting_for_key_;
    // Stopping: the queue is being drained, so this worker finishes the key's jobs itself.
    if (ran % key_jobs_per_turn == 0 && !stopping_) {
      queue_.push_back(
          [this, key, job = std::move(job)]() mutable { run_key(key, std::move(job)); });
      cv_.notify_one();
      return;
    }
  }
}

void Workers::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();  // runs without the queue lock: callbacks may post again
  }
}

}  // namespace cairva::store::pg
