// Workers: a small fixed set of threads that run the store's blocking libpq work for the
// asynchronous request-path methods. The queue is bounded: a full queue refuses the job
// (the caller answers store_unavailable) instead of growing without limit.
//
// Jobs posted under one key (an allocation) run one after another: they would each wait for
// that allocation's row lock anyway, and PostgreSQL wakes every waiter at each release (a
// hot allocation served 474 requests/s at 32 connections against 773 at one). A process
// then sends at most one of them to the database at a time, and its other workers serve
// other allocations meanwhile.
//
// Thread safety: post() is thread-safe; the destructor drains the queue and joins.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace cairva::store::pg {

// Jobs waiting for a worker (or for their key's turn); beyond this the store is overloaded
// and says so.
inline constexpr size_t worker_queue_jobs_max = 65536;
// A worker runs this many jobs of one key in a row, then queues the rest behind the jobs
// waiting meanwhile.
inline constexpr size_t key_jobs_per_turn = 16;

class Workers {
 public:
  explicit Workers(int threads);
  ~Workers();
  // False when the queue is full or shutting down; the job is then not run.
  bool post(std::function<void()> job);
  // The same, for a job that runs only after every job posted before it under `key` has
  // finished (see above).
  bool post_in_order(const std::string& key, std::function<void()> job);

 private:
  void loop();
  // Runs `job`, then the jobs waiting under `key`, until none is left or its turn is over.
  void run_key(const std::string& key, std::function<void()> job);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // GUARDED_BY(mu_)
  // Keys with a job running or queued; their later jobs wait here.
  std::unordered_map<std::string, std::deque<std::function<void()>>> keys_;  // GUARDED_BY(mu_)
  size_t waiting_for_key_ = 0;                                               // GUARDED_BY(mu_)
  bool stopping_ = false;                                                    // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;
};

}  // namespace cairva::store::pg
