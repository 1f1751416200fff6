// The store factory: opens the backend a store URL names.
#pragma once

#include <memory>

#include "base/time.h"
#include "store/store.h"

namespace cairva::store {

// `sqlite://PATH` (relative to the working directory unless PATH begins with '/') → the
// embedded store; `postgresql://…` or `postgres://…` → PostgreSQL; anything else →
// Error{invalid_request, "store.url: …"}.
Result<std::unique_ptr<Store>> open_store(const StoreOptions& options,
                                          std::shared_ptr<const Clock> clock);

// `cairva audit`: an embedded store is audited read-only beside any gateway that owns it
// (SqliteStore::audit_file); PostgreSQL is opened as usual and audited.
Result<AuditReport> audit_store(const StoreOptions& options, std::shared_ptr<const Clock> clock);

// The schema versions this build creates and migrates to, per backend, for
// `cairva --version`.
struct SchemaVersions {
  int sqlite = 0;
  int postgres = 0;
};
SchemaVersions schema_versions();

}  // namespace cairva::store
