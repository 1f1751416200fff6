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

// Applies the missing migrations up to `target` (tests: an older schema to migrate from).
// Safe to call concurrently from several processes.
Status migrate(Connection& c, int target = schema_version_latest());

}  // namespace cairva::store::pg
