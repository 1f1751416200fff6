#include "store/sqlite/writer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>

#include "base/assert.h"
#include "base/run_soon.h"
#include "base/thread_name.h"
#include "store/sqlite/limits.h"
#include "store/sqlite/oplog.h"

namespace cairva::store::sqlite {
namespace {

Error unavailable(const std::string& why) {
  return make_error(ErrorCode::store_unavailable, "store unavailable: " + why);
}

bool journaled(const WriteOp& op) { return !op.records.empty(); }

constexpr int64_t retry_us = writer_retry_ms * micros_per_milli;

// Waits on `cv`, `lock` held, until `ready()` or `clock`'s monotonic time reaches
// `deadline_us`; returns ready(). Each wait lasts at most the time left on the clock, so a
// real clock's deadline ends it; a clock that jumps ends it through the Writer's watch,
// which takes the lock's mutex before it notifies, so no move falls between a check and a
// wait.
template <class Predicate>
bool wait_until(const Clock& clock, std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                int64_t deadline_us, Predicate ready) {
  while (!ready()) {
    const int64_t left_us = deadline_us - clock.monotonic_micros();
    if (left_us <= 0) return false;
    cv.wait_for(lock, std::chrono::microseconds(left_us));
  }
  return true;
}

// One transaction's end: COMMIT, or ROLLBACK and the failure.
Status finish(Db& db, Status s) {
  if (s.ok()) s = db.exec("COMMIT");
  if (!s.ok()) (void)db.exec("ROLLBACK");
  return s;
}

}  // namespace

Writer::Writer(Db database, std::unique_ptr<oplog::Log> log, int64_t next_seq,
               std::shared_ptr<const Clock> clock, std::function<void(int64_t)> on_commit)
    : database_(std::move(database)),
      log_(std::move(log)),
      next_seq_(next_seq),
      log_fsyncs_(log_->sync_full()),
      clock_(std::move(clock)),
      on_commit_(std::move(on_commit)),
      applied_seq_(next_seq - 1) {
  clock_watch_ = clock_->watch([this] {
    { std::lock_guard lock(mu_); }  // a thread between its check and its wait holds mu_
    journal_wake_.notify_all();
    apply_wake_.notify_all();
  });
  journal_thread_ = std::thread([this] {
    name_this_thread("cairva-store");
    run_journal();
  });
  apply_thread_ = std::thread([this] {
    name_this_thread("cairva-apply");
    run_apply();
  });
}

namespace {
// The Writer whose journal run this thread's event loop has queued and not yet started:
// the writes of a round of handlers share that one run (one commit per round) instead of
// each queueing a run that would find the queue empty.
thread_local const Writer* journal_run_queued_for = nullptr;
}  // namespace

Writer::~Writer() {
  if (journal_run_queued_for == this)
    journal_run_queued_for = nullptr;  // the address may be reused
  clock_->unwatch(clock_watch_);
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  journal_wake_.notify_all();
  journal_thread_.join();  // the applier leaves once the journal has handed it everything
  apply_thread_.join();
}

bool Writer::try_enqueue(WriteOp&& op, Wake wake) {
  CAIRVA_ASSERT(op.kind == WriteOp::Kind::admission);
  const int64_t now_us = clock_->monotonic_micros();
  {
    std::lock_guard lock(mu_);
    if (journal_.failing() || apply_.failing() || stopping_ ||
        queue_.size() >= writer_queue_ops_max) {
      return false;
    }
    queue_.push_back({std::move(op), now_us});
  }
  schedule_journal(wake);
  return true;
}

void Writer::enqueue(WriteOp op, Wake wake) {
  const int64_t now_us = clock_->monotonic_micros();
  {
    std::lock_guard lock(mu_);
    queue_.push_back({std::move(op), now_us});
  }
  schedule_journal(wake);
}

void Writer::schedule_journal(Wake wake) {
  const RunSoon* run_soon =
      wake == Wake::soon && !log_fsyncs_ ? run_soon_for_this_thread() : nullptr;
  if (run_soon != nullptr) {
    if (journal_run_queued_for == this) return;
    journal_run_queued_for = this;
    (*run_soon)([this] { journal_on_this_thread(); });
  } else {
    journal_wake_.notify_one();
  }
}

void Writer::journal_on_this_thread() {
  if (journal_run_queued_for == this)
    journal_run_queued_for = nullptr;  // later writes queue a new run
  Acks acks;
  {
    std::unique_lock journal(journal_mu_, std::try_to_lock);
    if (!journal.owns_lock()) {
      journal_wake_.notify_one();
      return;
    }
    {
      std::lock_guard lock(mu_);
      if (queue_.empty()) return;  // an earlier turn, or the journal thread, took it
      // Failing (retries), stopping or a full backlog: the journal thread's to handle.
      if (journal_.failing() || stopping_ || applying_.size() >= apply_backlog_ops_max) {
        journal_wake_.notify_one();
        return;
      }
    }
    journal_next_batch(acks);
    const bool maintenance = maintenance_due();
    std::lock_guard lock(mu_);
    if (maintenance) maintenance_asked_ = true;
    // More than a batch, a failure (retries, probes) or maintenance: the journal thread's.
    if (!queue_.empty() || journal_.failing() || maintenance) {
      journal_wake_.notify_one();
    }
  }
  for (auto& done : acks) done(Status{});
}

void Writer::journal_next_batch(Acks& acks) {
  Batch& batch = journal_batch_;
  {
    std::lock_guard lock(mu_);
    while (!queue_.empty() && batch.size() < commit_batch_ops_max) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
  }
  if (batch.empty()) return;
  process(Stage::journal, batch, acks);
  std::lock_guard lock(mu_);
  while (!batch.empty()) {
    queue_.push_front(std::move(batch.back()));
    batch.pop_back();
  }
}

void Writer::flush() {
  std::promise<void> p;
  WriteOp barrier;
  barrier.kind = WriteOp::Kind::read;
  barrier.done = [&p](const Status&) { p.set_value(); };
  enqueue(std::move(barrier));
  p.get_future().wait();
}

int64_t Writer::journaled_through() {
  std::lock_guard lock(journal_mu_);
  return next_seq_ - 1;
}

bool Writer::failing() const {
  std::lock_guard lock(mu_);
  return journal_.failing() || apply_.failing();
}

bool Writer::journal_failing() const {
  std::lock_guard lock(mu_);
  return journal_.failing();
}

WriterStats Writer::stats() const {
  std::lock_guard lock(mu_);
  WriterStats s = stats_;
  s.apply_backlog = static_cast<int64_t>(applying_.size());
  return s;
}

void Writer::set_fault_for_testing(bool fail) {
  std::lock_guard lock(mu_);
  testing_.fault = fail;
}

void Writer::pause_applier_for_testing(bool pause) {
  {
    std::lock_guard lock(mu_);
    testing_.apply_paused = pause;
  }
  apply_wake_.notify_all();
}

void Writer::pause_journal_for_testing(bool pause) {
  {
    std::lock_guard lock(mu_);
    testing_.journal_paused = pause;
  }
  journal_wake_.notify_all();
}

void Writer::settle_status(Stage stage, const Status& s, int64_t now_us) {
  StageStatus& st = stage == Stage::journal ? journal_ : apply_;
  if (st.state == StageState::stopped) return;  // a loop's late turn: the journal has left
  if (!s.ok()) {
    st = {StageState::failing, now_us + retry_us};
  } else if (st.failing()) {
    st.state = StageState::running;
    recovered_.notify_all();
  }
}

void Writer::probe(Stage stage) {
  Status s;
  if (fault()) {
    s = unavailable("injected write failure");
  } else if (stage == Stage::journal) {
    s = log_->probe(next_seq_);
  } else if (s = database_.exec("BEGIN IMMEDIATE"); s.ok()) {
    s = finish(database_, database_.exec("UPDATE writer_probe SET at = at + 1 WHERE id = 1"));
  }
  const int64_t now_us = clock_->monotonic_micros();
  std::lock_guard lock(mu_);
  settle_status(stage, s, now_us);
}

void Writer::wait_while_failing_for_testing() {
  std::unique_lock lock(mu_);
  recovered_.wait(lock, [&] { return !journal_.failing() && !apply_.failing(); });
}

bool Writer::fault() const {
  std::lock_guard lock(mu_);
  return testing_.fault;
}

void Writer::run_journal() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (journal_.failing()) {
      wait_until(*clock_, journal_wake_, lock, journal_.retry_at_us, [&] { return stopping_; });
    } else {
      // A loop's turn that failed wakes this thread to take over the retries and probes.
      journal_wake_.wait(lock, [&] {
        return stopping_ || (!testing_.journal_paused &&
                             (journal_.failing() || maintenance_asked_ ||
                              (!queue_.empty() && applying_.size() < apply_backlog_ops_max)));
      });
    }
    const bool failing = journal_.failing();
    if (stopping_ && (queue_.empty() || failing)) break;
    const bool probing = failing && queue_.empty();
    maintenance_asked_ = false;
    lock.unlock();
    Acks acks;
    {
      std::lock_guard journal(journal_mu_);
      if (probing) {
        probe(Stage::journal);
      } else {
        journal_next_batch(acks);
        if (maintenance_due()) maintain_journal();
      }
    }
    for (auto& done : acks) done(Status{});
    lock.lock();
  }
  // Stopping: what the journal could not take gets its answer now.
  journal_.state = StageState::stopped;
  Batch rest;
  rest.swap(queue_);
  lock.unlock();
  apply_wake_.notify_all();
  for (auto& q : rest) {
    if (!q.acknowledged && q.op.done) q.op.done(unavailable("the store is closing"));
  }
}

