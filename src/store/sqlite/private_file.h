// Files of the embedded store are the operator's alone: the database holds API key hashes,
// buyers' request metadata and the ledger, so none of its files may be readable by other
// users whatever the process's umask. Every file the store creates (the database, and
// through it SQLite's -wal and -shm, the operation log's segments, the lock file) is
// created with store_file_mode.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/result.h"

namespace cairva::store::sqlite {

// Owner read and write, nothing for group or others.
inline constexpr mode_t store_file_mode = 0600;

// ::open(path, flags | O_CLOEXEC); a file this call creates gets store_file_mode exactly (an
// fchmod after creation undoes any umask). Returns the descriptor, or -1 with errno set.
// `flags` must include O_CREAT.
int open_private(const std::string& path, int flags);

// Creates an empty `path` with store_file_mode when it does not exist. SQLite creates a
// database file with 0644 less the umask, and gives its -wal and -shm the database file's
// mode: a database created by this first is private along with both.
Status create_private_if_missing(const std::string& path);

}  // namespace cairva::store::sqlite
