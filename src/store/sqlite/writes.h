// The row writes of the embedded store.
//
// The request path's writes (admissions, settlements, sweeps, state changes) are Records
// (record.h): plain values the Writer appends to the operation log (oplog.h) — the one durable
// write a request waits for — and applies to the tables later, in large batches, or replays after
// a crash. Admin creations stay closures (Apply) run inside the applier's transaction.
// Both are built under the allocation's mutex (values, never references) and run later
// on the writer's threads.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/rows.h"
#include "store/sqlite/db.h"
#include "store/sqlite/record.h"

namespace cairva::store::sqlite::writes {

using Apply = std::function<Status(Db&)>;

// Numbers what the applier writes, in record order (schema.cpp, migration 9): each
// request's seq and start_ordinal, each event's running totals (cum_input, cum_output).
// It reads an allocation's last values once and counts on in memory, so it must see
// every row written since: the Coalescer keeps one per transaction and forgets it whenever
// a write outside it (an admin closure) may have added rows.
class Sequencer {
 public:
  struct Start {
    int64_t seq = 0;
    int64_t ordinal = 0;
  };
  Result<Start> next_start(Db& db, std::string_view allocation_id);
  // The allocation's booked totals once `delta` is booked.
  Result<core::Tokens> next_totals(Db& db, std::string_view allocation_id,
                                   const core::Tokens& delta);
  void forget();

 private:
  // Looked up by the records' string_views without making a string each time.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <class V>
  using ByAllocation = std::unordered_map<std::string, V, Hash, std::equal_to<>>;
  // The entry last used (a map's nodes never move): a transaction's records mostly name
  // the allocation the record before named, and comparing its id costs less than hashing it
  // (the applier numbers every request and every booking).
  template <class V>
  struct LastUsed {
    std::string_view allocation_id;  // the map's own key
    V* value = nullptr;
    V* find(std::string_view id) const {
      return value != nullptr && allocation_id == id ? value : nullptr;
    }
  };
  std::optional<int64_t> seq_;
  ByAllocation<int64_t> ordinals_;
  ByAllocation<core::Tokens> totals_;
  LastUsed<int64_t> last_ordinal_;
  LastUsed<core::Tokens> last_totals_;
};

// Runs the record's statements on `db` (inside the caller's transaction).
Status apply(Db& db, const Record& r);

// Applies the records of one transaction with fewer B-tree writes than apply() one by one:
// a request started and ended within it is inserted once, in its final state (no in-flight
// index entry made then removed, no update by id), and each allocation's used totals are
// raised once. Requests' rows are held back until flush() (or a record that needs the row),
// usage events until flush(), and both inserted several per statement. The tables end
// exactly as apply() would leave them.
class Coalescer {
 public:
  // `op`: the caller's index for the record's op, which failed_op() names on an error.
  // `r` is held by reference, not copied (the applier's records live until its commit):
  // it must outlive the next flush().
  Status add(Db& db, const Record& r, size_t op);
  // Writes what is held back: before anything else reads or writes the tables, and last.
  Status flush(Db& db);
  size_t failed_op() const { return failed_op_; }

 private:
  // Views into the caller's records (add()'s contract): no string is copied per request.
  struct Start {
    InsertRequest row;  // its state the first end's, once `ended`
    Sequencer::Start numbers;
    std::optional<int64_t> finished_at;
    std::string_view provider_request_id;
    size_t op = 0;
    bool written = false;
    bool ended = false;  // its first end is in `row` (a later record applies to the row)
  };
  struct Event {
    Book row;
    core::Tokens totals;  // the allocation's running totals (cum_input, cum_output)
    size_t op = 0;
  };
  struct Used {
    int64_t input = 0;
    int64_t output = 0;
    size_t op = 0;
  };
  // Insert the rows (1 to apply_rows_per_insert of them) in one statement.
  Status write(Db& db, std::span<Start* const> rows);
  Status write(Db& db, std::span<const Event> rows);
  // Inserts the row now, for a record that applies to it.
  Status write_now(Db& db, Start& s);
  // The request's start held back in this transaction and not yet written, or nullptr.
  Start* held(std::string_view request_id);
  std::vector<Start> starts_;
  // request id -> starts_ index, until its row is written
  std::unordered_map<std::string_view, size_t> start_of_;
  std::vector<Event> events_;                        // in booking order
  std::unordered_map<std::string_view, Used> used_;  // allocation id -> tokens booked
  Sequencer sequencer_;
  size_t failed_op_ = 0;
};

// Builders from the store's rows; the other kinds are pack()ed from their struct. Each copies
// its texts into the record (one buffer).
Record insert_request(const RequestRow& r, std::string_view key_id);
Record set_states(const std::string& allocation_id, const std::string& agreement_id,
                  core::AllocationState state, core::AgreementState agreement_state);
// A new usage event: the request booked, the allocation's used totals raised.
Record book(const UsageEventRow& e);
// A provider's report booked by a settlement (the request path's event): `e` with source
// provider, finality reported.
Record book_reported(Book e);
Record insert_conflict(const ConflictRow& c);

Apply insert_agreement(const AgreementRow& a, const std::string& allocation_id,
                       core::AllocationState state, const std::string& key_id,
                       const std::string& key_hash);
Apply insert_key(const std::string& key_id, const std::string& allocation_id,
                 const std::string& key_hash, UnixMicros now);
Apply revoke_key(const std::string& key_id);
// An adjustment event (SPEC-CONSOLE §4b): its row, and the allocation's used totals moved
// by its signed counts.
Apply insert_adjustment(const UsageEventRow& e);
// Conflicts an operator's import found (Store::record_conflicts), each unless one with the
// same allocation, provider request id and counts is recorded; `recorded` counts them.
Apply insert_conflicts(std::vector<ConflictRow> rows, std::shared_ptr<int64_t> recorded);

}  // namespace cairva::store::sqlite::writes
