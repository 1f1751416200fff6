#include "wire/duration.h"

#include <charconv>

#include "base/time.h"

namespace cairva::wire {
namespace {

constexpr int64_t ms_per_minute = 60 * millis_per_second;
constexpr int64_t ms_per_hour = 60 * ms_per_minute;

}  // namespace

DurationText duration_text(int64_t ms) {
  DurationText out;
  char* at = out.chars_.data();
  char* const end = at + out.chars_.size();
  auto number = [&](int64_t v) { at = std::to_chars(at, end, v).ptr; };
  if (ms <= 0) {
    ms = 0;
  } else if (ms < millis_per_second) {
    number(ms);
    *at++ = 'm';
    *at++ = 's';
    out.size_ = static_cast<size_t>(at - out.chars_.data());
    return out;
  }
  const int64_t hours = ms / ms_per_hour;
  const int64_t minutes = ms % ms_per_hour / ms_per_minute;
  if (hours > 0) {
    number(hours);
    *at++ = 'h';
  }
  if (hours > 0 || minutes > 0) {
    number(minutes);
    *at++ = 'm';
  }
  number(ms % ms_per_minute / millis_per_second);
  if (int64_t fraction = ms % millis_per_second; fraction > 0) {
    *at++ = '.';
    // Three digits (5 ms is ".005"), then the trailing zeros dropped.
    for (int64_t unit = millis_per_second / 10; unit > 0 && fraction > 0; unit /= 10) {
      *at++ = static_cast<char>('0' + fraction / unit);
      fraction %= unit;
    }
  }
  *at++ = 's';
  out.size_ = static_cast<size_t>(at - out.chars_.data());
  return out;
}

}  // namespace cairva::wire
