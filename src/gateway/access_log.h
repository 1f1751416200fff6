// The access log: one line per public request (docs/operations.md "Logs"), as text
// (key=value) or JSON (one object per line), to stdout (journald) or a file reopened on
// SIGHUP for rotation.
//
// Lines are formatted on the event loop and appended to one bounded buffer; a writer
// thread writes the buffer every access_log_flush_interval (sooner when it fills) and on
// exit, so an event loop never waits for the disk or a slow pipe, and a process killed
// with SIGKILL loses at most the lines of that last interval. Past
// access_log_buffer_bytes_max (a disk or journald that stalls) lines are dropped and
// counted (cairva_access_log_dropped_lines_total), never queued without bound.
//
// A line never holds a secret: no header, no query string, no body; every byte of a field
// outside printable ASCII (and the quote and backslash) is escaped, so a client cannot
// forge a line.
//
// Thread safety: write() and reopen() from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "base/result.h"
#include "base/time.h"
#include "core/types.h"

namespace cairva::gateway {

// The longest a line waits in the buffer before the writer writes it.
inline constexpr auto access_log_flush_interval = std::chrono::milliseconds(200);
// Lines waiting at most (bytes); at half of it the writer is woken early.
inline constexpr size_t access_log_buffer_bytes_max = size_t{8} << 20;
// A client-chosen field (path, model) is cut to this many bytes before escaping: a line
// stays short whatever a client sends.
inline constexpr size_t access_log_field_bytes_max = 256;

enum class AccessLogFormat : uint8_t { text, json };

// What one line says. Views: they need to live only through AccessLog::write().
struct AccessRecord {
  UnixMicros time = 0;      // when the response was done (wall clock, UTC)
  std::string_view client;  // the peer's address
  std::string_view method;
  std::string_view path;  // the request target without its query string
  int status = 0;         // 0: no response was sent
  std::string_view allocation_id;
  std::string_view request_id;
  std::string_view provider_request_id;
  std::string_view model;
  core::Tokens booked;       // tokens booked by this request
  std::string_view outcome;  // "booked", "usage_pending", "failed", or an error code
  int64_t latency_us = 0;
};

// Appends `r` as one line, newline included. Empty fields are "-" (text) or null (JSON).
void format_access_line(const AccessRecord& r, AccessLogFormat format, std::string& out);

class AccessLog {
 public:
  // `path` empty: standard output. A file is opened for appending (created owner-only).
  static Result<std::unique_ptr<AccessLog>> open(const std::string& path, AccessLogFormat format);
  // Writes what is buffered, then stops the writer.
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  void write(const AccessRecord& r);
  // Rotation (SIGHUP): the writer reopens the file by its path before its next write, so
  // that after logrotate renamed it the lines go to a new file. Nothing for stdout.
  void reopen();
  // Lines dropped because the buffer was full.
  int64_t dropped() const;

 private:
  AccessLog(std::string path, int fd, AccessLogFormat format);
  void run();
  void write_out(const std::string& bytes);
  void reopen_now();

  const std::string path_;  // empty: stdout
  const AccessLogFormat format_;
  int fd_;  // the writer thread's
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::string buffer_;         // GUARDED_BY(mu_)
  bool reopen_asked_ = false;  // GUARDED_BY(mu_)
  bool stop_ = false;          // GUARDED_BY(mu_)
  int64_t dropped_ = 0;        // GUARDED_BY(mu_)
  std::thread writer_;
};

}  // namespace cairva::gateway
