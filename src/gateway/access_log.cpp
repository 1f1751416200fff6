#include "gateway/access_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "base/thread_name.h"
#include "metrics/metrics.h"

namespace cairva::gateway {
namespace {

// Owner read and write only: a line names clients' addresses and allocations.
constexpr mode_t access_log_file_mode = 0600;

// Bytes a text value may hold bare: printable ASCII but the space, the quote, the backslash
// and '='. A table: the line is formatted on the event loop, per request.
constexpr std::array<bool, 256> plain_bytes = [] {
  std::array<bool, 256> t{};
  for (int c = 0x21; c < 0x7f; ++c) t[static_cast<size_t>(c)] = c != '"' && c != '\\' && c != '=';
  return t;
}();

bool plain(unsigned char c) { return plain_bytes[c]; }

void hex(std::string& out, std::string_view prefix, unsigned char c) {
  static constexpr char digits[] = "0123456789abcdef";
  out.append(prefix);
  out.push_back(digits[c >> 4]);
  out.push_back(digits[c & 0xf]);
}

// `v` with '"' and '\\' escaped by a backslash, and every byte outside printable ASCII as
// `hex_prefix` and two hex digits (the text format's \xXX, JSON's \u00XX).
void escaped(std::string& out, std::string_view v, std::string_view hex_prefix) {
  for (const char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (c < 0x20 || c >= 0x7f) {
      hex(out, hex_prefix, c);
    } else {
      out.push_back(ch);
    }
  }
}

// A text field: bare when every byte is plain, else quoted with \" \\ and \xNN escapes.
void text_field(std::string& out, std::string_view key, std::string_view v, bool bounded) {
  out.push_back(' ');
  out.append(key).push_back('=');
  if (v.empty()) {
    out.push_back('-');
    return;
  }
  if (bounded && v.size() > access_log_field_bytes_max) v = v.substr(0, access_log_field_bytes_max);
  bool bare = true;
  for (const char c : v) bare = bare && plain(static_cast<unsigned char>(c));
  if (bare) {
    out.append(v);
    return;
  }
  out.push_back('"');
  escaped(out, v, "\\x");
  out.push_back('"');
}

// A JSON string member (null when empty); every byte outside printable ASCII becomes a
// \u00XX escape, so the line is valid JSON whatever bytes a client sent.
void json_field(std::string& out, std::string_view key, std::string_view v, bool bounded) {
  out.append(",\"").append(key).append("\":");
  if (v.empty()) {
    out.append("null");
    return;
  }
  if (bounded && v.size() > access_log_field_bytes_max) v = v.substr(0, access_log_field_bytes_max);
  out.push_back('"');
  bool bare = true;
  for (const char c : v)
    bare = bare && (plain(static_cast<unsigned char>(c)) || c == ' ' || c == '=');
  if (bare) {
    out.append(v).push_back('"');
    return;
  }
  escaped(out, v, "\\u00");
  out.push_back('"');
}

void append_int(std::string& out, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void number(std::string& out, std::string_view key, int64_t v, bool json) {
  if (json) {
    out.append(",\"").append(key).append("\":");
  } else {
    out.push_back(' ');
    out.append(key).push_back('=');
  }
  append_int(out, v);
}

// "12.345": milliseconds with three decimals.
void latency(std::string& out, int64_t us, bool json) {
  out.append(json ? ",\"latency_ms\":" : " latency_ms=");
  append_int(out, us / micros_per_milli);
  const auto frac = static_cast<int>(us % micros_per_milli);
  const char digits[4] = {'.', static_cast<char>('0' + frac / 100),
                          static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10)};
  out.append(digits, sizeof digits);
}

// RFC 3339 UTC with milliseconds (base/time.h format_rfc3339_millis), the whole second's
// text kept per thread: it changes once a second, the line is written per request.
void append_time(std::string& out, UnixMicros t) {
  thread_local int64_t cached_second = -1;
  thread_local std::string cached;  // "2026-11-30T19:12:08"
  // Floor division: a time before 1970 rounds down, as its text does.
  const int64_t ms = t >= 0 ? t / micros_per_milli : (t - micros_per_milli + 1) / micros_per_milli;
  const int64_t second =
      ms >= 0 ? ms / millis_per_second : (ms - millis_per_second + 1) / millis_per_second;
  if (second != cached_second || cached.empty()) {
    cached = format_rfc3339(second * micros_per_second);
    cached.pop_back();  // its 'Z'
    cached_second = second;
  }
  out.append(cached);
  const auto frac = static_cast<int>(ms - second * millis_per_second);
  const char digits[5] = {'.', static_cast<char>('0' + frac / 100),
                          static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10), 'Z'};
  out.append(digits, sizeof digits);
}

}  // namespace

