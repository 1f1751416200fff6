// Test-only helper (not linked into the library): a fresh PostgreSQL schema per test in
// the database named by env CAIRVA_TEST_PG_URL (scripts/pg-test-cluster.sh url), dropped
// at the end. The store reaches it through the URL's options=-csearch_path=….
#pragma once

#include <libpq-fe.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "base/ids.h"

namespace cairva::store::pg::testing {

inline constexpr const char* test_url_env = "CAIRVA_TEST_PG_URL";
inline constexpr const char* missing_url_message =
    "CAIRVA_TEST_PG_URL is not set: start a cluster with `scripts/pg-test-cluster.sh start` and "
    "export CAIRVA_TEST_PG_URL=$(scripts/pg-test-cluster.sh url)";

inline std::optional<std::string> base_url() {
  const char* v = std::getenv(test_url_env);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

// Runs one SQL command on `url`; returns "" or the error text.
inline std::string exec_sql(const std::string& url, const std::string& sql) {
  PGconn* c = PQconnectdb(url.c_str());
  std::string err;
  if (PQstatus(c) != CONNECTION_OK) {
    err = PQerrorMessage(c);
  } else {
    PQsetNoticeProcessor(
        c, [](void*, const char*) {}, nullptr);
    PGresult* r = PQexec(c, sql.c_str());
    auto st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) err = PQresultErrorMessage(r);
    PQclear(r);
  }
  PQfinish(c);
  return err;
}

// Runs a query returning one bigint; -1 on error.
inline long long query_i64(const std::string& url, const std::string& sql) {
  PGconn* c = PQconnectdb(url.c_str());
  long long v = -1;
  if (PQstatus(c) == CONNECTION_OK) {
    PGresult* r = PQexec(c, sql.c_str());
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
      const char* text = PQgetvalue(r, 0, 0);
      std::from_chars(text, text + std::strlen(text), v);  // not a number: v stays -1
    }
    PQclear(r);
  }
  PQfinish(c);
  return v;
}

// A schema of its own for one test. ok() is false (with error()) when the database is
// unreachable or the env var is unset.
class TestSchema {
 public:
  TestSchema() {
    auto base = base_url();
    if (!base) {
      error_ = missing_url_message;
      return;
    }
    base_ = *base;
    name_ = "cv_t_" + new_id("s").substr(2);
    error_ = exec_sql(base_, "CREATE SCHEMA " + name_);
  }
  ~TestSchema() {
    if (ok()) (void)exec_sql(base_, "DROP SCHEMA " + name_ + " CASCADE");
  }
  TestSchema(const TestSchema&) = delete;
  TestSchema& operator=(const TestSchema&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& name() const { return name_; }
  // The database URL with this schema as search_path.
  std::string url() const {
    return base_ + (base_.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" +
           name_;
  }

 private:
  std::string base_;
  std::string name_;
  std::string error_;
};

}  // namespace cairva::store::pg::testing
