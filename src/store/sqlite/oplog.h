// The operation log: append-only segment files beside the database
// (`<path>-oplog.<first record number>`) holding the request path's writes
// (writes::Record) in order, one frame per commit (oplog_frame.h).
//
// Why: a commit that touches the store's ten-odd B-trees costs far more than appending one
// frame, which is one write() (bench/sqlite_commit_probe measures the floor of each). A request
// waits for its record to be in the log; the Writer's applier copies records into the tables in
// large batches on its own thread and connection, and records the last applied record number in the
// SAME transaction (table oplog_applied of the database). So every record is applied exactly once:
// after a crash, open() replays the records past that number before anything reads the tables. A
// segment whose records are all applied is deleted.
//
// The database commits with synchronous=FULL whatever `store.sync` says, so a segment is
// deleted only once its application is on disk; `store.sync` is the log's: "full"
// fdatasyncs every frame (and the directory for a new segment), "normal" leaves them to
// the kernel (they survive the process, not the machine).
//
// The next segment is made ahead (`<path>-oplog-spare`: created, its space reserved, its
// magic written) by the journal thread, so that moving to it is one rename() on whichever
// thread commits — with sync=normal an event loop, which must not wait for the file
// system (creating and reserving a file costs a stalled loop; so does giving back the old
// segment's unused reserve on a file system mounted with `discard`, which is left to the
// segment's deletion).
//
// The log of the builds before segment files (one SQLite file, `<path>-oplog`) is not read:
// see retire_v1_log.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "store/sqlite/db.h"
#include "store/sqlite/limits.h"
#include "store/sqlite/oplog_frame.h"
#include "store/sqlite/writes.h"

namespace cairva::store::sqlite::oplog {

// The log being written. Not thread-safe: the Writer holds its journal lock around it.
class Log {
 public:
  // Deletes the segments already there (open() replayed them: every record is applied)
  // and starts one whose first record is numbered `next_seq`.
  static Result<std::unique_ptr<Log>> start(const std::string& database_path, int64_t next_seq,
                                            bool sync_full,
                                            uint64_t segment_bytes = oplog_segment_bytes);
  ~Log();
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // Adds a record to the frame being built.
  void add(int64_t seq, const writes::Record& r);
  // Writes that frame after the last intact one (a new segment first when the current one
  // is full) and, with sync_full, waits for the disk. Either way the frame is emptied; on a
  // failure nothing of it counts: the next commit writes over it. `may_use_reserve`: when
  // no new segment can be created, the frame may go into the current one's reserve
  // (oplog_reserve_bytes) — for commits that only finish what was admitted.
  Status commit(bool may_use_reserve = false);
  // Would a commit that may not use the reserve succeed now (while failing, with nothing
  // to commit)? Creates the next segment (its first record numbered `next_seq`) if the
  // current one is full.
  Status probe(int64_t next_seq);
  // Segments (never the one being written) whose every record is numbered `applied` or less.
  bool trim_due(int64_t applied) const;
  // Deletes them; one that cannot be deleted is tried again next time.
  void trim(int64_t applied);
  // No next segment is made ahead, and none was tried since the last move to a new one.
  bool spare_due() const { return spare_fd_ < 0 && !spare_tried_; }
  // Makes the next segment ahead (see above). On failure (a full disk) the move to the
  // next segment creates it itself, as it would without a spare.
  Status prepare_spare();

  bool sync_full() const { return sync_full_; }
  size_t segments() const { return segments_.size(); }
  int64_t syncs() const { return syncs_; }  // fdatasync calls, for tests

 private:
  struct Segment {
    int64_t first_seq;
    std::string path;
  };
  Log(std::string database_path, bool sync_full, uint64_t segment_bytes)
      : database_path_(std::move(database_path)),
        sync_full_(sync_full),
        segment_bytes_(segment_bytes) {}
  Status open_segment(int64_t first_seq);
  // Creates a segment file at `path` with its space reserved and its magic written;
  // `reserve` gets the bytes reserved (0: the file system cannot reserve).
  Result<int> create_segment_file(const std::string& path, uint64_t& reserve);
  // Cuts the segment being written back to its last intact frame: what a failed write or a
  // probe left past it goes (a record's text, a client's bytes, must never be read as a frame).
  void drop_tail();
  Status sync(int fd);

  const std::string database_path_;
  const bool sync_full_;
  const uint64_t segment_bytes_;
  uint64_t reserved_ = 0;  // back()'s bytes allocated on disk at its creation (0: no fallocate)
  std::deque<Segment> segments_;  // oldest first; back() is being written
  int fd_ = -1;                   // back()'s
  uint64_t size_ = 0;             // back()'s bytes up to its last intact frame
  bool tail_clean_ = true;        // back() holds nothing past size_ (no failed cut since)
  int spare_fd_ = -1;             // the next segment, made ahead (at spare_path())
  uint64_t spare_reserve_ = 0;
  bool spare_tried_ = false;  // since the last move to a new segment
  FrameBuilder frame_;
  int64_t frame_first_seq_ = 0;
  int64_t syncs_ = 0;
};

struct Replayed {
  int64_t records = 0;   // applied now
  int64_t skipped = 0;   // records that could not be applied (reported on stderr)
  int64_t next_seq = 1;  // the number the next appended record takes
};
// Applies to `database`, in one transaction, every record of the log numbered after the
// database's applied number. Run at open, before the tables are read; then Log::start.
Result<Replayed> replay(Db& database, const std::string& database_path);

// Every record in the log's segments, in order, applied or not (a torn tail ends its
// segment).
Status read_log(const std::string& database_path, const RecordFn& each);

// Records in the log numbered after the database's applied number (`cairva audit`).
Result<int64_t> count_unapplied(Db& database, const std::string& database_path);

// The database's last applied record number, and setting it (inside the caller's transaction).
Result<int64_t> applied(Db& database);
Status set_applied(Db& database, int64_t seq);

// Applies one replayed record, or reports it on stderr and counts it skipped when the
// tables refuse it for a reason other than a busy or failing disk (returned).
Status apply_replayed(Db& database, int64_t seq, const writes::Record& r, Replayed& out);

// The operation log of the builds before segment files: one SQLite file beside the database.
inline std::string v1_log_path(const std::string& database_path) {
  return database_path + "-oplog";
}
// The last build that replays such a log into the tables (and then removes it), as
// `cairva --version` names it: the upgrade from those builds goes through it once.
inline constexpr std::string_view v1_log_reader_build = "0.1.0 (commit 85012870133a)";

// When the database has a v1 log (oplog_v1.cpp) holding writes past its tables: an
// ErrorCode::conflict naming v1_log_reader_build, with nothing changed. When the log holds
// none, it is deleted if `may_delete` (the caller holds the store's file lock), else kept.
// No log: OK. Reads nothing but that count, before anything opens the database to write.
Status retire_v1_log(const std::string& database_path, bool may_delete);

}  // namespace cairva::store::sqlite::oplog
