// BodyBudget: the memory request bodies may take in the whole process. A request's body
// takes its bytes from the budget as it is read (all of an announced Content-Length at once,
// since the gateway reserves it to parse in place; a chunked body as its buffer grows) and
// gives them back when the request is done. Past the budget a new body is refused (503)
// instead of growing the process until the kernel kills it.
//
// Thread safety: BodyBudget is shared by every event loop (atomic); a BodyLease belongs to
// one request.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cairva::http {

class BodyBudget {
 public:
  explicit BodyBudget(size_t bytes_max) : bytes_max_(bytes_max) {}
  BodyBudget(const BodyBudget&) = delete;
  BodyBudget& operator=(const BodyBudget&) = delete;

  // Takes `bytes` when they fit; false (and nothing taken) when they do not.
  bool try_take(size_t bytes);
  void give_back(size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  size_t used() const { return used_.load(std::memory_order_relaxed); }
  size_t bytes_max() const { return bytes_max_; }

 private:
  const size_t bytes_max_;
  std::atomic<size_t> used_{0};
};

// The bytes one request's body holds in a BodyBudget; given back when the lease ends.
class BodyLease {
 public:
  explicit BodyLease(BodyBudget* budget) : budget_(budget) {}
  ~BodyLease() { release(); }
  BodyLease(const BodyLease&) = delete;
  BodyLease& operator=(const BodyLease&) = delete;

  // Holds `bytes` in all (never less than now). False, and the lease unchanged, when the
  // budget cannot give the difference. Without a budget it always succeeds.
  bool grow_to(size_t bytes);
  void release();
  size_t bytes() const { return bytes_; }

 private:
  BodyBudget* budget_;
  size_t bytes_ = 0;
};

}  // namespace cairva::http
