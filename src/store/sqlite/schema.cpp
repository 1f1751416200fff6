#include "store/sqlite/schema.h"

#include <algorithm>
#include <array>
#include <string>

namespace cairva::store::sqlite {
namespace {

// Never edit a migration once released: add a new one.
constexpr std::array<const char*, 9> migrations = {
    R"sql(
CREATE TABLE agreements (
  id TEXT PRIMARY KEY,
  supplier TEXT NOT NULL,
  buyer TEXT NOT NULL,
  provider TEXT NOT NULL,
  starts_at INTEGER NOT NULL,
  ends_at INTEGER NOT NULL,
  requests_per_minute INTEGER NOT NULL CHECK (requests_per_minute > 0),
  tokens_per_minute INTEGER NOT NULL CHECK (tokens_per_minute > 0),
  max_concurrency INTEGER NOT NULL CHECK (max_concurrency > 0),
  input_tokens INTEGER NOT NULL CHECK (input_tokens > 0),
  output_tokens INTEGER NOT NULL CHECK (output_tokens > 0),
  state TEXT NOT NULL CHECK (state IN ('in_force','completed','expired','cancelled')),
  created_at INTEGER NOT NULL,
  CHECK (ends_at > starts_at)
);
CREATE TABLE agreement_models (
  agreement_id TEXT NOT NULL REFERENCES agreements(id),
  position INTEGER NOT NULL,
  model TEXT NOT NULL,
  PRIMARY KEY (agreement_id, position)
);
CREATE TABLE allocations (
  id TEXT PRIMARY KEY,
  agreement_id TEXT NOT NULL UNIQUE REFERENCES agreements(id),
  state TEXT NOT NULL CHECK (state IN ('ready','active','suspended','depleted','expired')),
  used_input INTEGER NOT NULL DEFAULT 0 CHECK (used_input >= 0),
  used_output INTEGER NOT NULL DEFAULT 0 CHECK (used_output >= 0)
);
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  allocation_id TEXT NOT NULL REFERENCES allocations(id),
  secret_hash TEXT NOT NULL UNIQUE,
  revoked INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL
);
CREATE TABLE requests (
  id TEXT PRIMARY KEY,
  allocation_id TEXT NOT NULL REFERENCES allocations(id),
  key_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('in_flight','booked','usage_pending','failed')),
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  model TEXT NOT NULL,
  stream INTEGER NOT NULL,
  hold_input INTEGER NOT NULL CHECK (hold_input >= 0),
  hold_output INTEGER NOT NULL CHECK (hold_output >= 0),
  provider_request_id TEXT NOT NULL DEFAULT '',
  -- A request booked as a duplicate (or conflict) of another request's event: that event.
  booked_event_id TEXT
);
CREATE INDEX requests_allocation_started ON requests (allocation_id, started_at);
CREATE INDEX requests_state ON requests (state, started_at);
CREATE TABLE usage_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- booking order
  id TEXT NOT NULL UNIQUE,
  allocation_id TEXT NOT NULL REFERENCES allocations(id),
  request_id TEXT NOT NULL UNIQUE REFERENCES requests(id),
  provider_request_id TEXT NOT NULL,
  input_tokens INTEGER NOT NULL CHECK (input_tokens >= 0),
  output_tokens INTEGER NOT NULL CHECK (output_tokens >= 0),
  source TEXT NOT NULL CHECK (source IN ('provider','reconciliation')),
  finality TEXT NOT NULL CHECK (finality IN ('reported','confirmed')),
  evidence TEXT NOT NULL DEFAULT '',
  booked_at INTEGER NOT NULL,
  UNIQUE (allocation_id, provider_request_id)
);
CREATE INDEX usage_events_allocation ON usage_events (allocation_id, seq);
CREATE INDEX usage_events_booked_at ON usage_events (allocation_id, booked_at);
CREATE TABLE conflicts (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  allocation_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  provider_request_id TEXT NOT NULL,
  reported_input INTEGER NOT NULL,
  reported_output INTEGER NOT NULL,
  booked_input INTEGER NOT NULL,
  booked_output INTEGER NOT NULL,
  recorded_at INTEGER NOT NULL
);
CREATE INDEX conflicts_allocation ON conflicts (allocation_id, seq);
-- The writer's liveness probe while the disk is failing.
CREATE TABLE writer_probe (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL);
INSERT INTO writer_probe VALUES (1, 0);
)sql",
    // 2: fewer B-trees written per request. Every index below was written on every booking and read
    // by nothing the gateway does often:
    //  - requests_state moved each request from 'in_flight' to 'booked'; only in-flight
    //    requests are ever looked up by state (restart, audit), so a partial index suffices;
    //  - usage_events_booked_at was read by no query;
    //  - AUTOINCREMENT rewrote sqlite_sequence per event; events are never deleted, so a
    //    plain rowid is already strictly increasing (booking order).
    R"sql(
