#include "store/sqlite/oplog.h"

#include <cstdio>

#include "store/sqlite/limits.h"

namespace cairva::store::sqlite::oplog {
namespace {

constexpr const char* schema = R"sql(
CREATE TABLE IF NOT EXISTS records (
  seq INTEGER PRIMARY KEY,
  kind INTEGER NOT NULL,
  t0 TEXT NOT NULL, t1 TEXT NOT NULL, t2 TEXT NOT NULL, t3 TEXT NOT NULL, t4 TEXT NOT NULL,
  t5 TEXT NOT NULL, t6 TEXT NOT NULL,
  n0 INTEGER NOT NULL, n1 INTEGER NOT NULL, n2 INTEGER NOT NULL, n3 INTEGER NOT NULL,
  n4 INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS probe (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL);
INSERT OR IGNORE INTO probe VALUES (1, 0);
)sql";

static_assert(writes::Record::texts == 7 && writes::Record::nums == 5, "records table columns");

}  // namespace

std::string path_for(const std::string& database_path) { return database_path + "-oplog"; }

Status prepare(Db& log, bool sync_full) {
  // While the store is open, its one connection to the log (used under the writer's
  // journal lock) is the only one. In exclusive mode SQLite takes its file locks once, not
  // at every transaction, and keeps the WAL index in heap memory (set before the first WAL
  // access).
  if (Status s = log.exec("PRAGMA locking_mode=EXCLUSIVE"); !s.ok()) return s;
  // Before the first table: a new log's page size (an existing one keeps its own).
  if (Status s = log.exec("PRAGMA page_size=" + std::to_string(oplog_page_bytes)); !s.ok()) return s;
  if (Status s = log.exec("PRAGMA journal_mode=WAL"); !s.ok()) return s;
  if (Status s = log.exec(sync_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
      !s.ok()) {
    return s;
  }
  return log.exec(schema);
}

Status append(Db& log, int64_t seq, const writes::Record& r) {
  auto s = log.cached("INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  if (!s.ok()) return s.error();
  s->i64(seq).i64(static_cast<int64_t>(r.kind));
  for (const auto& t : r.text) s->text(t);
  for (const int64_t n : r.num) s->i64(n);
  return s->run();
}

Status trim(Db& log, int64_t seq) {
  auto s = log.cached("DELETE FROM records WHERE seq <= ?");
  if (!s.ok()) return s.error();
  s->i64(seq);
  return s->run();
}

Result<int64_t> applied(Db& database) {
  auto s = database.prepare("SELECT seq FROM oplog_applied WHERE id = 1");
  if (!s.ok()) return s.error();
  auto row = s->step();
  if (!row.ok()) return row.error();
  if (!*row) return make_error(ErrorCode::store_unavailable, "sqlite: oplog_applied has no row");
  return s->col_i64(0);
}

Status set_applied(Db& database, int64_t seq) {
  auto s = database.cached("UPDATE oplog_applied SET seq = ? WHERE id = 1");
  if (!s.ok()) return s.error();
  s->i64(seq);
  return s->run();
}

Status probe(Db& log) {
  if (Status s = log.exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  Status s = log.exec("UPDATE probe SET at = at + 1 WHERE id = 1");
  if (s.ok()) s = log.exec("COMMIT");
  if (!s.ok()) (void)log.exec("ROLLBACK");
  return s;
}

Result<Replayed> replay(Db& database, Db& log) {
  auto from = applied(database);
  if (!from.ok()) return from.error();
  Replayed out;
  int64_t last = *from;
  if (Status s = database.exec("BEGIN IMMEDIATE"); !s.ok()) return s.error();
  auto fail = [&](Error e) -> Result<Replayed> {
    (void)database.exec("ROLLBACK");
    return e;
  };
  {
    auto rows = log.prepare("SELECT * FROM records WHERE seq > ? ORDER BY seq");
    if (!rows.ok()) return fail(rows.error());
    rows->i64(*from);
    for (;;) {
      auto more = rows->step();
      if (!more.ok()) return fail(more.error());
      if (!*more) break;
      last = rows->col_i64(0);
      const int64_t kind = rows->col_i64(1);
      Status s = writes::known_kind(kind)
                     ? Status{}
                     : Status(make_error(ErrorCode::internal_error,
                                         "unknown record kind " + std::to_string(kind)));
      if (s.ok()) {
        writes::Record r;
        r.kind = static_cast<writes::Record::Kind>(kind);
        for (size_t i = 0; i < r.text.size(); ++i) r.text[i] = rows->col_text(2 + static_cast<int>(i));
        for (size_t i = 0; i < r.num.size(); ++i) r.num[i] = rows->col_i64(9 + static_cast<int>(i));
        s = writes::apply(database, r);
      }
      if (!s.ok()) {
        if (is_transient(database.last_code())) return fail(s.error());
        // The same record failed when it was first applied (the applier skips it too):
        // reported, never retried for ever.
        std::fprintf(stderr, "cairva: oplog record %lld not applied: %s\n",
                     static_cast<long long>(last), s.error().message.c_str());
        ++out.skipped;
        continue;
      }
      ++out.records;
    }
  }
  if (Status s = set_applied(database, last); !s.ok()) return fail(s.error());
  if (Status s = database.exec("COMMIT"); !s.ok()) return fail(s.error());
  if (Status s = log.exec("BEGIN IMMEDIATE"); !s.ok()) return s.error();
  if (Status s = trim(log, last); !s.ok()) {
    (void)log.exec("ROLLBACK");
    return s.error();
  }
  if (Status s = log.exec("COMMIT"); !s.ok()) {
    (void)log.exec("ROLLBACK");
    return s.error();
  }
  out.next_seq = last + 1;
  return out;
}

}  // namespace cairva::store::sqlite::oplog