void Writer::run_apply() {
  Batch batch;  // empty between batches; its capacity is kept
  std::unique_lock lock(mu_);
  for (;;) {
    const auto journal_stopped = [&] { return journal_.state == StageState::stopped; };
    if (apply_.failing()) {
      wait_until(*clock_, apply_wake_, lock, apply_.retry_at_us, journal_stopped);
    } else {
      apply_wake_.wait(lock, [&] {
        return journal_stopped() || (!testing_.apply_paused && !applying_.empty());
      });
      // Linger for a batch worth a commit, unless someone waits for this one.
      const int64_t linger_end_us = clock_->monotonic_micros() + apply_linger_ms * micros_per_milli;
      wait_until(*clock_, apply_wake_, lock, linger_end_us, [&] {
        return journal_stopped() || testing_.apply_paused || waiting_in_apply_ > 0 ||
               applying_.size() >= apply_batch_ops_min;
      });
    }
    const bool paused = testing_.apply_paused;
    if (journal_stopped() && (applying_.empty() || apply_.failing() || paused)) break;
    if (paused) continue;
    while (!applying_.empty() && batch.size() < apply_batch_ops_max) {
      if (!journaled(applying_.front().op)) --waiting_in_apply_;
      batch.push_back(std::move(applying_.front()));
      applying_.pop_front();
    }
    lock.unlock();
    journal_wake_.notify_one();  // room in the backlog
    if (batch.empty()) {
      probe(Stage::apply);
      lock.lock();
      continue;
    }
    Acks unused;  // the applier answers its ops itself
    process(Stage::apply, batch, unused);
    lock.lock();
    while (!batch.empty()) {
      if (!journaled(batch.back().op)) ++waiting_in_apply_;
      applying_.push_front(std::move(batch.back()));
      batch.pop_back();
    }
  }
  // Stopping (or failing at the end): unjournaled ops get their answer; journaled records
  // stay in the oplog, and the next open applies them.
  Batch rest;
  rest.swap(applying_);
  waiting_in_apply_ = 0;
  lock.unlock();
  for (auto& q : rest) {
    if (!q.acknowledged && q.op.done) q.op.done(unavailable("the store is closing"));
  }
}

