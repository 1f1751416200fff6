// The operation log of the builds before segment files (one SQLite file, `<path>-oplog`,
// table records(seq, …)) is no longer read: a store that holds one is upgraded by starting
// the last build that replays it (oplog.h's v1_log_reader_build) once. This only counts what
// such a log holds past the tables, to refuse it or, when it holds nothing, delete it.
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "store/sqlite/oplog.h"

namespace cairva::store::sqlite::oplog {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// The records of the v1 log at `log_path` numbered after the database's applied number (0
// when the database has no table yet: every record counts).
Result<int64_t> count_past_tables(const std::string& database_path, const std::string& log_path) {
  int64_t from = 0;
  if (exists(database_path)) {
    auto database = Db::open(database_path, /*read_only=*/true);
    if (!database.ok()) return database.error();
    auto has_table = database->prepare("SELECT 1 FROM sqlite_master WHERE name = 'oplog_applied'");
    if (!has_table.ok()) return has_table.error();
    auto found = has_table->step();
    if (!found.ok()) return found.error();
    if (*found) {
      auto seq = applied(*database);
      if (!seq.ok()) return seq.error();
      from = *seq;
    }
  }
  auto log = Db::open(log_path, /*read_only=*/true);
  if (!log.ok()) return log.error();
  auto count = log->prepare("SELECT COUNT(*) FROM records WHERE seq > ?");
  if (!count.ok()) return count.error();
  count->i64(from);
  auto row = count->step();
  if (!row.ok()) return row.error();
  return count->col_i64(0);
}

}  // namespace

Status retire_v1_log(const std::string& database_path, bool may_delete) {
  const std::string log_path = v1_log_path(database_path);
  if (!exists(log_path)) return {};
  auto unapplied = count_past_tables(database_path, log_path);
  if (!unapplied.ok()) {
    return make_error(ErrorCode::store_unavailable,
                      "store " + database_path +
                          ": cannot read the earlier build's operation log " + log_path + ": " +
                          unapplied.error().message);
  }
  if (*unapplied > 0) {
    return make_error(
        ErrorCode::conflict,
        log_path + " is the operation log of an earlier build, holding " +
            std::to_string(*unapplied) + (*unapplied == 1 ? " write" : " writes") +
            " not yet in the tables, and this cairva no longer reads it. Start cairva " +
            std::string(v1_log_reader_build) +
            " on this store once and stop it (it applies that log and removes it), then this "
            "build. Nothing was changed.");
  }
  if (may_delete) {
    for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((log_path + suffix).c_str());
  }
  return {};
}

}  // namespace cairva::store::sqlite::oplog
