#include "store/postgres/schema.h"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace cairva::store::pg {
namespace {

// Times are bigint microseconds since the Unix epoch (UnixMicros), the same integers the
// rest of the code uses, so no time-zone conversion can creep in.
//
// allocations keeps booked_* and held_* as columns, updated in the same transaction and
// under the same row lock as the events and requests they sum: admission then reads them
// from the locked row in O(1) instead of summing an ever-growing ledger; audit() checks
// that they still equal the sums (conservation). event_seq numbers an allocation's events
// under its row lock, so listing by (allocation_id, seq) never skips an event that another
// process committed late (a global serial can commit out of order).
constexpr const char* migration_1 = R"SQL(
CREATE TABLE agreements (
  id text PRIMARY KEY,
  supplier text NOT NULL,
  buyer text NOT NULL,
  provider text NOT NULL,
  models text NOT NULL DEFAULT '',  -- newline-separated allow-list
  input_tokens bigint NOT NULL,
  output_tokens bigint NOT NULL,
  starts_at bigint NOT NULL,
  ends_at bigint NOT NULL,
  requests_per_minute bigint NOT NULL,
  tokens_per_minute bigint NOT NULL,
  max_concurrency bigint NOT NULL,
  state text NOT NULL,
  created_at bigint NOT NULL
);
CREATE TABLE allocations (
  id text PRIMARY KEY,
  agreement_id text NOT NULL UNIQUE REFERENCES agreements (id),
  state text NOT NULL,
  booked_input bigint NOT NULL DEFAULT 0,
  booked_output bigint NOT NULL DEFAULT 0,
  held_input bigint NOT NULL DEFAULT 0,
  held_output bigint NOT NULL DEFAULT 0,
  event_seq bigint NOT NULL DEFAULT 0,
  created_at bigint NOT NULL,
  seq bigserial NOT NULL  -- creation order, for listings (ties of created_at)
);
CREATE TABLE api_keys (
  id text PRIMARY KEY,
  allocation_id text NOT NULL REFERENCES allocations (id),
  secret_hash text NOT NULL UNIQUE,
  revoked boolean NOT NULL DEFAULT false,
  created_at bigint NOT NULL
);
CREATE INDEX api_keys_allocation ON api_keys (allocation_id);
CREATE TABLE requests (
  id text PRIMARY KEY,
  allocation_id text NOT NULL REFERENCES allocations (id),
  key_id text NOT NULL,
  state text NOT NULL,
  started_at bigint NOT NULL,
  finished_at bigint,
  model text NOT NULL,
  stream boolean NOT NULL,
  hold_input bigint NOT NULL,
  hold_output bigint NOT NULL,
  provider_request_id text NOT NULL DEFAULT '',
  seq bigserial NOT NULL  -- admission order, for listings (ties of started_at)
);
-- requests_per_minute: starts in the trailing window.
CREATE INDEX requests_started ON requests (allocation_id, started_at);
-- max_concurrency and usage_pending counts: only the open requests.
CREATE INDEX requests_open ON requests (allocation_id, started_at)
  WHERE state IN ('in_flight', 'usage_pending');
-- sweep_stale across every allocation.
CREATE INDEX requests_in_flight ON requests (started_at) WHERE state = 'in_flight';
CREATE INDEX requests_state ON requests (state, allocation_id);
CREATE TABLE usage_events (
  id text PRIMARY KEY,
  allocation_id text NOT NULL REFERENCES allocations (id),
  seq bigint NOT NULL,
  request_id text NOT NULL UNIQUE REFERENCES requests (id),
  provider_request_id text NOT NULL,
  input_tokens bigint NOT NULL,
  output_tokens bigint NOT NULL,
  source text NOT NULL,
  finality text NOT NULL,
  evidence text NOT NULL DEFAULT '',
  booked_at bigint NOT NULL,
  -- Commit-independent global order for listings across allocations (may commit out of
  -- order between processes; the per-allocation seq is the one that never skips).
  gseq bigserial NOT NULL,
  UNIQUE (allocation_id, provider_request_id),
  UNIQUE (allocation_id, seq)
);
-- tokens_per_minute: bookings in the trailing window.
CREATE INDEX usage_events_booked ON usage_events (allocation_id, booked_at);
CREATE INDEX usage_events_global ON usage_events (booked_at, gseq);
CREATE TABLE conflicts (
  id text PRIMARY KEY,
  allocation_id text NOT NULL REFERENCES allocations (id),
  request_id text NOT NULL,
  provider_request_id text NOT NULL,
  reported_input bigint NOT NULL,
  reported_output bigint NOT NULL,
  booked_input bigint NOT NULL,
  booked_output bigint NOT NULL,
  recorded_at bigint NOT NULL,
  seq bigserial NOT NULL  -- recording order, for listings
);
CREATE INDEX conflicts_allocation ON conflicts (allocation_id, recorded_at);
)SQL";

