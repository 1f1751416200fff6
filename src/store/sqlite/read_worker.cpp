#include "store/sqlite/read_worker.h"

#include "base/thread_name.h"
#include "store/sqlite/limits.h"

namespace cairva::store::sqlite {

ReadWorker::ReadWorker() : thread_([this] { run(); }) {}

ReadWorker::~ReadWorker() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

bool ReadWorker::post(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= reads_queued_max) return false;
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

void ReadWorker::run() {
  name_this_thread("cairva-read");
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    job();
  }
}

}  // namespace cairva::store::sqlite