DROP INDEX requests_state;
CREATE INDEX requests_in_flight ON requests (started_at) WHERE state = 'in_flight';
CREATE TABLE usage_events_v2 (
  seq INTEGER PRIMARY KEY,  -- booking order; events are never deleted, so never reused
  id TEXT NOT NULL UNIQUE,
  allocation_id TEXT NOT NULL REFERENCES allocations(id),
  request_id TEXT NOT NULL UNIQUE REFERENCES requests(id),
  provider_request_id TEXT NOT NULL,
  input_tokens INTEGER NOT NULL CHECK (input_tokens >= 0),
  output_tokens INTEGER NOT NULL CHECK (output_tokens >= 0),
  source TEXT NOT NULL CHECK (source IN ('provider','reconciliation')),
  finality TEXT NOT NULL CHECK (finality IN ('reported','confirmed')),
  evidence TEXT NOT NULL DEFAULT '',
  booked_at INTEGER NOT NULL,
  UNIQUE (allocation_id, provider_request_id)
);
INSERT INTO usage_events_v2 (seq, id, allocation_id, request_id, provider_request_id, input_tokens,
  output_tokens, source, finality, evidence, booked_at)
  SELECT seq, id, allocation_id, request_id, provider_request_id, input_tokens, output_tokens,
  source, finality, evidence, booked_at FROM usage_events;
DROP TABLE usage_events;
ALTER TABLE usage_events_v2 RENAME TO usage_events;
CREATE INDEX usage_events_allocation ON usage_events (allocation_id, seq);
)sql",
    // 3: no index on the booking key (allocation_id, provider_request_id). Providers' ids are
    // random, so that unique index cost one random leaf page per booking, written to the WAL
    // and checkpointed again: the largest part of the store's cost per request
    // (bench/sqlite_store_bench). The key stays unique because the one process that may write the
    // file (its lock) decides every booking in the allocation's in-memory ledger, which holds
    // every booked provider id (restored from this table at open); `cairva audit` checks it.
    // A duplicate request's event is found by its (allocation_id, provider_request_id), so
    // requests.booked_event_id, which only repeated that link, goes too.
    R"sql(
CREATE TABLE usage_events_v3 (
  seq INTEGER PRIMARY KEY,  -- booking order; events are never deleted, so never reused
  id TEXT NOT NULL UNIQUE,
  allocation_id TEXT NOT NULL REFERENCES allocations(id),
  request_id TEXT NOT NULL UNIQUE REFERENCES requests(id),
  provider_request_id TEXT NOT NULL,
  input_tokens INTEGER NOT NULL CHECK (input_tokens >= 0),
  output_tokens INTEGER NOT NULL CHECK (output_tokens >= 0),
  source TEXT NOT NULL CHECK (source IN ('provider','reconciliation')),
  finality TEXT NOT NULL CHECK (finality IN ('reported','confirmed')),
  evidence TEXT NOT NULL DEFAULT '',
  booked_at INTEGER NOT NULL
);
INSERT INTO usage_events_v3 (seq, id, allocation_id, request_id, provider_request_id, input_tokens,
  output_tokens, source, finality, evidence, booked_at)
  SELECT seq, id, allocation_id, request_id, provider_request_id, input_tokens, output_tokens,
  source, finality, evidence, booked_at FROM usage_events;
DROP TABLE usage_events;
ALTER TABLE usage_events_v3 RENAME TO usage_events;
CREATE INDEX usage_events_allocation ON usage_events (allocation_id, seq);
ALTER TABLE requests DROP COLUMN booked_event_id;
)sql",
    // 4: the request path's writes reach these tables through the operation log (oplog.h);
    // the last record applied is kept here, in the same transaction as its rows.
    R"sql(
CREATE TABLE oplog_applied (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);
INSERT INTO oplog_applied VALUES (1, 0);
)sql",
    // 5: requests, rebuilt for its two costs per row:
    //  - SQLite checks `state IN (four values)` by building a temporary table on every
    //    insert and update (an in-memory B-tree, one of the applier's largest costs); the
    //    same check as comparisons builds nothing;
    //  - WITHOUT ROWID: the table is its id's B-tree, one B-tree less per request (ids are
    //    time-ordered, so rows still append).
    R"sql(
