#include "store/open.h"

#include <string_view>

#include "store/postgres/postgres_store.h"
#include "store/postgres/schema.h"
#include "store/sqlite/schema.h"
#include "store/sqlite/sqlite_store.h"
#include "store/url.h"

namespace cairva::store {
Result<std::unique_ptr<Store>> open_store(const StoreOptions& options,
                                          std::shared_ptr<const Clock> clock) {
  const std::string& url = options.url;
  if (const auto path = sqlite_path(url)) {
    if (path->empty())
      return make_error(ErrorCode::invalid_request, "store.url: sqlite:// needs a file path");
    auto s = sqlite::SqliteStore::open(std::string(*path), options, std::move(clock));
    if (!s.ok()) return s.error();
    return std::unique_ptr<Store>(std::move(s).value());
  }
  if (is_postgres_url(url)) {
    auto s = pg::PostgresStore::open(options, std::move(clock));
    if (!s.ok()) return s.error();
    return std::unique_ptr<Store>(std::move(s).value());
  }
  return make_error(ErrorCode::invalid_request,
                    "store.url: expected sqlite://PATH or postgresql://..., got \"" + url + "\"");
}

Result<AuditReport> audit_store(const StoreOptions& options, std::shared_ptr<const Clock> clock) {
  if (const auto path = sqlite_path(options.url)) {
    if (path->empty())
      return make_error(ErrorCode::invalid_request, "store.url: sqlite:// needs a file path");
    return sqlite::SqliteStore::audit_file(std::string(*path), options, clock);
  }
  StoreOptions read_only = options;
  read_only.migrate = false;
  auto store = open_store(read_only, std::move(clock));
  if (!store.ok()) return store.error();
  return (*store)->audit();
}

SchemaVersions schema_versions() {
  return SchemaVersions{sqlite::schema_version_latest(), pg::schema_version_latest()};
}

}  // namespace cairva::store
