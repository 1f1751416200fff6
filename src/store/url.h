// What store.url (and --store) may name, read once for every caller: the config checks a
// URL with these and open_store dispatches on them. Header-only and standard library only,
// so that config can include it without linking the store.
#pragma once

#include <optional>
#include <string_view>

namespace cairva::store {

inline constexpr std::string_view sqlite_scheme = "sqlite://";
// libpq takes both spellings of a PostgreSQL URI as they are.
inline constexpr std::string_view postgresql_scheme = "postgresql://";
inline constexpr std::string_view postgres_scheme = "postgres://";

// The file path of a sqlite:// URL (possibly empty: a URL with no path), or nullopt when
// `url` is not one.
inline std::optional<std::string_view> sqlite_path(std::string_view url) {
  if (!url.starts_with(sqlite_scheme)) return std::nullopt;
  return url.substr(sqlite_scheme.size());
}

inline bool is_postgres_url(std::string_view url) {
  return url.starts_with(postgresql_scheme) || url.starts_with(postgres_scheme);
}

}  // namespace cairva::store