Status Writer::commit_journal(Batch& batch, size_t& poisoned) {
  poisoned = batch.size();
  if (std::none_of(batch.begin(), batch.end(), [](const Queued& q) { return journaled(q.op); })) {
    return {};  // reads and admin writes only: the applier's transaction is theirs
  }
  // Before anything is written: a frame in the log is a commit that happened.
  if (fault()) return unavailable("injected write failure");
  // Nothing here depends on one op more than another: a failure is the disk's, so the
  // whole batch is retried (with the same numbers, written over what failed).
  int64_t seq = next_seq_;
  for (auto& q : batch) {
    for (const auto& r : q.op.records) {
      log_->add(seq, r);
      q.last_seq = seq++;
    }
  }
  // Settlements and state changes only finish what was admitted: when the disk is full
  // they may use the log's reserve, admissions may not (they are refused instead).
  const bool may_use_reserve = std::none_of(batch.begin(), batch.end(), [](const Queued& q) {
    return q.op.kind == WriteOp::Kind::admission;
  });
  Status s = log_->commit(may_use_reserve);
  if (s.ok()) next_seq_ = seq;
  return s;
}

int64_t Writer::applied_seq() const {
  std::lock_guard lock(mu_);
  return applied_seq_;
}

bool Writer::maintenance_due() { return log_->trim_due(applied_seq()) || log_->spare_due(); }

