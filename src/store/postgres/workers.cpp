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
    if (stopping_ || queue_.size() >= worker_queue_jobs_max) return false;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
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
