#include "store/postgres/pg.h"

#include <charconv>
#include <optional>
#include <string_view>
#include <vector>

namespace cairva::store::pg {

Params& Params::text(std::string_view s) {
  has_nul_ = has_nul_ || s.find('\0') != std::string_view::npos;
  values_.emplace_back(std::string(s));
  return *this;
}
Params& Params::i64(int64_t v) {
  values_.emplace_back(std::to_string(v));
  return *this;
}
Params& Params::boolean(bool v) {
  values_.emplace_back(v ? "t" : "f");
  return *this;
}
Params& Params::null() {
  values_.emplace_back(std::nullopt);
  return *this;
}

std::vector<const char*> Params::pointers() const {
  std::vector<const char*> out;
  out.reserve(values_.size());
  for (const auto& v : values_) out.push_back(v ? v->c_str() : nullptr);
  return out;
}

std::string get_text(const PGresult* r, int row, int col) {
  if (PQgetisnull(r, row, col)) return {};
  return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
}

std::optional<int64_t> get_opt_i64(const PGresult* r, int row, int col) {
  if (PQgetisnull(r, row, col)) return std::nullopt;
  const char* s = PQgetvalue(r, row, col);
  const char* end = s + PQgetlength(r, row, col);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s, end, v);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

int64_t get_i64(const PGresult* r, int row, int col) {
  return get_opt_i64(r, row, col).value_or(0);
}

bool get_bool(const PGresult* r, int row, int col) {
  return !PQgetisnull(r, row, col) && PQgetvalue(r, row, col)[0] == 't';
}

Result<std::unique_ptr<Connection>> Connection::open(const std::string& url) {
  PGconn* c = PQconnectdb(url.c_str());
  if (c == nullptr) return make_error(ErrorCode::store_unavailable, "postgres: out of memory");
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = std::string("postgres: connect failed: ") + PQerrorMessage(c);
    PQfinish(c);
    return make_error(ErrorCode::store_unavailable, std::move(msg));
  }
  // Notices ("table already exists, skipping", …) are expected chatter: keep them off stderr.
  PQsetNoticeProcessor(
      c, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<Connection>(new Connection(c));
}

Connection::~Connection() { PQfinish(conn_); }

Result<PgResult> Connection::check(PGresult* raw, std::string_view what) {
  PgResult r(raw);
  auto st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
  // The first failure is the cause; a later ROLLBACK's success must not hide it.
  const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
  if (last_sqlstate_.empty()) last_sqlstate_ = state ? state : "XXXXX";
  std::string msg = "postgres: ";
  msg += what;
  msg += ": ";
  msg += r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return make_error(ErrorCode::store_unavailable, std::move(msg));
}

Result<PgResult> Connection::exec(std::string_view sql) {
  std::string s(sql);
  return check(PQexec(conn_, s.c_str()), "exec");
}

Status Connection::prepare(const Statement& st) {
  if (prepared_.contains(st.name)) return {};
  auto prep = check(PQprepare(conn_, st.name, st.sql.c_str(), 0, nullptr), st.name);
  if (!prep.ok()) return prep.error();
  prepared_.insert(st.name);
  return {};
}

namespace {

Status refuse_nul(const Statement& st, const Params& p) {
  if (!p.has_nul()) return {};
  return make_error(ErrorCode::invalid_request,
                    std::string("postgres: ") + st.name +
                        ": a text value holds a NUL byte, which PostgreSQL cannot store");
}

}  // namespace

Result<PgResult> Connection::run(const Statement& st, const Params& p) {
  if (Status s = refuse_nul(st, p); !s.ok()) return s.error();
  if (Status s = prepare(st); !s.ok()) return s.error();
  auto ptrs = p.pointers();
  return check(PQexecPrepared(conn_, st.name, p.size(), ptrs.data(), nullptr, nullptr, 0), st.name);
}

Result<std::vector<PgResult>> Connection::pipeline(const std::vector<Step>& steps) {
  for (const Step& step : steps) {
    if (step.st != nullptr) {
      if (Status s = refuse_nul(*step.st, *step.params); !s.ok()) return s.error();
      if (Status s = prepare(*step.st); !s.ok()) return s.error();
    }
  }
  if (PQenterPipelineMode(conn_) != 1) return check(nullptr, "enter pipeline mode").error();
  bool sent = true;
  for (const Step& step : steps) {
    if (!sent) break;
    if (step.st != nullptr) {
      auto ptrs = step.params->pointers();
      sent = PQsendQueryPrepared(conn_, step.st->name, step.params->size(), ptrs.data(), nullptr,
                                 nullptr, 0) == 1;
    } else {
      sent = PQsendQueryParams(conn_, step.sql, 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
    }
  }
  sent = sent && PQpipelineSync(conn_) == 1;
  // Read every result up to the sync point, whatever happened, so that the connection
  // leaves pipeline mode clean. The server runs the steps one after the other, each
  // statement with its own snapshot taken when it starts (READ COMMITTED).
  std::vector<PgResult> out;
  std::optional<Error> first_error;
  size_t step = 0;
  while (sent) {
    PGresult* raw = PQgetResult(conn_);
    if (raw == nullptr) {
      if (PQstatus(conn_) != CONNECTION_OK) break;
      ++step;  // end of one step's results
      continue;
    }
    if (PQresultStatus(raw) == PGRES_PIPELINE_SYNC) {
      PQclear(raw);
      break;
    }
    if (step >= steps.size()) {  // cannot happen: one result set per step
      PQclear(raw);
      continue;
    }
    const Step& st = steps[step];
    const char* what = st.st != nullptr ? st.st->name : st.sql;
    Result<PgResult> r = make_error(ErrorCode::store_unavailable, "postgres: pipeline aborted");
    if (PQresultStatus(raw) == PGRES_PIPELINE_ABORTED) {
      PQclear(raw);  // a step skipped after an earlier failure: that failure is the error
    } else {
      r = check(raw, what);  // takes ownership of raw
    }
    if (!r.ok()) {
      if (!first_error) first_error = r.error();
      continue;
    }
    // COMMIT of a transaction that already failed answers "ROLLBACK", not an error.
    if (st.sql != nullptr && std::string_view(st.sql) == "COMMIT" &&
        std::string_view(PQcmdStatus(r->get())) != "COMMIT" && !first_error) {
      first_error = make_error(ErrorCode::store_unavailable, "postgres: transaction rolled back");
    }
    out.push_back(std::move(r).value());
  }
  if (PQexitPipelineMode(conn_) != 1 && !first_error) {
    first_error = make_error(ErrorCode::store_unavailable,
                             std::string("postgres: pipeline: ") + PQerrorMessage(conn_));
  }
  if (!sent && !first_error) {
    first_error = make_error(ErrorCode::store_unavailable,
                             std::string("postgres: send failed: ") + PQerrorMessage(conn_));
  }
  if (first_error) return *first_error;
  if (out.size() != steps.size()) {
    return make_error(ErrorCode::store_unavailable, "postgres: pipeline returned too few results");
  }
  return out;
}

Result<PgResult> Connection::run_pipelined(const Statement& st, const Params& p,
                                           const char* after) {
  std::vector<Step> steps{{&st, &p, nullptr}};
  if (after) steps.push_back({nullptr, nullptr, after});
  auto r = pipeline(steps);
  if (!r.ok()) return r.error();
  return std::move(r->front());
}

Transaction::~Transaction() {
  if (open_ && c_.healthy()) (void)c_.exec("ROLLBACK");
}

Status Transaction::begin(std::string_view sql) {
  auto r = c_.exec(sql);
  if (!r.ok()) return r.error();
  open_ = true;
  return {};
}

Result<std::vector<PgResult>> Transaction::begin_with(const Statement& first, const Params& p1,
                                                      const Statement& second, const Params& p2) {
  return begin_with_all({{&first, &p1, nullptr}, {&second, &p2, nullptr}});
}

Result<std::vector<PgResult>> Transaction::begin_with_all(std::vector<Connection::Step> steps) {
  open_ = true;  // even if a statement fails, BEGIN may have opened the transaction
  steps.insert(steps.begin(), {nullptr, nullptr, "BEGIN"});
  auto r = c_.pipeline(steps);
  if (!r.ok()) return r.error();
  r->erase(r->begin());  // BEGIN's
  return r;
}

Status Transaction::run_and_commit(const Statement& st, const Params& p, PgResult* result) {
  auto r = c_.run_pipelined(st, p, "COMMIT");
  if (r.ok()) {
    open_ = false;
    if (result != nullptr) *result = std::move(r).value();
    return {};
  }
  return r.error();  // the destructor rolls back whatever is left open
}

Status Transaction::run_all_and_commit(std::vector<Connection::Step> steps) {
  if (steps.empty()) return commit();
  steps.push_back({nullptr, nullptr, "COMMIT"});
  auto r = c_.pipeline(steps);
  if (!r.ok()) return r.error();  // the destructor rolls back whatever is left open
  open_ = false;
  return {};
}

Status Transaction::commit() {
  auto r = c_.exec("COMMIT");
  open_ = false;  // a failed COMMIT has ended the transaction too
  if (!r.ok()) return r.error();
  // COMMIT of a transaction that already failed answers "ROLLBACK", not an error.
  if (std::string_view(PQcmdStatus(r->get())) != "COMMIT") {
    return make_error(ErrorCode::store_unavailable, "postgres: transaction rolled back");
  }
  return {};
}

}  // namespace cairva::store::pg