// The trailing windows in O(log n) instead of counting every row in them (an admission on a
// busy allocation counted tens of thousands: admissions/s fell as the window filled).
// Under the allocation's row lock each request takes the next start_ordinal (1, 2, …) and
// each event carries cum_tokens, the allocation's booked tokens up to and including it;
// times never run backwards per allocation (the store takes the later of the clock and the
// last start or booking). So in (time, ordinal) order the rows at or before any cutoff are a
// prefix, and a window's count or sum is the last row's figure minus that of the last row
// at or before the cutoff: two index probes. The existing rows get theirs in that order.
constexpr const char* migration_2 = R"SQL(
ALTER TABLE requests ADD COLUMN start_ordinal bigint;
UPDATE requests r SET start_ordinal = o.n FROM (
  SELECT id, row_number() OVER (PARTITION BY allocation_id ORDER BY started_at, seq) AS n FROM requests
) o WHERE r.id = o.id;
ALTER TABLE requests ALTER COLUMN start_ordinal SET NOT NULL;
DROP INDEX requests_started;
CREATE INDEX requests_started ON requests (allocation_id, started_at, start_ordinal);
ALTER TABLE usage_events ADD COLUMN cum_tokens bigint;
UPDATE usage_events e SET cum_tokens = o.c FROM (
  SELECT id, sum(input_tokens + output_tokens) OVER (
    PARTITION BY allocation_id ORDER BY booked_at, seq ROWS UNBOUNDED PRECEDING) AS c
  FROM usage_events
) o WHERE e.id = o.id;
ALTER TABLE usage_events ALTER COLUMN cum_tokens SET NOT NULL;
DROP INDEX usage_events_booked;
CREATE INDEX usage_events_booked ON usage_events (allocation_id, booked_at, seq);
)SQL";

// 3: an agreement's service_tier allow-list (SPEC §2), newline-separated as models is.
constexpr const char* migration_3 = R"SQL(
ALTER TABLE agreements ADD COLUMN service_tiers text NOT NULL DEFAULT '';
)SQL";

// 4: a request's reported_usage: counts a provider reported that were not booked
// (core/settlement.h), NULL when none.
constexpr const char* migration_4 = R"SQL(
ALTER TABLE requests ADD COLUMN reported_input bigint;
ALTER TABLE requests ADD COLUMN reported_output bigint;
ALTER TABLE requests ADD COLUMN reported_provider_request_id text;
)SQL";

