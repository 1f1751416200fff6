#include "base/time.h"

#include <chrono>
#include <cstdio>

namespace cairva {

UnixMicros SystemClock::now() const {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

int64_t SystemClock::monotonic_micros() const {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

uint64_t ManualClock::watch(const std::function<void()>& moved) const {
  std::lock_guard lock(watchers_mu_);
  const uint64_t id = next_watch_id_++;
  watchers_.emplace(id, moved);
  return id;
}

// After unwatch() returns, its function is not running and never runs again: moves call
// the watchers under the same mutex.
void ManualClock::unwatch(uint64_t id) const {
  std::lock_guard lock(watchers_mu_);
  watchers_.erase(id);
}

void ManualClock::moved() const {
  std::lock_guard lock(watchers_mu_);
  for (const auto& [id, f] : watchers_) f();
}

namespace {

// Howard Hinnant's days_from_civil / civil_from_days: proleptic Gregorian calendar.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void civil_from_days(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

bool digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  out = v;
  return true;
}

}  // namespace

std::string format_rfc3339(UnixMicros t) {
  int64_t secs = t / micros_per_second;
  int64_t frac = t % micros_per_second;
  if (frac < 0) {
    frac += micros_per_second;
    secs -= 1;
  }
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    days -= 1;
  }
  int64_t y;
  unsigned m, d;
  civil_from_days(days, y, m, d);
  char buf[48];
  if (frac == 0) {
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ",
                  static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600),
                  static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%06lldZ",
                  static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600),
                  static_cast<long long>(rem / 60 % 60), static_cast<long long>(rem % 60),
                  static_cast<long long>(frac));
  }
  return buf;
}

std::string format_rfc3339_millis(UnixMicros t) {
  // Floor divisions: a time before 1970 still shows its own second and millisecond.
  const int64_t ms = t >= 0 ? t / 1000 : (t - 999) / 1000;
  const int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  std::string out = format_rfc3339(secs * micros_per_second);
  char frac[24];  // 0..999, but the compiler cannot tell
  std::snprintf(frac, sizeof frac, ".%03lldZ", static_cast<long long>(ms - secs * 1000));
  out.pop_back();  // the whole second's 'Z'
  out += frac;
  return out;
}

std::optional<UnixMicros> parse_rfc3339(std::string_view s) {
  int Y, M, D, h, mi, se;
  if (!digits(s, 0, 4, Y) || s.size() < 20 || s[4] != '-' || !digits(s, 5, 2, M) || s[7] != '-' ||
      !digits(s, 8, 2, D) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      !digits(s, 11, 2, h) || s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' ||
      !digits(s, 17, 2, se)) {
    return std::nullopt;
  }
  if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || mi > 59 || se > 60) return std::nullopt;
  size_t pos = 19;
  int64_t frac = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int n = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (n < 6) {
        frac = frac * 10 + (s[pos] - '0');
        ++n;
      }
      ++pos;
    }
    if (n == 0) return std::nullopt;
    for (; n < 6; ++n) frac *= 10;
  }
  int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!digits(s, pos + 1, 2, oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !digits(s, pos + 4, 2, om)) {
      return std::nullopt;
    }
    offset_s = (int64_t{oh} * 3600 + int64_t{om} * 60) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  const int64_t days = days_from_civil(Y, static_cast<unsigned>(M), static_cast<unsigned>(D));
  const int64_t secs = days * 86400 + int64_t{h} * 3600 + int64_t{mi} * 60 + se - offset_s;
  return secs * micros_per_second + frac;
}

}  // namespace cairva
