// Thin RAII layer over libpq: owned results, text parameters, lazily prepared
// statements per connection, and a transaction guard. Every libpq failure becomes
// Error{store_unavailable} (SPEC: store down is a 503), with the SQLSTATE kept.
//
// Thread safety: a Connection is used by one thread at a time (the pool hands it out).
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "base/result.h"

namespace cairva::store::pg {

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

// SQLSTATEs the store reacts to.
inline constexpr std::string_view sqlstate_unique_violation = "23505";
inline constexpr std::string_view sqlstate_deadlock = "40P01";
inline constexpr std::string_view sqlstate_serialization = "40001";

// A prepared statement: a stable name and its SQL.
struct Statement {
  const char* name;
  std::string sql;
};

// Positional text parameters ($1, $2, ...).
class Params {
 public:
  Params& text(std::string_view s);
  Params& i64(int64_t v);
  Params& boolean(bool v);
  Params& null();
  Params& opt_i64(std::optional<int64_t> v) { return v ? i64(*v) : null(); }
  Params& opt_text(const std::optional<std::string>& v) { return v ? text(*v) : null(); }

  int size() const { return static_cast<int>(values_.size()); }
  std::vector<const char*> pointers() const;
  // A text value holds a NUL byte: libpq would cut it there (text values travel as C
  // strings) and PostgreSQL's text cannot hold one, so Connection refuses to send it.
  bool has_nul() const { return has_nul_; }

 private:
  std::vector<std::optional<std::string>> values_;
  bool has_nul_ = false;
};

// Row access helpers (column values as text; NULL → default/nullopt).
std::string get_text(const PGresult* r, int row, int col);
int64_t get_i64(const PGresult* r, int row, int col);
bool get_bool(const PGresult* r, int row, int col);
std::optional<int64_t> get_opt_i64(const PGresult* r, int row, int col);
inline int rows(const PgResult& r) { return PQntuples(r.get()); }

class Connection {
 public:
  static Result<std::unique_ptr<Connection>> open(const std::string& url);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // A simple (unparameterised) command, possibly several statements.
  Result<PgResult> exec(std::string_view sql);
  // A prepared statement, prepared on this connection at first use.
  Result<PgResult> run(const Statement& st, const Params& p);

  // One step of a pipeline: a prepared statement with its parameters, or raw SQL.
  struct Step {
    const Statement* st = nullptr;
    const Params* params = nullptr;
    const char* sql = nullptr;
  };
  // Sends every step in one libpq pipeline (one network round trip) and returns one result
  // per step; the first failure is the error (later steps are skipped by the server).
  Result<std::vector<PgResult>> pipeline(const std::vector<Step>& steps);
  // Sends the prepared statement and `after` (raw SQL or nullptr) in one libpq pipeline:
  // one network round trip instead of two. Returns the statement's result; the first
  // failure is the error.
  Result<PgResult> run_pipelined(const Statement& st, const Params& p, const char* after);

  bool healthy() const { return PQstatus(conn_) == CONNECTION_OK; }
  // Fit to hand to the next caller: connected, no transaction left open, not in pipeline mode.
  bool reusable() const {
    return healthy() && PQtransactionStatus(conn_) == PQTRANS_IDLE &&
           PQpipelineStatus(conn_) == PQ_PIPELINE_OFF;
  }
  // SQLSTATE of the last failed command since clear_sqlstate() ("" when none).
  const std::string& last_sqlstate() const { return last_sqlstate_; }
  void clear_sqlstate() { last_sqlstate_.clear(); }

 private:
  explicit Connection(PGconn* c) : conn_(c) {}
  Result<PgResult> check(PGresult* raw, std::string_view what);
  Status prepare(const Statement& st);

  PGconn* conn_;
  std::unordered_set<std::string> prepared_;
  std::string last_sqlstate_;
};

// BEGIN on construction; ROLLBACK on destruction unless commit() succeeded.
class Transaction {
 public:
  explicit Transaction(Connection& c) : c_(c) {}
  ~Transaction();
  Status begin(std::string_view sql = "BEGIN");
  Status commit();
  // BEGIN and two statements in one round trip: the second runs after the first has
  // finished (e.g. after the row lock is granted) with a snapshot taken then.
  Result<std::vector<PgResult>> begin_with(const Statement& first, const Params& p1,
                                           const Statement& second, const Params& p2);
  // BEGIN and every step in one round trip, each after the one before has finished; one
  // result per step.
  Result<std::vector<PgResult>> begin_with_all(std::vector<Connection::Step> steps);
  // The transaction's last statement and COMMIT in one round trip (shorter row-lock hold);
  // `result`, when given, gets the statement's result.
  Status run_and_commit(const Statement& st, const Params& p, PgResult* result = nullptr);
  // The transaction's last statements and COMMIT in one round trip; COMMIT alone when
  // `steps` is empty.
  Status run_all_and_commit(std::vector<Connection::Step> steps);

 private:
  Connection& c_;
  bool open_ = false;
};

}  // namespace cairva::store::pg
