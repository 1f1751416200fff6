// The embedded store's schema and its migrations (PRAGMA user_version counts the applied
// ones). Each migration runs once, in its own transaction, in order.
#pragma once

#include "store/sqlite/db.h"

namespace cairva::store::sqlite {

// The number of migrations this build knows.
int schema_version_latest();

// Sets WAL and `synchronous` (FULL when sync_full, else NORMAL), then migrates to
// `up_to_version` (tests build older files with a smaller one) and checks the foreign keys
// if a migration ran. Leaves foreign keys unenforced on `db` (schema.cpp says why).
Status prepare_database(Db& db, bool sync_full, int up_to_version);
inline Status prepare_database(Db& db, bool sync_full) {
  return prepare_database(db, sync_full, schema_version_latest());
}

}  // namespace cairva::store::sqlite