void Writer::maintain_journal() {
  log_->trim(applied_seq());  // a failure costs nothing but space: tried again when next due
  // On failure the next segment is created when it is needed, as without a spare.
  if (log_->spare_due()) (void)log_->prepare_spare();
}

bool Writer::keeping_up() {
  std::lock_guard lock(mu_);
  return applying_.size() < apply_batch_ops_min;
}

Status Writer::commit_apply(Batch& batch, size_t& poisoned) {
  poisoned = batch.size();
  for (auto& q : batch) q.applied = false;
  if (Status s = database_.exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  auto fail = [&](Status s, size_t op) {
    if (!is_transient(database_.last_code())) poisoned = op;
    (void)database_.exec("ROLLBACK");
    return s;
  };
  writes::Coalescer records;
  int64_t last_seq = 0;
  size_t since_yield = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& q = batch[i];
    for (const auto& r : q.op.records) {
      if (Status s = records.add(database_, r, i); !s.ok()) return fail(s, records.failed_op());
      // The scheduler lets a running thread finish its slice (milliseconds) before a woken event
      // loop gets the core: while the applier keeps up, it yields every few hundred
      // microseconds of work, which keeps its batches out of the request path's tail
      // latency (and costs nothing when no other thread waits). Once work piles up it
      // stops yielding: a backlog at apply_backlog_ops_max would stop the request path.
      if (++since_yield == apply_records_per_yield) {
        since_yield = 0;
        if (keeping_up()) std::this_thread::yield();
      }
    }
    if (q.op.apply) {
      // A read or an admin write sees every record before it.
      if (Status s = records.flush(database_); !s.ok()) return fail(s, records.failed_op());
      if (Status s = q.op.apply(database_); !s.ok()) return fail(s, i);
    }
    q.applied = true;
    if (journaled(q.op)) last_seq = q.last_seq;
  }
  if (Status s = records.flush(database_); !s.ok()) return fail(s, records.failed_op());
  Status s = last_seq > 0 ? oplog::set_applied(database_, last_seq) : Status{};
  if (s.ok() && fault()) s = unavailable("injected write failure");
  return finish(database_, s);
}

