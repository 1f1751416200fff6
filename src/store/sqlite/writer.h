// The group-commit writer: ONE thread that takes everything queued (up to
// commit_batch_ops_max), applies it in one transaction, commits, and only then runs the
// callbacks (outside every lock). One fsync (sync=full) or WAL append (normal) per batch
// instead of per request.
//
// Failure (disk full, read-only file, I/O error): the batch is rolled back, then
//  - `admission` writes fail at once (their callback gets store_unavailable and undoes the
//    in-memory admission), and `failing()` turns true so new admissions are refused;
//  - `durable` writes (settlements, state changes, admin writes) stay queued, in order, and
//    are retried every writer_retry_ms until committed; their callback runs when they are
//    durable, or with store_unavailable once durable_ack_wait_ms_max has passed (the write
//    still commits later: the in-memory state already reflects it);
//  - `read` ops (lookups, flush barriers) get their own result, whatever the commit did.
// The writer probes the disk while failing and clears `failing()` by itself on success.
//
// Thread safety: all public methods are thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "store/sqlite/db.h"

namespace cairva::store::sqlite {

// Batch-size statistics, for /metrics and the benchmark report.
struct WriterStats {
  int64_t commits = 0;          // successful transactions
  int64_t rows = 0;             // ops committed (sum of batch sizes)
  int64_t max_batch = 0;        // largest batch committed
  int64_t failed_batches = 0;   // transactions rolled back by a write failure
  int64_t queue_depth = 0;      // ops waiting now
};

struct WriteOp {
  enum class Kind : uint8_t { admission, durable, read };
  Kind kind = Kind::durable;
  // Runs inside the batch's transaction on the writer's connection.
  std::function<Status(Db&)> apply;
  // Runs after COMMIT (or after the failure), on the writer thread, with no lock held.
  std::function<void(Status)> done;
};

class Writer {
 public:
  // `on_commit`: called on the writer thread after each commit with its batch size (may
  // be empty; must not block).
  explicit Writer(Db db, std::function<void(int64_t)> on_commit = {});
  ~Writer();  // drains what it can, then fails what is left; joins the thread
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Admission writes: false (nothing queued) when the queue is full or the writer is failing.
  bool try_enqueue(WriteOp op);
  // Durable and read ops are always queued.
  void enqueue(WriteOp op);
  // Blocks until everything queued before the call has been attempted.
  void flush();

  bool failing() const;
  WriterStats stats() const;
  // Tests: every commit fails (as a full disk would) while set.
  void set_fault_for_testing(bool fail);

 private:
  struct Queued {
    WriteOp op;
    std::chrono::steady_clock::time_point enqueued;
    bool acknowledged = false;  // a durable op whose callback already ran (timed out)
    bool applied = false;       // its statements ran in the last attempt
  };
  void run();
  void process(std::deque<Queued>& batch);
  Status commit_batch(std::deque<Queued>& batch, size_t& poisoned);
  Status probe();

  Db db_;
  const std::function<void(int64_t)> on_commit_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Queued> queue_;  // GUARDED_BY(mu_)
  bool stopping_ = false;      // GUARDED_BY(mu_)
  bool failing_ = false;       // GUARDED_BY(mu_)
  bool fault_ = false;         // GUARDED_BY(mu_)
  WriterStats stats_;          // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace cairva::store::sqlite
