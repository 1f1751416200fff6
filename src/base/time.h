// Time as integers: wall time in microseconds since the Unix epoch (stored and shown),
// and a Clock interface so that tests inject a manual clock and never sleep.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cairva {

// Microseconds since 1970-01-01T00:00:00Z.
using UnixMicros = int64_t;

inline constexpr int64_t micros_per_second = 1'000'000;

// Thread-safe clock. `now()` is wall time (what is stored and shown);
// `monotonic()` is for measuring intervals.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual UnixMicros now() const = 0;
  virtual int64_t monotonic_micros() const = 0;
};

class SystemClock final : public Clock {
 public:
  UnixMicros now() const override;
  int64_t monotonic_micros() const override;
};

// A clock that moves only when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(UnixMicros start) : now_(start) {}
  UnixMicros now() const override { return now_.load(); }
  int64_t monotonic_micros() const override { return now_.load(); }
  void advance_micros(int64_t d) { now_.fetch_add(d); }
  void advance_seconds(int64_t s) { now_.fetch_add(s * micros_per_second); }
  void set(UnixMicros t) { now_.store(t); }

 private:
  std::atomic<UnixMicros> now_;
};

// "2026-11-30T19:12:08.123456Z" (microseconds shown only when non-zero).
std::string format_rfc3339(UnixMicros t);
// Accepts RFC 3339 with 'Z' or a numeric offset, optional fraction (up to µs).
std::optional<UnixMicros> parse_rfc3339(std::string_view s);

}  // namespace cairva
