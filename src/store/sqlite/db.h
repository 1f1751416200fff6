// A thin RAII layer over the SQLite C API: one connection, prepared statements with
// positional binds, errors as Result values (ErrorCode::store_unavailable).
//
// Thread safety: none; each connection is used by one thread at a time (the writer's by
// the writer thread, the reader's under its mutex).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/result.h"

namespace cairva::store::sqlite {

class Db;

class Stmt {
 public:
  // `cached`: the statement belongs to the connection's cache and is reset, not finalized.
  Stmt(Db& db, sqlite3_stmt* s, bool cached = false) : db_(&db), s_(s), cached_(cached) {}
  Stmt(Stmt&& o) noexcept : db_(o.db_), s_(o.s_), next_(o.next_), cached_(o.cached_) {
    o.s_ = nullptr;
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  Stmt& text(std::string_view v);
  // Binds without copying (the applier's hot path: SQLite copies every text otherwise).
  // REQUIRES: `v`'s bytes stay valid until this Stmt is gone (it resets the statement).
  Stmt& text_ref(std::string_view v);
  Stmt& i64(int64_t v);
  Stmt& opt_text(const std::optional<std::string>& v);
  Stmt& opt_i64(std::optional<int64_t> v);
  Stmt& null();

  // True while a row is available; false when done; Error on failure.
  Result<bool> step();
  // Runs to completion (statements without rows).
  Status run();

  int col_count() const { return sqlite3_column_count(s_); }
  std::string col_text(int i) const;
  int64_t col_i64(int i) const;
  bool col_null(int i) const;

 private:
  Db* db_;
  sqlite3_stmt* s_;
  int next_ = 1;
  bool cached_ = false;
};

class Db {
 public:
  static Result<Db> open(const std::string& path, bool read_only);
  Db(Db&& o) noexcept : h_(o.h_), last_code_(o.last_code_), cache_(std::move(o.cache_)) {
    o.h_ = nullptr;
  }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db();

  Result<Stmt> prepare(std::string_view sql);
  // The hot path's statements, prepared once per connection. `sql` must be a string
  // literal (the cache is keyed by its address); one use at a time per statement.
  Result<Stmt> cached(const char* sql);
  Status exec(const std::string& sql);  // one or more statements, no binds
  // The (extended) result code of the last failure, to tell transient I/O from bugs.
  int last_code() const { return last_code_; }
  Error error(std::string_view what);  // records the current code, builds the Error

 private:
  explicit Db(sqlite3* h) : h_(h) {}
  sqlite3* h_;
  int last_code_ = SQLITE_OK;
  std::unordered_map<const char*, sqlite3_stmt*> cache_;
};

// True for failures the disk may recover from (full, I/O error, read-only, busy).
bool is_transient(int sqlite_code);

}  // namespace cairva::store::sqlite
