// One process per SQLite file: an exclusive flock on "<db path>.lock", held for the
// store's lifetime (the in-memory state is authoritative only while one process owns
// the file). The lock file records the owner's pid for the refusal message.
#pragma once

#include <memory>
#include <string>

#include "base/result.h"

namespace cairva::store::sqlite {

class FileLock {
 public:
  // Fails with store_unavailable "store PATH is in use by another cairva process (pid N)".
  static Result<std::unique_ptr<FileLock>> acquire(const std::string& db_path);
  // Does a process hold the lock now? (A read-only observer's question: it takes nothing.)
  static bool in_use(const std::string& db_path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace cairva::store::sqlite
