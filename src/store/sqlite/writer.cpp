#include "store/sqlite/writer.h"

#include <future>
#include <vector>

#include "base/assert.h"
#include "base/thread_name.h"
#include "store/sqlite/limits.h"

namespace cairva::store::sqlite {
namespace {

Error unavailable(const std::string& why) {
  return make_error(ErrorCode::store_unavailable, "store unavailable: " + why);
}

}  // namespace

Writer::Writer(Db db, std::function<void(int64_t)> on_commit)
    : db_(std::move(db)), on_commit_(std::move(on_commit)), thread_([this] {
        name_this_thread("cairva-store");
        run();
      }) {}

Writer::~Writer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool Writer::try_enqueue(WriteOp op) {
  CAIRVA_ASSERT(op.kind == WriteOp::Kind::admission);
  {
    std::lock_guard lock(mu_);
    if (failing_ || stopping_ || queue_.size() >= writer_queue_ops_max) return false;
    queue_.push_back({std::move(op), std::chrono::steady_clock::now()});
  }
  wake_.notify_one();
  return true;
}

void Writer::enqueue(WriteOp op) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back({std::move(op), std::chrono::steady_clock::now()});
  }
  wake_.notify_one();
}

void Writer::flush() {
  std::promise<void> p;
  enqueue(WriteOp{WriteOp::Kind::read, [](Db&) { return Status{}; },
                  [&p](const Status&) { p.set_value(); }});
  p.get_future().wait();
}

bool Writer::failing() const {
  std::lock_guard lock(mu_);
  return failing_;
}

WriterStats Writer::stats() const {
  std::lock_guard lock(mu_);
  WriterStats s = stats_;
  s.queue_depth = static_cast<int64_t>(queue_.size());
  return s;
}

void Writer::set_fault_for_testing(bool fail) {
  std::lock_guard lock(mu_);
  fault_ = fail;
}

void Writer::run() {
  const auto retry = std::chrono::milliseconds(writer_retry_ms);
  std::unique_lock lock(mu_);
  for (;;) {
    if (failing_) {
      wake_.wait_for(lock, retry, [&] { return stopping_; });
    } else {
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    }
    if (stopping_ && (queue_.empty() || failing_)) break;
    std::deque<Queued> batch;
    while (!queue_.empty() && batch.size() < commit_batch_ops_max) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    lock.unlock();
    if (batch.empty()) {
      // Failing with nothing queued: probe the disk so admissions resume by themselves.
      const Status s = probe();
      lock.lock();
      if (s.ok()) failing_ = false;
      continue;
    }
    process(batch);  // leaves in `batch` the durable ops to retry
    lock.lock();
    while (!batch.empty()) {
      queue_.push_front(std::move(batch.back()));
      batch.pop_back();
    }
  }
  // Stopping: whatever could not be written gets its answer now.
  std::deque<Queued> rest;
  rest.swap(queue_);
  lock.unlock();
  for (auto& q : rest) {
    if (!q.acknowledged && q.op.done) q.op.done(unavailable("the store is closing"));
  }
}

Status Writer::probe() {
  if (Status s = db_.exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  auto st = db_.prepare("UPDATE writer_probe SET at = at + 1 WHERE id = 1");
  Status s = st.ok() ? st->run() : Status(st.error());
  bool fault;
  {
    std::lock_guard lock(mu_);
    fault = fault_;
  }
  if (s.ok() && fault) s = unavailable("injected write failure");
  if (s.ok()) s = db_.exec("COMMIT");
  if (!s.ok()) (void)db_.exec("ROLLBACK");
  return s;
}

// One transaction over `batch`. `poisoned` is the index of an op whose own statement
// failed for a non-transient reason (a bug or a constraint), or batch.size().
Status Writer::commit_batch(std::deque<Queued>& batch, size_t& poisoned) {
  poisoned = batch.size();
  for (auto& q : batch) q.applied = false;
  if (Status s = db_.exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& q = batch[i];
    if (!q.op.apply) {
      q.applied = true;
      continue;
    }
    Status s = q.op.apply(db_);
    q.applied = s.ok();
    if (!s.ok()) {
      if (!is_transient(db_.last_code())) poisoned = i;
      (void)db_.exec("ROLLBACK");
      return s;
    }
  }
  bool fault;
  {
    std::lock_guard lock(mu_);
    fault = fault_;
  }
  if (fault) {
    (void)db_.exec("ROLLBACK");
    return unavailable("injected write failure");
  }
  if (Status s = db_.exec("COMMIT"); !s.ok()) {
    (void)db_.exec("ROLLBACK");
    return s;
  }
  return {};
}

void Writer::process(std::deque<Queued>& batch) {
  for (;;) {
    size_t poisoned = 0;
    const Status s = commit_batch(batch, poisoned);
    if (s.ok()) {
      {
        std::lock_guard lock(mu_);
        ++stats_.commits;
        stats_.rows += static_cast<int64_t>(batch.size());
        stats_.max_batch = std::max<int64_t>(stats_.max_batch, static_cast<int64_t>(batch.size()));
        failing_ = false;
      }
      if (on_commit_) on_commit_(static_cast<int64_t>(batch.size()));
      for (auto& q : batch) {
        if (!q.acknowledged && q.op.done) q.op.done(Status{});
      }
      batch.clear();
      return;
    }
    if (poisoned < batch.size()) {
      // One op is wrong, not the disk: it alone fails; the rest is tried again at once.
      auto bad = std::move(batch[poisoned]);
      batch.erase(batch.begin() + static_cast<std::ptrdiff_t>(poisoned));
      if (!bad.acknowledged && bad.op.done) {
        bad.op.done(make_error(ErrorCode::internal_error, s.error().message));
      }
      if (batch.empty()) return;
      continue;
    }
    // The disk failed: admissions and reads get their answer, durable writes wait.
    {
      std::lock_guard lock(mu_);
      ++stats_.failed_batches;
      failing_ = true;
    }
    const auto now = std::chrono::steady_clock::now();
    const auto ack_wait = std::chrono::milliseconds(durable_ack_wait_ms_max);
    std::deque<Queued> keep;
    for (auto& q : batch) {
      switch (q.op.kind) {
        case WriteOp::Kind::admission:
          if (q.op.done) q.op.done(unavailable(s.error().message));
          break;
        case WriteOp::Kind::read:
          // A read's result does not depend on the commit: it stands if its query ran.
          if (q.op.done) q.op.done(q.applied ? Status{} : s);
          break;
        case WriteOp::Kind::durable:
          if (!q.acknowledged && now - q.enqueued >= ack_wait) {
            q.acknowledged = true;
            if (q.op.done) q.op.done(unavailable(s.error().message));
          }
          keep.push_back(std::move(q));
          break;
      }
    }
    batch.swap(keep);
    return;
  }
}

}  // namespace cairva::store::sqlite
