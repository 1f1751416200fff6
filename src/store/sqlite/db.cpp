#include "store/sqlite/db.h"

#include <mutex>

#include "store/sqlite/limits.h"
#include "store/sqlite/private_file.h"

namespace cairva::store::sqlite {

Stmt::~Stmt() {
  if (s_ == nullptr) return;
  if (cached_) {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  } else {
    sqlite3_finalize(s_);
  }
}

// A default-constructed view has no data pointer, which SQLite would bind as NULL: text is
// never NULL here (opt_text and null() say so).
static const char* text_data(std::string_view v) { return v.data() != nullptr ? v.data() : ""; }

Stmt& Stmt::text(std::string_view v) {
  sqlite3_bind_text(s_, next_++, text_data(v), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::text_ref(std::string_view v) {
  sqlite3_bind_text(s_, next_++, text_data(v), static_cast<int>(v.size()), SQLITE_STATIC);
  return *this;
}
Stmt& Stmt::i64(int64_t v) {
  sqlite3_bind_int64(s_, next_++, v);
  return *this;
}
Stmt& Stmt::opt_text(const std::optional<std::string>& v) { return v ? text(*v) : null(); }
Stmt& Stmt::opt_i64(std::optional<int64_t> v) { return v ? i64(*v) : null(); }
Stmt& Stmt::null() {
  sqlite3_bind_null(s_, next_++);
  return *this;
}

Result<bool> Stmt::step() {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->error("step");
}

Status Stmt::run() {
  for (;;) {
    auto r = step();
    if (!r.ok()) return r.error();
    if (!*r) return {};
  }
}

std::string Stmt::col_text(int i) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, i));
  return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(s_, i));
}
int64_t Stmt::col_i64(int i) const { return sqlite3_column_int64(s_, i); }
bool Stmt::col_null(int i) const { return sqlite3_column_type(s_, i) == SQLITE_NULL; }

Result<Db> Db::open(const std::string& path, bool read_only) {
  // SQLite counts every allocation under one process-wide mutex unless told not to; the
  // journal and the applier threads would contend on it for each row. Must precede
  // SQLite's initialisation (a no-op error if something initialised it first).
  static std::once_flag configured;
  std::call_once(configured, [] { (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  if (!read_only) {
    if (Status s = create_private_if_missing(path); !s.ok()) return s.error();
  }
  sqlite3* h = nullptr;
  const int flags =
      (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
      SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &h, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg =
        "sqlite: cannot open " + path + ": " + (h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
    sqlite3_close(h);
    return make_error(ErrorCode::store_unavailable, std::move(msg));
  }
  sqlite3_extended_result_codes(h, 1);
  sqlite3_busy_timeout(h, sqlite_busy_timeout_ms);
  return Db(h);
}

Db::~Db() {
  for (auto& [sql, s] : cache_) sqlite3_finalize(s);
  sqlite3_close(h_);
}

Result<Stmt> Db::cached(const char* sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(h_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) {
      return error("prepare");
    }
    it = cache_.emplace(sql, s).first;
  }
  return Stmt(*this, it->second, true);
}

Result<Stmt> Db::prepare(std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v2(h_, sql.data(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK) return error("prepare");
  return Stmt(*this, s);
}

Status Db::exec(const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(h_, sql.c_str(), nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return {};
  last_code_ = sqlite3_extended_errcode(h_);
  std::string msg = std::string("sqlite: ") + (err ? err : sqlite3_errstr(rc));
  sqlite3_free(err);
  return make_error(ErrorCode::store_unavailable, std::move(msg));
}

Error Db::error(std::string_view what) {
  last_code_ = sqlite3_extended_errcode(h_);
  return make_error(ErrorCode::store_unavailable,
                    "sqlite: " + std::string(what) + ": " + sqlite3_errmsg(h_));
}

bool is_transient(int code) {
  switch (code & 0xff) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_NOMEM:
    case SQLITE_PROTOCOL:
      return true;
    default:
      return false;
  }
}

}  // namespace cairva::store::sqlite
