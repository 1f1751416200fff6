// The operation log as the build before segment files wrote it: one SQLite file,
// `<path>-oplog`, table records(seq, kind, t0..t6, n0..n4). Read once at open, then removed.
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <string>
#include <string_view>

#include "store/sqlite/oplog.h"

namespace cairva::store::sqlite::oplog {
namespace {

std::string v1_path(const std::string& database_path) { return database_path + "-oplog"; }

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

static_assert(writes::Record::texts == 7 && writes::Record::nums == 5, "the v1 records table's columns");

// Calls `each` for every record numbered after `after`, in order.
template <class Each>
Status read_v1(Db& log, int64_t after, Each each) {
  auto rows = log.prepare("SELECT * FROM records WHERE seq > ? ORDER BY seq");
  if (!rows.ok()) return rows.error();
  rows->i64(after);
  for (;;) {
    auto more = rows->step();
    if (!more.ok()) return more.error();
    if (!*more) return {};
    writes::Record r;
    r.kind = static_cast<writes::Record::Kind>(rows->col_i64(1));
    std::array<std::string, writes::Record::texts> texts;
    std::array<std::string_view, writes::Record::texts> views;
    for (size_t i = 0; i < texts.size(); ++i) {
      texts[i] = rows->col_text(2 + static_cast<int>(i));
      views[i] = texts[i];
    }
    r.set_texts(views);
    for (size_t i = 0; i < r.num.size(); ++i) r.num[i] = rows->col_i64(9 + static_cast<int>(i));
    if (Status s = each(rows->col_i64(0), r); !s.ok()) return s;
  }
}

}  // namespace

Status replay_v1(Db& database, const std::string& database_path, Replayed& out) {
  const std::string path = v1_path(database_path);
  if (!exists(path)) return {};
  auto log = Db::open(path, false);
  if (!log.ok()) return log.error();
  return read_v1(*log, out.next_seq - 1, [&](int64_t seq, const writes::Record& r) {
    out.next_seq = seq + 1;
    return apply_replayed(database, seq, r, out);
  });
}

void remove_v1(const std::string& database_path) {
  const std::string path = v1_path(database_path);
  for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
}

Result<int64_t> count_unapplied_v1(const std::string& database_path, int64_t applied) {
  const std::string path = v1_path(database_path);
  if (!exists(path)) return int64_t{0};
  auto log = Db::open(path, /*read_only=*/true);
  if (!log.ok()) return log.error();
  int64_t count = 0;
  Status s = read_v1(*log, applied, [&](int64_t, const writes::Record&) {
    ++count;
    return Status{};
  });
  if (!s.ok()) return s.error();
  return count;
}

}  // namespace cairva::store::sqlite::oplog
