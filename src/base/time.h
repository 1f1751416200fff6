// Time as integers: wall time in microseconds since the Unix epoch (stored and shown),
// and a Clock interface so that tests inject a manual clock and never sleep.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace cairva {

// Microseconds since 1970-01-01T00:00:00Z.
using UnixMicros = int64_t;

// Time units, named once for every layer.
inline constexpr int64_t micros_per_milli = 1'000;
inline constexpr int64_t millis_per_second = 1'000;
inline constexpr int64_t micros_per_second = millis_per_second * micros_per_milli;
inline constexpr int64_t micros_per_minute = 60 * micros_per_second;
inline constexpr int64_t micros_per_hour = 60 * micros_per_minute;
inline constexpr int64_t micros_per_day = 24 * micros_per_hour;
static_assert(micros_per_second == 1'000'000);

// Thread-safe clock. `now()` is wall time (what is stored and shown);
// `monotonic()` is for measuring intervals.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual UnixMicros now() const = 0;
  virtual int64_t monotonic_micros() const = 0;
  // A thread that waits for a deadline on this clock must hear when its time moves other
  // than by passing: a clock that jumps (ManualClock) calls `moved` after each move, until
  // unwatch(id). A real clock's time passes by itself, and it calls nothing. `moved` must
  // not call back into the clock.
  virtual uint64_t watch(const std::function<void()>& /*moved*/) const { return 0; }
  virtual void unwatch(uint64_t /*id*/) const {}
};

class SystemClock final : public Clock {
 public:
  UnixMicros now() const override;
  int64_t monotonic_micros() const override;
};

// A clock that moves only when told to; each move calls its watchers. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(UnixMicros start) : now_(start) {}
  UnixMicros now() const override { return now_.load(); }
  int64_t monotonic_micros() const override { return now_.load(); }
  void advance_micros(int64_t d) {
    now_.fetch_add(d);
    moved();
  }
  void advance_seconds(int64_t s) { advance_micros(s * micros_per_second); }
  void set(UnixMicros t) {
    now_.store(t);
    moved();
  }
  uint64_t watch(const std::function<void()>& moved) const override;
  void unwatch(uint64_t id) const override;

 private:
  void moved() const;

  std::atomic<UnixMicros> now_;
  mutable std::mutex watchers_mu_;
  mutable uint64_t next_watch_id_ = 1;                          // GUARDED_BY(watchers_mu_)
  mutable std::map<uint64_t, std::function<void()>> watchers_;  // GUARDED_BY(watchers_mu_)
};

// "2026-11-30T19:12:08.123456Z" (microseconds shown only when non-zero).
std::string format_rfc3339(UnixMicros t);
// "2026-11-30T19:12:08.123Z": always milliseconds (truncated), for log lines of one width.
std::string format_rfc3339_millis(UnixMicros t);
// Accepts RFC 3339 with 'Z' or a numeric offset, optional fraction (up to µs).
std::optional<UnixMicros> parse_rfc3339(std::string_view s);

}  // namespace cairva
