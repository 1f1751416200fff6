// The embedded store's schema and its migrations (PRAGMA user_version counts the applied
// ones). Each migration runs once, in its own transaction, in order.
#pragma once

#include "store/sqlite/db.h"

namespace cairva::store::sqlite {

// Sets WAL and `synchronous` (FULL when sync_full, else NORMAL), then migrates.
Status prepare_database(Db& db, bool sync_full);

// The number of migrations this build knows.
int schema_version_latest();

}  // namespace cairva::store::sqlite