void Writer::process(Stage stage, Batch& batch, Acks& acks) {
  for (;;) {
    size_t poisoned = 0;
    const Status s =
        stage == Stage::journal ? commit_journal(batch, poisoned) : commit_apply(batch, poisoned);
    if (s.ok()) break;
    if (poisoned < batch.size()) {
      // One op is wrong, not the disk: it alone fails; the rest is tried again at once.
      auto bad = std::move(batch[poisoned]);
      batch.erase(batch.begin() + static_cast<std::ptrdiff_t>(poisoned));
      if (journaled(bad.op) && stage == Stage::apply) {
        std::fprintf(stderr, "cairva: oplog record %lld not applied: %s\n",
                     static_cast<long long>(bad.last_seq), s.error().message.c_str());
      }
      if (!bad.acknowledged && bad.op.done) {
        bad.op.done(make_error(ErrorCode::internal_error, s.error().message));
      }
      if (batch.empty()) return;
      continue;
    }
    fail_batch(stage, batch, s);
    return;
  }
  if (stage == Stage::journal) {
    // Journaled ops are durable now: acknowledged (by the caller), applied later in this order.
    int64_t written = 0;
    acks.reserve(acks.size() + batch.size());  // one allocation, not one per doubling
    for (auto& q : batch) {
      if (!journaled(q.op)) continue;
      ++written;
      if (!q.acknowledged && q.op.done) acks.push_back(std::move(q.op.done));
      q.op.done = nullptr;
      q.acknowledged = true;
    }
    bool wake_applier;
    {
      std::lock_guard lock(mu_);
      if (written > 0) {
        ++stats_.commits;
        stats_.rows += written;
        stats_.max_batch = std::max(stats_.max_batch, written);
      }
      settle_status(Stage::journal, Status{}, 0);
      // Only what ends the applier's wait or linger wakes it: a wake-up per journal commit
      // would cost it as much as the commit.
      wake_applier = applying_.empty();
      for (auto& q : batch) {
        if (!journaled(q.op)) ++waiting_in_apply_;
        applying_.push_back(std::move(q));
      }
      wake_applier =
          wake_applier || waiting_in_apply_ > 0 || applying_.size() >= apply_batch_ops_min;
    }
    batch.clear();
    if (wake_applier) apply_wake_.notify_one();
    if (written > 0 && on_commit_) on_commit_(written);
    return;
  }
  int64_t last_seq = 0;
  for (const auto& q : batch) {
    if (journaled(q.op)) last_seq = q.last_seq;
  }
  {
    std::lock_guard lock(mu_);
    settle_status(Stage::apply, Status{}, 0);
    applied_seq_ = std::max(applied_seq_, last_seq);
  }
  for (auto& q : batch) {
    if (!q.acknowledged && q.op.done) q.op.done(Status{});
  }
  batch.clear();
}

void Writer::fail_batch(Stage stage, Batch& batch, const Status& why) {
  const int64_t now_us = clock_->monotonic_micros();
  {
    // Before any callback below runs: whoever it answers sees the retry already scheduled.
    std::lock_guard lock(mu_);
    ++stats_.failed_batches;
    settle_status(stage, why, now_us);
  }
  constexpr int64_t ack_wait_us = durable_ack_wait_ms_max * micros_per_milli;
  Batch keep;
  for (auto& q : batch) {
    if (stage == Stage::apply && journaled(q.op)) {
      keep.push_back(std::move(q));  // acknowledged and in the oplog: applied on a retry
      continue;
    }
    switch (q.op.kind) {
      case WriteOp::Kind::admission:
        if (q.op.done) q.op.done(unavailable(why.error().message));
        break;
      case WriteOp::Kind::read:
        // A read's result does not depend on the commit: it stands if its query ran.
        if (q.op.done) q.op.done(q.applied ? Status{} : why);
        break;
      case WriteOp::Kind::durable:
      case WriteOp::Kind::settlement:
        if (!q.acknowledged &&
            (q.op.kind == WriteOp::Kind::settlement || now_us - q.enqueued_us >= ack_wait_us)) {
          q.acknowledged = true;
          if (q.op.done) q.op.done(unavailable(why.error().message));
        }
        keep.push_back(std::move(q));
        break;
    }
  }
  batch.swap(keep);
}

}  // namespace cairva::store::sqlite
