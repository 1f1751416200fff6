// Workers: a small fixed set of threads that run the store's blocking libpq work for the
// asynchronous request-path methods. The queue is bounded: a full queue refuses the job
// (the caller answers store_unavailable) instead of growing without limit.
//
// Thread safety: post() is thread-safe; the destructor drains the queue and joins.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cairva::store::pg {

// Jobs waiting for a worker; beyond this the store is overloaded and says so.
inline constexpr size_t worker_queue_jobs_max = 65536;

class Workers {
 public:
  explicit Workers(int threads);
  ~Workers();
  // False when the queue is full or shutting down; the job is then not run.
  bool post(std::function<void()> job);

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // GUARDED_BY(mu_)
  bool stopping_ = false;                    // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

}  // namespace cairva::store::pg