// 5: operating at volume (SPEC-CONSOLE). Additive only: a gateway of schema 4 keeps working
// on it while a rolling upgrade goes on (its inserts get the new columns from defaults and a
// trigger).
//  - Listings across allocations page in commit order: each row keeps the id of the
//    transaction that wrote it (txid), and a page lists only rows of transactions older
//    than every writer still running, by (txid, seq). A row committed after a page was read
//    therefore sorts after it; a global serial alone can commit out of order between
//    processes. A writer is a transaction of this store that adds listed rows: it takes
//    ROW EXCLUSIVE on the empty table row_writers before it has a transaction id, so the
//    listings find the running ones in pg_locks (postgres_console.cpp), and a transaction
//    of anything else on the server (a session left open, another database) holds nothing
//    back. Within one allocation the row lock's orders serve: requests by
//    (started_at, start_ordinal), events by (booked_at, seq), conflicts by seq. (A schema-4
//    gateway takes no mark: while one still runs beside newer ones, a reader following a
//    listing across allocations may miss a row it adds late.)
//  - Failed and usage_pending requests, the few a usage series and a pending queue look for,
//    get partial indexes.
//  - Each event keeps the allocation's booked totals up to and including it (cum_input,
//    cum_output), as cum_tokens does for tokens_per_minute, so a usage series reads two
//    index probes per bucket (store/usage_series.h). A schema-4 gateway's inserts leave them
//    NULL: the trigger fills them from the locked allocation row, which its statement
//    updates after the insert.
//  - Adjustments (SPEC-CONSOLE §4b) are events of their own table: the booking key's and the
//    request's unique indexes on usage_events stay as schema-4 gateways use them. They take
//    the allocation's next event seq, and count toward no trailing window.
//  - Allocations are listed by seq, agreements with them, keys by a new seq; their creation
//    takes an advisory lock so that seq order is commit order (postgres_admin.cpp).
constexpr const char* migration_5 = R"SQL(
CREATE TABLE row_writers ();
ALTER TABLE requests ADD COLUMN txid bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX requests_commit_order ON requests (txid, seq);
CREATE INDEX requests_unsettled ON requests (allocation_id, started_at, start_ordinal) INCLUDE (state)
  WHERE state IN ('failed', 'usage_pending');
CREATE INDEX requests_unsettled_order ON requests (state, txid, seq)
  WHERE state IN ('failed', 'usage_pending');
CREATE INDEX requests_pending_provider ON requests (provider_request_id, allocation_id)
  WHERE state = 'usage_pending';
ALTER TABLE usage_events ADD COLUMN txid bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);
ALTER TABLE usage_events ADD COLUMN cum_input bigint;
ALTER TABLE usage_events ADD COLUMN cum_output bigint;
UPDATE usage_events e SET cum_input = o.ci, cum_output = o.co FROM (
  SELECT id, sum(input_tokens) OVER w AS ci, sum(output_tokens) OVER w AS co FROM usage_events
  WINDOW w AS (PARTITION BY allocation_id ORDER BY booked_at, seq ROWS UNBOUNDED PRECEDING)
) o WHERE e.id = o.id;
CREATE FUNCTION usage_events_running_totals() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  SELECT booked_input + NEW.input_tokens, booked_output + NEW.output_tokens
    INTO NEW.cum_input, NEW.cum_output FROM allocations WHERE id = NEW.allocation_id;
  RETURN NEW;
END
$fn$;
CREATE TRIGGER usage_events_running_totals BEFORE INSERT ON usage_events FOR EACH ROW
  WHEN (NEW.cum_input IS NULL) EXECUTE FUNCTION usage_events_running_totals();
ALTER TABLE usage_events ALTER COLUMN cum_input SET NOT NULL;
ALTER TABLE usage_events ALTER COLUMN cum_output SET NOT NULL;
DROP INDEX usage_events_global;
CREATE INDEX usage_events_commit_order ON usage_events (txid, gseq);
CREATE TABLE adjustments (
  id text PRIMARY KEY,
  allocation_id text NOT NULL REFERENCES allocations (id),
  seq bigint NOT NULL,
  corrects text NOT NULL REFERENCES usage_events (id),
  request_id text NOT NULL,
  provider_request_id text NOT NULL,
  input_tokens bigint NOT NULL,
  output_tokens bigint NOT NULL,
  evidence text NOT NULL,
  booked_at bigint NOT NULL,
  cum_input bigint NOT NULL,
  cum_output bigint NOT NULL,
  gseq bigint NOT NULL DEFAULT nextval('usage_events_gseq_seq'),
  txid bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
  UNIQUE (allocation_id, seq)
);
CREATE INDEX adjustments_booked ON adjustments (allocation_id, booked_at, seq);
CREATE INDEX adjustments_commit_order ON adjustments (txid, gseq);
ALTER TABLE conflicts ADD COLUMN txid bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX conflicts_commit_order ON conflicts (txid, seq);
CREATE INDEX conflicts_allocation_order ON conflicts (allocation_id, seq);
ALTER TABLE api_keys ADD COLUMN seq bigserial;
CREATE INDEX api_keys_allocation_order ON api_keys (allocation_id, seq);
)SQL";