CREATE TABLE requests_v5 (
  id TEXT PRIMARY KEY,
  allocation_id TEXT NOT NULL REFERENCES allocations(id),
  key_id TEXT NOT NULL,
  state TEXT NOT NULL
    CHECK (state = 'in_flight' OR state = 'booked' OR state = 'usage_pending' OR state = 'failed'),
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  model TEXT NOT NULL,
  stream INTEGER NOT NULL,
  hold_input INTEGER NOT NULL CHECK (hold_input >= 0),
  hold_output INTEGER NOT NULL CHECK (hold_output >= 0),
  provider_request_id TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
INSERT INTO requests_v5 (id, allocation_id, key_id, state, started_at, finished_at, model, stream,
  hold_input, hold_output, provider_request_id)
  SELECT id, allocation_id, key_id, state, started_at, finished_at, model, stream, hold_input,
  hold_output, provider_request_id FROM requests;
DROP TABLE requests;
ALTER TABLE requests_v5 RENAME TO requests;
CREATE INDEX requests_allocation_started ON requests (allocation_id, started_at);
CREATE INDEX requests_in_flight ON requests (started_at) WHERE state = 'in_flight';
)sql",
    // 6: no index on usage_events.request_id. Nothing looks an event up by its request; the
    // index only kept one event per request, at one B-tree insert per booking. As for the
    // booking key
    // (migration 3), the ledger decides it: a request is booked from in_flight or
    // usage_pending once, under its allocation's lock; `cairva audit` checks it.
    R"sql(
CREATE TABLE usage_events_v6 (
  seq INTEGER PRIMARY KEY,  -- booking order; events are never deleted, so never reused
  id TEXT NOT NULL UNIQUE,
  allocation_id TEXT NOT NULL REFERENCES allocations(id),
  request_id TEXT NOT NULL REFERENCES requests(id),
  provider_request_id TEXT NOT NULL,
  input_tokens INTEGER NOT NULL CHECK (input_tokens >= 0),
  output_tokens INTEGER NOT NULL CHECK (output_tokens >= 0),
  source TEXT NOT NULL CHECK (source IN ('provider','reconciliation')),
  finality TEXT NOT NULL CHECK (finality IN ('reported','confirmed')),
  evidence TEXT NOT NULL DEFAULT '',
  booked_at INTEGER NOT NULL
);
INSERT INTO usage_events_v6 (seq, id, allocation_id, request_id, provider_request_id, input_tokens,
  output_tokens, source, finality, evidence, booked_at)
  SELECT seq, id, allocation_id, request_id, provider_request_id, input_tokens, output_tokens,
  source, finality, evidence, booked_at FROM usage_events;
DROP TABLE usage_events;
ALTER TABLE usage_events_v6 RENAME TO usage_events;
CREATE INDEX usage_events_allocation ON usage_events (allocation_id, seq);
)sql",
    // 7: an agreement's service_tier allow-list (SPEC §2), kept as its models are.
    R"sql(
CREATE TABLE agreement_service_tiers (
  agreement_id TEXT NOT NULL REFERENCES agreements(id),
  position INTEGER NOT NULL,
  tier TEXT NOT NULL,
  PRIMARY KEY (agreement_id, position)
);
)sql",
    // 8: a request's reported_usage: counts a provider reported that were not booked
    // (core/settlement.h), NULL when none.
    R"sql(
ALTER TABLE requests ADD COLUMN reported_input INTEGER;
ALTER TABLE requests ADD COLUMN reported_output INTEGER;
ALTER TABLE requests ADD COLUMN reported_provider_request_id TEXT;
)sql",
    // 9: operating at volume (SPEC-CONSOLE).
    //  - requests.seq numbers requests in the order the applier wrote them (the order of
    //    the one writer's queue): listings across allocations page by it and never skip a
    //    row written later. start_ordinal numbers an allocation's requests 1, 2, … in start
    //    order (started_at never runs backwards per allocation): a usage series counts the
    //    starts before a time as one index probe (store/usage_series.h). Both are assigned
    //    by the applier (writes.h, Sequencer).
    //  - failed and usage_pending requests, the few a series and a pending queue look for,
    //    get partial indexes (holding the state: a series counts from the index alone); a
    //    request that is booked never enters them.
    //  - usage_events takes adjustments (signed counts, `corrects`) and the allocation's
    //    running booked totals after each event (cum_input, cum_output) for the series;
    //    per allocation the index orders events as booked (booked_at, then seq).
    R"sql(
ALTER TABLE requests ADD COLUMN seq INTEGER;
ALTER TABLE requests ADD COLUMN start_ordinal INTEGER;
UPDATE requests SET seq = o.n, start_ordinal = o.k FROM (
  SELECT id, row_number() OVER (ORDER BY started_at, id) AS n,
         row_number() OVER (PARTITION BY allocation_id ORDER BY started_at, id) AS k FROM requests
) AS o WHERE requests.id = o.id;
DROP INDEX requests_allocation_started;
CREATE INDEX requests_allocation_started ON requests (allocation_id, started_at, start_ordinal);
CREATE INDEX requests_seq ON requests (seq);
CREATE INDEX requests_unsettled ON requests (allocation_id, started_at, start_ordinal, state)
  WHERE state = 'failed' OR state = 'usage_pending';
