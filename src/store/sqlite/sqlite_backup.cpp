// SqliteStore::backup: `cairva backup` (POST /admin/v1/backup) on the embedded store.
//
// What a consistent copy is. The store is its tables plus the operation log's records past
// the tables' applied mark (oplog.h); memory is rebuilt from the tables at open. The applier
// commits records and the mark in one transaction, so any snapshot of the tables is the whole
// store as of its mark, and needs no log. The copy is such a snapshot, taken after a writer
// flush: its mark is at or past every record acknowledged before the call. That is checked,
// not assumed (an applier failing on its disk leaves records behind; then no copy is made).
//
// How. VACUUM INTO on a read-only connection of its own: one read transaction, so one
// snapshot, while the applier keeps committing (WAL) and admin reads use their connection.
// It writes `<path>.partial` (created empty with mode 0600 first, which VACUUM INTO accepts
// and keeps), a file in rollback-journal mode that stands alone. Requests in flight in the
// copy become usage_pending there, as a restart makes them (they settle in the live store,
// never in the copy). The copy is synced and renamed to `path`, never replacing a file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "store/sqlite/oplog.h"
#include "store/sqlite/private_file.h"
#include "store/sqlite/sqlite_store.h"

namespace cairva::store::sqlite {
namespace {

namespace fs = std::filesystem;

constexpr const char* partial_suffix = ".partial";

std::string os_error(int err) { return std::generic_category().message(err); }

Error bad_target(const std::string& why) {
  return make_error(ErrorCode::invalid_request, "backup: " + why);
}

// Refuses what can be refused before any work: a relative path, a missing directory, an
// existing file, a name among the store's own files (the log's segments are found by name).
Status check_target(const std::string& target, const std::string& database_path) {
  const fs::path t(target);
  if (target.empty() || !t.is_absolute() || !t.has_filename()) {
    return bad_target("expected an absolute file path on the gateway's machine, got \"" + target +
                      "\"");
  }
  std::error_code ec;
  if (!fs::is_directory(t.parent_path(), ec)) {
    return bad_target("directory " + t.parent_path().string() + " does not exist");
  }
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0) {
    return make_error(ErrorCode::conflict,
                      "backup: " + target + " exists; a backup never replaces a file");
  }
  const fs::path db = fs::absolute(database_path, ec);
  if (!ec && fs::equivalent(t.parent_path(), db.parent_path(), ec) &&
      t.filename().string().starts_with(db.filename().string())) {
    return bad_target(target + " would sit among the store's own files (" + db.filename().string() +
                      "*): choose another name or directory");
  }
  return {};
}

Result<int64_t> count(Db& db, const char* sql) {
  auto s = db.prepare(sql);
  if (!s.ok()) return s.error();
  auto row = s->step();
  if (!row.ok()) return row.error();
  return s->col_i64(0);
}

Status sync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return make_error(ErrorCode::store_unavailable,
                      "backup: cannot sync " + path + ": " + os_error(err));
  }
  ::close(fd);
  return {};
}

// rename() that never replaces `to`. File systems without RENAME_NOREPLACE: link() refuses
// an existing target too.
int rename_no_replace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return -1;
  if (::link(from.c_str(), to.c_str()) != 0) return -1;
  ::unlink(from.c_str());
  return 0;
}

// Removes the partial copy (and a journal SQLite may have left) unless released.
class PartialFile {
 public:
  explicit PartialFile(std::string path) : path_(std::move(path)) {}
  ~PartialFile() {
    if (path_.empty()) return;
    ::unlink(path_.c_str());
    ::unlink((path_ + "-journal").c_str());
  }
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;
  const std::string& path() const { return path_; }
  void release() { path_.clear(); }

 private:
  std::string path_;
};

// The copy's own changes and figures, on a connection to it alone.
Status finish_copy(const std::string& partial, int64_t acknowledged, BackupReport& report) {
  auto copy = Db::open(partial, /*read_only=*/false);
  if (!copy.ok()) return copy.error();
  auto mark = oplog::applied(*copy);
  if (!mark.ok()) return mark.error();
  if (*mark < acknowledged) {
    return make_error(
        ErrorCode::store_unavailable,
        "backup: the store's tables are behind its operation log (applied through record " +
            std::to_string(*mark) + " of " + std::to_string(acknowledged) +
            "; is its disk failing?): no copy written");
  }
  if (Status s =
          copy->exec("UPDATE requests SET state = 'usage_pending' WHERE state = 'in_flight'");
      !s.ok()) {
    return s;
  }
  for (auto [sql, out] : {std::pair{"SELECT COUNT(*) FROM allocations", &report.allocations},
                          std::pair{"SELECT COUNT(*) FROM requests", &report.requests},
                          std::pair{"SELECT COUNT(*) FROM usage_events", &report.events}}) {
    auto n = count(*copy, sql);
    if (!n.ok()) return n.error();
    *out = *n;
  }
  return {};
}

}  // namespace

Result<BackupReport> SqliteStore::backup(const std::string& target) {
  if (Status s = check_target(target, path_); !s.ok()) return s.error();
  BackupReport report;
  report.path = target;
  report.started_at = clock_->now();
  PartialFile partial(target + partial_suffix);
  const int fd = open_private(partial.path(), O_WRONLY | O_CREAT | O_EXCL);
  if (fd < 0) {
    const int err = errno;
    const std::string path = partial.path();
    partial.release();  // not ours: another backup's, or a cut one's
    if (err == EEXIST) {
      return make_error(ErrorCode::conflict,
                        "backup: " + path +
                            " exists: a backup to this path is under way, or one was cut"
                            " (then remove it)");
    }
    return bad_target("cannot create " + path + ": " + os_error(err));
  }
  ::close(fd);

  // Every write acknowledged before this call is numbered up to here, and after the flush
  // the applier has had its go at all of them.
  const int64_t acknowledged = writer_->journaled_through();
  writer_->flush();
  {
    auto source = Db::open(path_, /*read_only=*/true);
    if (!source.ok()) return source.error();
    auto vacuum = source->prepare("VACUUM INTO ?");
    if (!vacuum.ok()) return vacuum.error();
    if (Status s = vacuum->text(partial.path()).run(); !s.ok()) return s.error();
  }
  if (Status s = finish_copy(partial.path(), acknowledged, report); !s.ok()) return s.error();
  if (Status s = sync_path(partial.path(), O_RDONLY); !s.ok()) return s.error();
  struct stat st {};
  if (::stat(partial.path().c_str(), &st) == 0) report.bytes = st.st_size;
  if (rename_no_replace(partial.path(), target) != 0) {
    const int err = errno;
    if (err == EEXIST) {
      return make_error(
          ErrorCode::conflict,
          "backup: " + target + " appeared meanwhile; a backup never replaces a file");
    }
    return make_error(ErrorCode::store_unavailable, "backup: cannot rename " + partial.path() +
                                                        " to " + target + ": " + os_error(err));
  }
  partial.release();
  if (Status s = sync_path(fs::path(target).parent_path().string(), O_RDONLY | O_DIRECTORY);
      !s.ok()) {
    return s.error();
  }
  report.finished_at = clock_->now();
  return report;
}

}  // namespace cairva::store::sqlite
