// The PostgreSQL schema as numbered migrations, applied at open. Several processes
// starting at once apply each migration exactly once: the runner holds a session-level
// advisory lock (per database and schema) while it reads schema_migrations and applies
// what is missing, each migration in its own transaction with its version row.
#pragma once

#include "base/result.h"
#include "store/postgres/pg.h"

namespace cairva::store::pg {

// The number of migrations this build knows (schema_migrations holds 1..this).
int schema_version_latest();

// The version the database's schema is at (0: none created yet). Reads only.
Result<int> schema_version(Connection& c);

// Whether this build may serve a schema at `version`: any version up to its own, and a newer
// one only when every migration above its own was recorded as compatible with it (a rolling
// upgrade's older gateways). Reads only.
Status check_compatible(Connection& c, int version);

// Applies the missing migrations up to `target` (tests: an older schema to migrate from).
// Safe to call concurrently from several processes. Refuses, changing nothing, a schema
// this build may not serve (check_compatible) and a migration that a gateway still serving
// the database (hold_gateway_lock) cannot use.
Status migrate(Connection& c, int target = schema_version_latest());

// Marks a serving gateway of this build for the life of the connection (a shared advisory
// lock naming its schema version), so that newer gateways do not migrate under it.
Status hold_gateway_lock(Connection& c);

}  // namespace cairva::store::pg
