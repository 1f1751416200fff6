#include "store/sqlite/oplog.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>
#include <vector>

#include "store/sqlite/private_file.h"

namespace cairva::store::sqlite::oplog {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view segment_infix = "-oplog.";
constexpr size_t segment_number_digits = 20;  // zero-padded: names sort as numbers do

Error log_error(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::store_unavailable, "oplog " + path + ": " + what);
}

Error errno_error(const std::string& path, const char* call) {
  return log_error(path, std::string(call) + ": " + std::generic_category().message(errno));
}

std::string segment_path(const std::string& database_path, int64_t first_seq) {
  char number[segment_number_digits + 1];
  std::snprintf(number, sizeof number, "%020" PRId64, first_seq);
  return database_path + std::string(segment_infix) + number;
}

// The next segment, made ahead; not a segment name (list_segments skips it).
std::string spare_path(const std::string& database_path) { return database_path + "-oplog-spare"; }

fs::path directory_of(const std::string& database_path) {
  fs::path dir = fs::path(database_path).parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

struct Found {
  int64_t first_seq;
  std::string path;
};

// The log's segments, oldest first.
Result<std::vector<Found>> list_segments(const std::string& database_path) {
  const std::string prefix =
      fs::path(database_path).filename().string() + std::string(segment_infix);
  std::vector<Found> out;
  std::error_code ec;
  for (fs::directory_iterator it(directory_of(database_path), ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec)) continue;
    if (!name.starts_with(prefix) || name.size() != prefix.size() + segment_number_digits) continue;
    const std::string_view number = std::string_view(name).substr(prefix.size());
    if (!std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    out.push_back({std::stoll(std::string(number)), it->path().string()});
  }
  if (ec) return log_error(database_path, "cannot list its directory: " + ec.message());
  std::sort(out.begin(), out.end(),
            [](const Found& a, const Found& b) { return a.first_seq < b.first_seq; });
  return out;
}

}  // namespace

Status read_log(const std::string& database_path, const RecordFn& each) {
  auto segments = list_segments(database_path);
  if (!segments.ok()) return segments.error();
  for (const auto& seg : *segments) {
    std::ifstream in(seg.path, std::ios::binary);
    if (!in) return errno_error(seg.path, "open");
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < segment_magic.size())
      continue;  // created, never written: a crash at rotation
    if (!std::string_view(bytes).starts_with(segment_magic))
      return log_error(seg.path, "not an oplog segment");
    auto read = read_frames(std::string_view(bytes).substr(segment_magic.size()), each);
    if (!read.ok()) return log_error(seg.path, read.error().message);
  }
  return {};
}

namespace {

Status write_all(int fd, std::string_view bytes, uint64_t at, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(path, "write");
    bytes.remove_prefix(static_cast<size_t>(n));
    at += static_cast<uint64_t>(n);
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<Log>> Log::start(const std::string& database_path, int64_t next_seq,
                                        bool sync_full, uint64_t segment_bytes) {
  auto old = list_segments(database_path);
  if (!old.ok()) return old.error();
  for (const auto& seg : *old) {
    if (::unlink(seg.path.c_str()) != 0 && errno != ENOENT) return errno_error(seg.path, "unlink");
  }
  // A spare an earlier run made ahead and never used holds no record.
  const std::string spare = spare_path(database_path);
  if (::unlink(spare.c_str()) != 0 && errno != ENOENT) return errno_error(spare, "unlink");
  std::unique_ptr<Log> log(new Log(database_path, sync_full, segment_bytes));
  if (Status s = log->open_segment(next_seq); !s.ok()) return s.error();
  return log;
}

Log::~Log() {
  if (fd_ >= 0) ::close(fd_);
  if (spare_fd_ >= 0) {
    ::close(spare_fd_);
    ::unlink(spare_path(database_path_).c_str());
  }
}

Status Log::sync(int fd) {
  ++syncs_;
  if (::fdatasync(fd) != 0)
    return errno_error(segments_.empty() ? database_path_ : segments_.back().path, "fdatasync");
  return {};
}

Result<int> Log::create_segment_file(const std::string& path, uint64_t& reserve) {
  const int fd = open_private(path, O_WRONLY | O_CREAT | O_TRUNC);
  if (fd < 0) return errno_error(path, "open");
  // The whole segment's space now, so that no commit into it meets a full disk. A file
  // system without fallocate gets plain appends.
  reserve = segment_bytes_ + oplog_reserve_bytes;
  Status s;
  if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(reserve)) != 0) {
    if (errno == EOPNOTSUPP) {
      reserve = 0;
    } else {
      s = errno_error(path, "fallocate");
    }
  }
  if (s.ok()) s = write_all(fd, segment_magic, 0, path);
  if (s.ok() && sync_full_) s = sync(fd);
  if (!s.ok()) {
    ::close(fd);
    ::unlink(path.c_str());
    return s.error();
  }
  return fd;
}

Status Log::prepare_spare() {
  if (spare_fd_ >= 0) return {};
  spare_tried_ = true;
  auto fd = create_segment_file(spare_path(database_path_), spare_reserve_);
  if (!fd.ok()) return fd.error();
  spare_fd_ = *fd;
  return {};
}

