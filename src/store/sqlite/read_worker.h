// ReadWorker: one thread that runs the embedded store's asynchronous reads (the usage
// series) in order, so that a caller on an event loop never waits for SQLite. Its queue is
// bounded: past reads_queued_max the read is refused at once (store_unavailable), so a
// flood of reads cannot grow memory or delay the writer.
//
// Thread safety: post() from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace cairva::store::sqlite {

class ReadWorker {
 public:
  ReadWorker();
  ~ReadWorker();  // runs what is queued, then joins
  ReadWorker(const ReadWorker&) = delete;
  ReadWorker& operator=(const ReadWorker&) = delete;

  // False (and `job` not run) when the queue is full.
  bool post(std::function<void()> job);

 private:
  void run();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;  // GUARDED_BY(mu_)
  bool stopping_ = false;                    // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace cairva::store::sqlite
