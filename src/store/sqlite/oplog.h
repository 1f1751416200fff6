// The operation log: a second SQLite file beside the database (`<path>-oplog`) holding the
// request path's writes (writes::Record), one row each, in order.
//
// Why: a commit that touches the store's ten-odd B-trees costs ~250 µs, one that appends to
// a single B-tree ~40 µs (docs/benchmarks.md). A request waits for its record to be
// appended here; the Writer's applier copies records into the tables in large batches on
// its own thread and connection, and records the last applied sequence number in the SAME
// transaction (table oplog_applied of the database). So every record is applied exactly
// once: after a crash, open() replays the records past that number before anything reads
// the tables. Records at or below it are deleted (trimmed) as the applier advances.
//
// The database file commits with synchronous=FULL whatever `store.sync` says, so a record
// is trimmed only once its application is on disk; `store.sync` is the oplog's, the commit
// a request waits for.
#pragma once

#include <cstdint>
#include <string>

#include "store/sqlite/db.h"
#include "store/sqlite/writes.h"

namespace cairva::store::sqlite::oplog {

std::string path_for(const std::string& database_path);

// WAL, `store.sync`, and the log's table (created if missing).
Status prepare(Db& log, bool sync_full);

// Appends `r` as number `seq` (inside the caller's transaction).
Status append(Db& log, int64_t seq, const writes::Record& r);
// Deletes every record numbered `seq` or less (inside the caller's transaction).
Status trim(Db& log, int64_t seq);
// The database's last applied record number, and setting it (inside the caller's transaction).
Result<int64_t> applied(Db& database);
Status set_applied(Db& database, int64_t seq);
// The log's liveness probe while its disk is failing.
Status probe(Db& log);

struct Replayed {
  int64_t records = 0;   // applied now
  int64_t skipped = 0;   // records that could not be applied (reported on stderr)
  int64_t next_seq = 1;  // the number the next appended record takes
};
// Applies to `database`, in one transaction, every record of `log` numbered after the
// database's applied number, then trims the log. Run at open, before the tables are read.
Result<Replayed> replay(Db& database, Db& log);

}  // namespace cairva::store::sqlite::oplog
