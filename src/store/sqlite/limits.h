// Every bound of the embedded store, named with its unit last.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cairva::store::sqlite {

// Writes waiting for the writer thread. Admissions are refused (store_unavailable) at this
// depth: a disk slower than the request rate must push back, not grow memory. Settlements
// are never refused (each closes a request that was admitted under this bound).
inline constexpr size_t writer_queue_ops_max = 16384;
// Ops the journal appends as one oplog frame (one write(), and one fdatasync with
// sync=full): enough to amortise that over a burst, small enough that one frame, and the
// acknowledgements waiting for it, stay small.
inline constexpr size_t commit_batch_ops_max = 512;
// Ops the applier copies from the oplog into the tables in one transaction: large, so the
// cost of a commit touching every table is shared by many requests; bounded, so a read
// queued behind them waits milliseconds, not seconds.
inline constexpr size_t apply_batch_ops_max = 2048;
// Nothing but reads waits for the applier, so it waits for this many ops (or for
// apply_linger_ms, or for a read or admin write queued behind them) before it commits: an
// eager applier commits as often as the journal and shares nothing.
inline constexpr size_t apply_batch_ops_min = 512;
inline constexpr int64_t apply_linger_ms = 20;
// Journaled ops not yet applied to the tables. At this depth the journal stops taking new
// work until the applier catches up (requests wait; memory stays bounded).
inline constexpr size_t apply_backlog_ops_max = 16384;
// Records the applier applies between two yields of its core while it keeps up: see
// Writer::commit_apply. It runs at the event loops' priority: at a lower one a saturated
// machine starves it until its backlog reaches apply_backlog_ops_max, which stops the
// request path.
inline constexpr size_t apply_records_per_yield = 32;
// Rows (requests, usage events) the applier inserts with one statement (writes.h,
// Coalescer): a statement opens a cursor on each of its table's B-trees whether its row
// enters them or not (requests have seven), and that fixed cost shared by 16 rows is a
// third of a request's insert (bench/instructions.sh). 13 parameters a row at most, far
// below SQLite's limit.
inline constexpr size_t apply_rows_per_insert = 16;
// The oplog starts a new segment file past this size; a segment is deleted (by the
// journal thread) once every record in it is applied. Small enough that the log of a
// stopped gateway replays in a moment, large enough that creating and deleting files is
// rare (about one per 10,000 requests).
inline constexpr uint64_t oplog_segment_bytes = 4 << 20;
// Each segment's disk space is reserved when it is created (fallocate), this much beyond
// oplog_segment_bytes: when the disk is full and no new segment can be created, admissions
// are refused, but the settlements of requests already admitted still have room (about
// 2,500 requests' worth) and are booked rather than left waiting for the disk.
inline constexpr uint64_t oplog_reserve_bytes = 1 << 20;
// What a probe of a failing disk writes past the log's last frame: a page, as a commit would.
inline constexpr size_t oplog_probe_bytes = 4096;
// While the disk fails, the writer retries (and probes) this often.
inline constexpr int64_t writer_retry_ms = 50;
// An admin write or state change that cannot be made durable gets store_unavailable after
// this long; the write itself stays queued and is committed when the disk recovers. (A
// settlement gets it at once: writer.h.)
inline constexpr int64_t durable_ack_wait_ms_max = 30'000;
// Blocking admin calls wait this long for their write (then store_unavailable).
inline constexpr int64_t admin_wait_ms_max = 35'000;
// Reads waiting for the read worker (usage series): a dashboard's refreshes, not a flood.
inline constexpr size_t reads_queued_max = 64;
// Audit's slack over the in-flight timeout: the gateway sweeps at least once a second.
inline constexpr int64_t audit_sweep_slack_s = 1;
// Findings listed per audit check: enough to act on, bounded for a corrupt database.
inline constexpr size_t audit_findings_per_check_max = 100;
// SQLite's own wait for a lock held by a reader checkpointing (the file is ours alone).
inline constexpr int sqlite_busy_timeout_ms = 5000;

static_assert(commit_batch_ops_max <= writer_queue_ops_max);
static_assert(commit_batch_ops_max <= apply_backlog_ops_max);
static_assert(apply_batch_ops_min <= apply_batch_ops_max);
static_assert(durable_ack_wait_ms_max < admin_wait_ms_max);

}  // namespace cairva::store::sqlite