Status Log::open_segment(int64_t first_seq) {
  const std::string path = segment_path(database_path_, first_seq);
  int fd = -1;
  uint64_t reserve = 0;
  // The spare, when there is one: a rename. When even that fails (the name is taken),
  // creating the file fails the same way, and the spare is kept for the next try.
  if (spare_fd_ >= 0 && ::rename(spare_path(database_path_).c_str(), path.c_str()) == 0) {
    fd = std::exchange(spare_fd_, -1);
    reserve = spare_reserve_;
  } else {
    auto created = create_segment_file(path, reserve);
    if (!created.ok()) return created.error();
    fd = *created;
  }
  if (sync_full_) {
    // The new name must survive a crash as well as its bytes.
    const int dir =
        ::open(directory_of(database_path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    Status s = dir >= 0 && ::fsync(dir) == 0 ? Status{}
                                             : Status(errno_error(path, "fsync of its directory"));
    if (dir >= 0) ::close(dir);
    if (!s.ok()) {
      ::close(fd);
      ::unlink(path.c_str());
      return s;
    }
  }
  if (fd_ >= 0) {
    // The old segment keeps its unused reserve until it is deleted: giving it back here
    // would stall the committing thread (see the header). Only bytes a failed write left
    // past its last frame, which a failed cut kept, must go.
    reserved_ = 0;
    if (!tail_clean_) drop_tail();
    ::close(fd_);
  }
  fd_ = fd;
  size_ = segment_magic.size();
  reserved_ = reserve;
  tail_clean_ = true;
  spare_tried_ = false;
  segments_.push_back({first_seq, path});
  return {};
}

void Log::add(int64_t seq, const writes::Record& r) {
  if (frame_.empty()) frame_first_seq_ = seq;
  frame_.add(seq, r);
}

Status Log::commit(bool may_use_reserve) {
  if (frame_.empty()) return {};
  const std::string_view bytes = frame_.seal();
  Status s = size_ >= segment_bytes_ ? open_segment(frame_first_seq_) : Status{};
  if (!s.ok() && may_use_reserve && size_ + bytes.size() <= reserved_) s = Status{};
  if (s.ok()) s = write_all(fd_, bytes, size_, segments_.back().path);
  if (s.ok() && sync_full_) s = sync(fd_);
  if (s.ok()) {
    size_ += bytes.size();
  } else {
    drop_tail();
  }
  frame_.clear();
  return s;
}

void Log::drop_tail() {
  // Best effort: should the truncation fail too, the next frame is written over the bytes
  // anyway, and reading stops at what is left past it.
  if (fd_ < 0) return;
  tail_clean_ = ::ftruncate(fd_, static_cast<off_t>(size_)) == 0;
  // Truncating also gave back the space reserved past the end: take it again (the blocks
  // just freed, so this succeeds even on a full disk unless another writer took them).
  if (reserved_ > size_)
    (void)::fallocate(fd_, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(reserved_));
}

Status Log::probe(int64_t next_seq) {
  // A full segment: what an admission's commit would do first.
  if (size_ >= segment_bytes_) return open_segment(next_seq);
  // Past the last frame, where the next commit writes anyway; not a frame (wrong magic).
  const std::string filler(oplog_probe_bytes, '\xff');
  Status s = write_all(fd_, filler, size_, segments_.back().path);
  if (s.ok() && sync_full_) s = sync(fd_);
  drop_tail();
  return s;
}

bool Log::trim_due(int64_t applied) const {
  return segments_.size() >= 2 && segments_[1].first_seq - 1 <= applied;
}

void Log::trim(int64_t applied) {
  while (trim_due(applied)) {
    if (::unlink(segments_.front().path.c_str()) != 0 && errno != ENOENT) return;
    segments_.pop_front();
  }
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

Status apply_replayed(Db& database, int64_t seq, const writes::Record& r, Replayed& out) {
  Status s =
      writes::known_kind(static_cast<int64_t>(r.kind))
          ? writes::apply(database, r)
          : Status(make_error(ErrorCode::internal_error,
                              "unknown record kind " + std::to_string(static_cast<int>(r.kind))));
  if (s.ok()) {
    ++out.records;
    return s;
  }
  if (is_transient(database.last_code())) return s;
  // The same record failed when it was first applied (the applier skips it too):
  // reported, never retried for ever.
  std::fprintf(stderr, "cairva: oplog record %lld not applied: %s\n", static_cast<long long>(seq),
               s.error().message.c_str());
  ++out.skipped;
  return {};
}

Result<Replayed> replay(Db& database, const std::string& database_path) {
  auto from = applied(database);
  if (!from.ok()) return from.error();
  Replayed out;
  out.next_seq = *from + 1;
  if (Status s = database.exec("BEGIN IMMEDIATE"); !s.ok()) return s.error();
  auto fail = [&](Error e) -> Result<Replayed> {
    (void)database.exec("ROLLBACK");
    return e;
  };
  int64_t last = out.next_seq - 1;  // the last record applied or skipped
  Status read = read_log(database_path, [&](int64_t seq, writes::Record&& r) -> Status {
    if (seq <= last) return {};  // applied before the process stopped
    if (seq != last + 1) {
      // Numbers are given out without gaps: acknowledged writes are missing (a damaged file).
      std::fprintf(stderr,
                   "cairva: oplog records %" PRId64 " to %" PRId64 " are missing: not replayed\n",
                   last + 1, seq - 1);
    }
    last = seq;
    return apply_replayed(database, seq, r, out);
  });
  if (!read.ok()) return fail(read.error());
  if (Status s = set_applied(database, last); !s.ok()) return fail(s.error());
  if (Status s = database.exec("COMMIT"); !s.ok()) return fail(s.error());
  out.next_seq = last + 1;
  return out;
}

Result<int64_t> count_unapplied(Db& database, const std::string& database_path) {
  auto from = applied(database);
  if (!from.ok()) return from.error();
  int64_t count = 0;
  int64_t last = *from;
  Status read = read_log(database_path, [&](int64_t seq, writes::Record&&) -> Status {
    if (seq > last) {
      ++count;
      last = seq;
    }
    return {};
  });
  if (!read.ok()) return read.error();
  return count;
}

}  // namespace cairva::store::sqlite::oplog