void format_access_line(const AccessRecord& r, AccessLogFormat format, std::string& out) {
  const bool json = format == AccessLogFormat::json;
  if (json) out.append("{\"time\":\"");
  append_time(out, r.time);
  if (json) out.push_back('"');
  auto field = [&](std::string_view key, std::string_view v, bool bounded) {
    json ? json_field(out, key, v, bounded) : text_field(out, key, v, bounded);
  };
  field("client", r.client, false);
  field("method", r.method, true);
  field("path", r.path, true);
  number(out, "status", r.status, json);
  field("allocation_id", r.allocation_id, false);
  field("request_id", r.request_id, false);
  field("provider_request_id", r.provider_request_id, true);
  field("model", r.model, true);
  number(out, "input_tokens", r.booked.input, json);
  number(out, "output_tokens", r.booked.output, json);
  field("outcome", r.outcome == "-" ? std::string_view{} : r.outcome, false);
  latency(out, r.latency_us, json);
  out.append(json ? "}\n" : "\n");
}

Result<std::unique_ptr<AccessLog>> AccessLog::open(const std::string& path,
                                                   AccessLogFormat format) {
  int fd = STDOUT_FILENO;
  if (!path.empty()) {
    fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, access_log_file_mode);
    if (fd < 0) {
      return make_error(ErrorCode::invalid_request, "server.access_log_path: cannot open " + path +
                                                        ": " +
                                                        std::generic_category().message(errno));
    }
  }
  return std::unique_ptr<AccessLog>(new AccessLog(path, fd, format));
}

AccessLog::AccessLog(std::string path, int fd, AccessLogFormat format)
    : path_(std::move(path)), format_(format), fd_(fd), writer_([this] {
        name_this_thread("cairva-log");
        run();
      }) {}

AccessLog::~AccessLog() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  writer_.join();
  if (!path_.empty()) ::close(fd_);
}

void AccessLog::write(const AccessRecord& r) {
  // Formatted outside the lock, into this thread's own buffer (no allocation once grown).
  thread_local std::string line;
  line.clear();
  format_access_line(r, format_, line);
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (buffer_.size() + line.size() > access_log_buffer_bytes_max) {
      ++dropped_;
      metrics::registry().count_access_log_dropped();
      return;
    }
    buffer_.append(line);
    wake = buffer_.size() >= access_log_buffer_bytes_max / 2;
  }
  if (wake) wake_.notify_one();
}

void AccessLog::reopen() {
  {
    std::lock_guard lock(mu_);
    reopen_asked_ = true;
  }
  wake_.notify_one();
}

int64_t AccessLog::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

void AccessLog::run() {
  std::string writing;
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait_for(lock, access_log_flush_interval, [this] {
      return stop_ || reopen_asked_ || buffer_.size() >= access_log_buffer_bytes_max / 2;
    });
    const bool reopen = reopen_asked_;
    const bool stop = stop_;
    reopen_asked_ = false;
    writing.swap(buffer_);
    lock.unlock();
    // The lines buffered before the signal go to the file they were logged for.
    write_out(writing);
    writing.clear();
    if (reopen) reopen_now();
    lock.lock();
    if (stop && buffer_.empty()) return;
  }
}

void AccessLog::write_out(const std::string& bytes) {
  size_t at = 0;
  while (at < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + at, bytes.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // A full disk or a closed pipe: these lines are lost, later ones are tried again.
      std::fprintf(stderr, "cairva: access log %s: write failed: %s\n",
                   path_.empty() ? "(stdout)" : path_.c_str(),
                   std::generic_category().message(errno).c_str());
      return;
    }
    at += static_cast<size_t>(n);
  }
}

void AccessLog::reopen_now() {
  if (path_.empty()) return;  // stdout: journald rotates its own
  const int fd =
      ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, access_log_file_mode);
  if (fd < 0) {
    std::fprintf(
        stderr,
        "cairva: access log %s: cannot reopen (%s): still writing to the file open before\n",
        path_.c_str(), std::generic_category().message(errno).c_str());
    return;
  }
  ::close(fd_);
  fd_ = fd;
  std::fprintf(stderr, "cairva: access log %s reopened\n", path_.c_str());
}

}  // namespace cairva::gateway
