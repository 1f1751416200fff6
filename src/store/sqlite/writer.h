// The embedded store's writer: two threads, two connections, one order.
//
//  1. The journal takes everything queued (up to commit_batch_ops_max), appends the
//     journaled ops' records to the oplog (oplog.h) as one frame, and acknowledges them
//     (`done`). That write is all a request waits for: one write() per batch, plus one
//     fdatasync with sync=full. With sync=normal an
//     event-loop thread (base/run_soon.h) runs the journal itself, after its round of ready
//     handlers, for what it queued and whatever else is waiting; other threads' ops wake the
//     journal thread ("cairva-store"), which also retries while the disk fails. One journal commits
//     at a time. Then it hands the whole batch, in order, to
//  2. the applier thread ("cairva-apply"), which applies records (writes::Coalescer) and
//     unjournaled ops to the tables in large transactions (apply_batch_ops_min to _max: it lingers
//     for a batch unless a read or an admin write is waiting) and records the last applied record
//     number in each; unjournaled ops get `done` after that commit. Reads therefore see
//     every write queued before them.
// The journal thread deletes the log's segments once they are applied, and makes the next
// one ahead.
//
// Failure (disk full, read-only file, I/O error) of either commit: the batch is rolled
// back, then
//  - `admission` ops fail at once (their callback gets store_unavailable and undoes the
//    in-memory admission), and `failing()` turns true so new admissions are refused;
//  - `durable` ops (state changes, admin writes) stay queued, in order, and are retried
//    every writer_retry_ms until committed; their callback runs when they are durable, or
//    with store_unavailable once durable_ack_wait_ms_max has passed (the write still
//    commits later: the in-memory state already reflects it);
//  - `settlement` ops are kept and retried the same way, but their callback gets
//    store_unavailable at once: the gateway keeps the provider's report and settles again
//    (which writes nothing twice), so its client is not kept waiting for the disk;
//  - `read` ops (lookups, flush barriers) get their own result, whatever the commit did.
// Each stage is in one state (StageStatus): running; failing from a failed commit until one
// succeeds (retrying, or probing its disk when it holds nothing, every writer_retry_ms), so
// `failing()` clears by itself; stopped (the journal, once closing has drained it).
// A journaled record the tables refuse for a non-transient reason (a bug) is reported on
// stderr and skipped, here and at replay, so it cannot stop the records behind it.
// Every timer (the retries, the applier's linger, the durable acknowledgement's wait) runs on
// the injected Clock: tests move a ManualClock instead of sleeping.
//
// Thread safety: all public methods are thread-safe.
#pragma once

#include <boost/container/devector.hpp>
#include <boost/container/small_vector.hpp>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/time.h"
#include "store/sqlite/db.h"
#include "store/sqlite/oplog.h"
#include "store/sqlite/writes.h"

namespace cairva::store::sqlite {

// Batch-size statistics (the store's tests read them).
struct WriterStats {
  int64_t commits = 0;         // oplog commits (what requests wait for)
  int64_t rows = 0;            // journaled ops committed (sum of those batch sizes)
  int64_t max_batch = 0;       // largest journaled batch committed
  int64_t failed_batches = 0;  // transactions rolled back by a write failure (both stages)
  int64_t apply_backlog = 0;   // ops journaled or queued, not yet applied to the tables
};

struct WriteOp {
  enum class Kind : uint8_t { admission, durable, read, settlement };
  Kind kind = Kind::durable;
  // Journaled writes: acknowledged once in the oplog, applied later in this order. Most ops
  // carry one: held inline, no allocation for the applier's thread to free.
  using Records = boost::container::small_vector<writes::Record, 1>;
  Records records;
  // Unjournaled writes and reads: run inside the applier's transaction, acknowledged after
  // its commit. An op has records or `apply` (or neither: a barrier).
  std::function<Status(Db&)> apply;
  // Runs after the op's commit (or its failure), on a writer thread, with no lock held.
  std::function<void(Status)> done;
};

class Writer {
 public:
  // `database`: the tables' connection; `log`: the oplog, whose next record takes number
  // `next_seq` (oplog::replay's). When its commits wait for the disk (sync=full), event
  // loops never run them (a loop would stall every connection it serves for the fsync):
  // Wake::soon then wakes the journal thread. `clock`: what the timers read. `on_commit`:
  // called after each oplog commit with its number of journaled ops (must not block).
  Writer(Db database, std::unique_ptr<oplog::Log> log, int64_t next_seq,
         std::shared_ptr<const Clock> clock, std::function<void(int64_t)> on_commit = {});
  ~Writer();  // drains what it can, then fails what is left; joins the threads
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Who runs the journal for a queued op. `soon`: this thread's event loop after its ready
  // handlers, if it runs one (base/run_soon.h) — only for ops whose callback nobody awaits
  // by blocking this thread; otherwise, and by default, the journal thread.
  enum class Wake : uint8_t { journal_thread, soon };
  // Admission writes: false when the queue is full or the writer is failing; `op` is then
  // left as it was (its callback still the caller's), else moved from.
  bool try_enqueue(WriteOp&& op, Wake wake = Wake::journal_thread);
  // Durable and read ops are always queued.
  void enqueue(WriteOp op, Wake wake = Wake::journal_thread);
  // Blocks until everything queued before the call has been attempted on the tables.
  void flush();

  // The number of the last record in the oplog: every write acknowledged so far is
  // numbered this or less (a backup's copy must hold the tables applied that far).
  int64_t journaled_through();