constexpr std::array<const char*, 5> migrations = {migration_1, migration_2, migration_3,
                                                   migration_4, migration_5};

// Rolling upgrades. oldest_compatible[n - 1] is the oldest schema version whose gateways keep
// working once migration n is applied: n - 1 for a migration that only adds (a column with a
// default or nullable, a table, an index, a trigger that fills what older inserts leave out),
// n for one older gateways cannot write through (2: start_ordinal and cum_tokens are NOT NULL
// without a default). Each version's figure is recorded in the database
// (schema_compatibility) as it is applied, so that a gateway older than the schema can tell
// whether it may serve it; a serving gateway holds a shared advisory lock naming its schema
// version, so that a newer one never applies a migration a running gateway cannot use.
constexpr std::array<int, 5> oldest_compatible = {1, 2, 2, 3, 4};
static_assert(oldest_compatible.size() == migrations.size());

// The serving gateways' advisory locks: (hash of the schema's name and this tag, version).
constexpr const char* gateway_lock_key = "hashtext(current_schema() || ':cairva-gateway')";

// The schema versions of the gateways serving this database (those of this build or newer:
// older builds take no lock), lowest first.
Result<std::vector<int>> running_gateway_versions(Connection& c) {
  auto r = c.exec(
      std::string("SELECT DISTINCT objid::bigint FROM pg_locks WHERE locktype = 'advisory'"
                  " AND granted AND objsubid = 2"
                  " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                  " AND classid = ") +
      gateway_lock_key + "::oid ORDER BY 1");
  if (!r.ok()) return r.error();
  std::vector<int> versions;
  versions.reserve(static_cast<size_t>(rows(*r)));
  for (int i = 0; i < rows(*r); ++i) versions.push_back(static_cast<int>(get_i64(r->get(), i, 0)));
  return versions;
}

// First key of the two-key advisory lock; the second is the schema's name hash, so that
// separate schemas (tests) migrate independently.
constexpr int migration_lock_key = 0x43415256;  // "CARV"

}  // namespace

int schema_version_latest() { return static_cast<int>(migrations.size()); }

Result<int> schema_version(Connection& c) {
  auto exists = c.exec("SELECT to_regclass('schema_migrations') IS NOT NULL");
  if (!exists.ok()) return exists.error();
  if (std::string_view(PQgetvalue(exists->get(), 0, 0)) != "t") return 0;
  auto v = c.exec("SELECT COALESCE(max(version), 0) FROM schema_migrations");
  if (!v.ok()) return v.error();
  return static_cast<int>(get_i64(v->get(), 0, 0));
}

Status check_compatible(Connection& c, int version) {
  const int latest = schema_version_latest();
  if (version <= latest) return {};
  // The figures of the versions above this build's, as the newer builds recorded them; a
  // version without one (written by a build that recorded none) counts as incompatible.
  auto exists = c.exec("SELECT to_regclass('schema_compatibility') IS NOT NULL");
  if (!exists.ok()) return exists.error();
  int64_t needs = version;
  if (std::string_view(PQgetvalue(exists->get(), 0, 0)) == "t") {
    auto r = c.exec(
        "SELECT count(*), COALESCE(max(oldest_compatible), 0) FROM schema_compatibility"
        " WHERE version > " +
        std::to_string(latest));
    if (!r.ok()) return r.error();
    if (get_i64(r->get(), 0, 0) == version - latest) needs = get_i64(r->get(), 0, 1);
  }
  if (needs <= latest) return {};
  return make_error(
      ErrorCode::store_unavailable,
      "postgres: the schema is at version " + std::to_string(version) +
          ", newer than this cairva's (" + std::to_string(latest) +
          "), and gateways older than schema version " + std::to_string(needs) +
          " cannot use it: run a cairva of that version or newer (nothing was changed)");
}