CREATE INDEX requests_unsettled_seq ON requests (state, seq)
  WHERE state = 'failed' OR state = 'usage_pending';
CREATE INDEX requests_pending_provider ON requests (provider_request_id, allocation_id)
  WHERE state = 'usage_pending';
CREATE TABLE usage_events_v9 (
  seq INTEGER PRIMARY KEY,  -- booking order; events are never deleted, so never reused
  id TEXT NOT NULL UNIQUE,
  allocation_id TEXT NOT NULL REFERENCES allocations(id),
  request_id TEXT NOT NULL REFERENCES requests(id),
  provider_request_id TEXT NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  source TEXT NOT NULL
    CHECK (source = 'provider' OR source = 'reconciliation' OR source = 'adjustment'),
  finality TEXT NOT NULL CHECK (finality = 'reported' OR finality = 'confirmed'),
  evidence TEXT NOT NULL DEFAULT '',
  booked_at INTEGER NOT NULL,
  corrects TEXT,
  cum_input INTEGER NOT NULL,
  cum_output INTEGER NOT NULL,
  CHECK (source = 'adjustment' OR (input_tokens >= 0 AND output_tokens >= 0)),
  CHECK ((source = 'adjustment') = (corrects IS NOT NULL))
);
INSERT INTO usage_events_v9 (seq, id, allocation_id, request_id, provider_request_id, input_tokens,
  output_tokens, source, finality, evidence, booked_at, corrects, cum_input, cum_output)
  SELECT seq, id, allocation_id, request_id, provider_request_id, input_tokens, output_tokens,
  source, finality, evidence, booked_at, NULL,
  SUM(input_tokens) OVER w, SUM(output_tokens) OVER w FROM usage_events
  WINDOW w AS (PARTITION BY allocation_id ORDER BY booked_at, seq ROWS UNBOUNDED PRECEDING);
DROP TABLE usage_events;
ALTER TABLE usage_events_v9 RENAME TO usage_events;
CREATE INDEX usage_events_allocation ON usage_events (allocation_id, booked_at, seq);
)sql",
};

Result<int> user_version(Db& db) {
  auto s = db.prepare("PRAGMA user_version");
  if (!s.ok()) return s.error();
  auto r = s->step();
  if (!r.ok()) return r.error();
  return static_cast<int>(s->col_i64(0));
}

Status check_foreign_keys(Db& db) {
  auto s = db.prepare("PRAGMA foreign_key_check");
  if (!s.ok()) return s.error();
  auto row = s->step();
  if (!row.ok()) return row.error();
  if (*row) {
    return make_error(ErrorCode::store_unavailable,
                      "sqlite: after migrating, a row of " + std::string(s->col_text(0)) +
                          " refers to a missing row of " + std::string(s->col_text(2)));
  }
  return {};
}

}  // namespace

int schema_version_latest() { return static_cast<int>(migrations.size()); }

Status prepare_database(Db& db, bool sync_full, int up_to_version) {
  if (Status s = db.exec("PRAGMA journal_mode=WAL"); !s.ok()) return s;
  if (Status s = db.exec(sync_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
      !s.ok()) {
    return s;
  }
  // Foreign keys are checked once a migration ran, and not enforced on each write: the
  // writer stores only rows the store built (a request after its allocation, an event in
  // the transaction of its request), and enforcement probed a parent B-tree three times
  // per request, for nothing. `cairva audit` checks every key (sqlite_audit.cpp). Off also lets a
  // migration rebuild a referenced table (5), which enforcement would refuse.
  if (Status s = db.exec("PRAGMA foreign_keys=OFF"); !s.ok()) return s;
  auto v = user_version(db);
  if (!v.ok()) return v.error();
  if (*v > schema_version_latest()) {
    return make_error(
        ErrorCode::store_unavailable,
        "sqlite: schema version " + std::to_string(*v) + " is newer than this cairva knows (" +
            std::to_string(schema_version_latest()) +
            "): a newer cairva migrated it; run that version or newer (nothing was changed)");
  }
  const int target = std::min(up_to_version, schema_version_latest());
  for (int i = *v; i < target; ++i) {
    const std::string sql = std::string("BEGIN IMMEDIATE;") + migrations[i] +
                            "PRAGMA user_version=" + std::to_string(i + 1) + ";COMMIT;";
    if (Status s = db.exec(sql); !s.ok()) {
      (void)db.exec("ROLLBACK");
      return s;
    }
  }
  if (*v < target) return check_foreign_keys(db);
  return {};
}

}  // namespace cairva::store::sqlite