  bool failing() const;
  // The journal's commits fail: nothing new can be made durable (a failing applier alone
  // still lets the journal take settlements, into the log's reserve when the disk is full).
  bool journal_failing() const;
  WriterStats stats() const;
  // Tests: every commit fails (as a full disk would) while set.
  void set_fault_for_testing(bool fail);
  // Tests: the applier takes nothing while set (records pile up in the oplog only).
  void pause_applier_for_testing(bool pause);
  // Tests: the journal thread takes nothing while set (an event loop's turn still commits).
  void pause_journal_for_testing(bool pause);
  // Tests: blocks until no stage is failing (after a retry or a probe succeeded).
  void wait_while_failing_for_testing();

 private:
  struct Queued {
    WriteOp op;
    int64_t enqueued_us = 0;    // the clock's monotonic time when queued
    bool acknowledged = false;  // its callback already ran (journaled, or timed out)
    bool applied = false;       // its statements ran in the last attempt
    int64_t last_seq = 0;       // journaled: the number of its last record
  };
  // Contiguous and reused: a deque allocated its nodes on the thread that queued and freed
  // them on the one that took (loop and applier), as costly as the records (writes.h).
  using Batch = boost::container::devector<Queued>;
  enum class Stage : uint8_t { journal, apply };
  // A stage's state (the top comment); once the journal is stopped, the applier leaves.
  enum class StageState : uint8_t { running, failing, stopped };
  struct StageStatus {
    StageState state = StageState::running;
    int64_t retry_at_us = 0;  // while failing, on clock_
    bool failing() const { return state == StageState::failing; }
  };
  // What the tests set: every commit fails (`fault`), a stage takes nothing (`paused`).
  struct TestControls {
    bool fault = false;
    bool journal_paused = false;
    bool apply_paused = false;
  };

  // After an op is queued: the calling loop's run_soon, or the journal thread.
  void schedule_journal(Wake wake);
  // An event loop's turn at the journal (skipped when another holds it: that one, or the
  // journal thread woken here, takes what is queued).
  void journal_on_this_thread();
  using Acks = std::vector<std::function<void(Status)>>;
  // REQUIRES: journal_mu_ held. Commits the next batch, if any; leaves its
  // acknowledgements in `acks`, to run once journal_mu_ is released.
  void journal_next_batch(Acks& acks);
  int64_t applied_seq() const;
  // REQUIRES: journal_mu_ held. Applied segments of the log to delete, or its next
  // segment to make ahead.
  bool maintenance_due();
  // REQUIRES: journal_mu_ held; the journal thread only (an unlink frees megabytes, making
  // a segment reserves them).
  void maintain_journal();
  void run_journal();
  void run_apply();
  // One stage's attempt at `batch` until it commits or the disk fails; leaves in `batch`
  // what must be retried.
  void process(Stage stage, Batch& batch, Acks& acks);
  Status commit_journal(Batch& batch, size_t& poisoned);
  Status commit_apply(Batch& batch, size_t& poisoned);
  // Less than a batch waits behind the one being applied.
  bool keeping_up();
  // The ops of a batch the disk refused: answered, or kept for the retry.
  void fail_batch(Stage stage, Batch& batch, const Status& why);
  bool fault() const;
  // A failing stage with nothing to commit tries its disk (REQUIRES for the journal:
  // journal_mu_ held), so that it clears failing() by itself once the disk is back.
  void probe(Stage stage);
  // After a stage's commit or probe (`s`): running again, or failing until the next retry.
  // REQUIRES: mu_ held.
  void settle_status(Stage stage, const Status& s, int64_t now_us);

  Db database_;  // the applier thread's
  // Held by whichever thread runs the journal (the journal thread, or a loop's turn).
  // Lock order: journal_mu_, then mu_.
  std::mutex journal_mu_;
  std::unique_ptr<oplog::Log> log_;  // GUARDED_BY(journal_mu_)
  int64_t next_seq_;                 // GUARDED_BY(journal_mu_)
  Batch journal_batch_;              // GUARDED_BY(journal_mu_): empty between batches
  const bool log_fsyncs_;            // the log's sync_full(), read once: log_ is journal_mu_'s
  const std::shared_ptr<const Clock> clock_;
  uint64_t clock_watch_ = 0;  // wakes the threads when a ManualClock moves
  const std::function<void(int64_t)> on_commit_;
  mutable std::mutex mu_;
  std::condition_variable journal_wake_;
  std::condition_variable apply_wake_;
  std::condition_variable recovered_;  // a stage stopped failing
  Batch queue_;                        // GUARDED_BY(mu_): waiting for the journal
  Batch applying_;                     // GUARDED_BY(mu_): journaled, waiting for the tables
  size_t waiting_in_apply_ = 0;        // GUARDED_BY(mu_): unjournaled ops in applying_
  int64_t applied_seq_ = 0;            // GUARDED_BY(mu_)
  bool stopping_ = false;              // GUARDED_BY(mu_): the destructor runs
  StageStatus journal_;                // GUARDED_BY(mu_)
  StageStatus apply_;                  // GUARDED_BY(mu_)
  TestControls testing_;               // GUARDED_BY(mu_)
  bool maintenance_asked_ = false;     // GUARDED_BY(mu_): a loop's turn found maintenance due
  WriterStats stats_;                  // GUARDED_BY(mu_)
  std::thread journal_thread_;
  std::thread apply_thread_;
};

}  // namespace cairva::store::sqlite