Status hold_gateway_lock(Connection& c) {
  auto r = c.exec(std::string("SELECT pg_advisory_lock_shared(") + gateway_lock_key + ", " +
                  std::to_string(schema_version_latest()) + ")");
  if (!r.ok()) return r.error();
  return {};
}

Status migrate(Connection& c, int target) {
  const std::string key = std::to_string(migration_lock_key);
  auto locked = c.exec("SELECT pg_advisory_lock(" + key + ", hashtext(current_schema()))");
  if (!locked.ok()) return locked.error();
  auto apply = [&]() -> Status {
    auto t = c.exec(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
    if (!t.ok()) return t.error();
    auto v = c.exec("SELECT COALESCE(max(version), 0) FROM schema_migrations");
    if (!v.ok()) return v.error();
    const int64_t have = get_i64(v->get(), 0, 0);
    if (Status ok = check_compatible(c, static_cast<int>(have)); !ok.ok()) return ok;
    // Each applied version's figure, for the older gateways of a later rolling upgrade.
    auto compat = c.exec(
        "CREATE TABLE IF NOT EXISTS schema_compatibility ("
        " version integer PRIMARY KEY, oldest_compatible integer NOT NULL)");
    if (!compat.ok()) return compat.error();
    for (int64_t n = 1; n <= std::min<int64_t>(have, schema_version_latest()); ++n) {
      auto known = c.exec("INSERT INTO schema_compatibility VALUES (" + std::to_string(n) + ", " +
                          std::to_string(oldest_compatible[static_cast<size_t>(n - 1)]) +
                          ") ON CONFLICT (version) DO NOTHING");
      if (!known.ok()) return known.error();
    }
    const int64_t up_to = std::min(target, schema_version_latest());
    if (up_to > have) {
      auto running = running_gateway_versions(c);
      if (!running.ok()) return running.error();
      for (int64_t n = have + 1; n <= up_to; ++n) {
        const int needs = oldest_compatible[static_cast<size_t>(n - 1)];
        if (!running->empty() && running->front() < needs) {
          return make_error(ErrorCode::store_unavailable,
                            "postgres: migrating the schema to version " + std::to_string(n) +
                                " would break the gateways of schema version " +
                                std::to_string(running->front()) +
                                " still serving this database (they cannot use it): stop them,"
                                " then start this cairva (nothing was changed)");
        }
      }
    }
    for (int64_t n = have + 1; n <= up_to; ++n) {
      std::string sql = "BEGIN;\n";
      sql += migrations[static_cast<size_t>(n - 1)];
      sql += "\nINSERT INTO schema_migrations (version) VALUES (" + std::to_string(n) + ");";
      sql += "\nINSERT INTO schema_compatibility VALUES (" + std::to_string(n) + ", " +
             std::to_string(oldest_compatible[static_cast<size_t>(n - 1)]) + ");\nCOMMIT;";
      auto r = c.exec(sql);
      if (!r.ok()) {
        (void)c.exec("ROLLBACK");
        return r.error();
      }
    }
    return {};
  };
  Status st = apply();
  auto unlocked = c.exec("SELECT pg_advisory_unlock(" + key + ", hashtext(current_schema()))");
  if (!st.ok()) return st;
  if (!unlocked.ok()) return unlocked.error();
  return {};
}

}  // namespace cairva::store::pg
