// PostgresStore: the Store for several gateway processes sharing one PostgreSQL database.
//
// Every admission and settlement runs in a transaction holding the allocation's row lock
// (SELECT … FOR NO KEY UPDATE on allocations), reading the clock after the lock, and
// calling the pure core (decide_admission, the AllocationLedger's transitions) on a
// snapshot computed from indexed tables; so any number of processes together never exceed
// a limit or the allowance. Admissions to one allocation that wait in this process while
// its previous transaction runs go together in the next one (one lock, one commit, each
// decided on the snapshot its predecessors left); so do settlements, and when both kinds
// wait they share one transaction, the settlements first.
//
// Threads: the asynchronous methods run on a small fixed set of worker threads (libpq is
// blocking) and call back on them after COMMIT, holding no lock. Connections come from a
// pool of StoreOptions::pool_size per process. Every method is thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "base/time.h"
#include "store/postgres/pool.h"
#include "store/postgres/waiting.h"
#include "store/postgres/workers.h"
#include "store/store.h"

namespace cairva::store::pg {

// Worker threads running libpq calls for the asynchronous methods (at most pool_size).
inline constexpr int async_worker_threads_max = 8;
// Admissions to one allocation decided in one transaction, at most: a longer wait would
// hold the row lock (and the first admission's answer) for longer than it saves.
inline constexpr size_t admissions_per_transaction_max = 64;
// Settlements of one allocation in one transaction, at most (the same trade).
inline constexpr size_t settlements_per_transaction_max = 64;
// A transaction that hit a deadlock or serialization failure is retried this many times.
inline constexpr int transaction_attempts_max = 3;
// Key grants kept for authenticate_for_admission (emptied when full): one per key in use
// is enough, and the cache only saves a query per request.
inline constexpr size_t key_grants_cached_max = 4096;
// The admin listing of every allocation (list_allocations) returns at most this many.
inline constexpr int64_t allocations_list_max = 100000;

class PostgresStore final : public Store {
 public:
  // Connects, creates or migrates the schema (safe with several processes at once).
  // With options.use_database_clock the database's clock_timestamp() is "now";
  // otherwise `clock` is (tests).
  static Result<std::unique_ptr<PostgresStore>> open(const StoreOptions& options,
                                                     std::shared_ptr<const Clock> clock);
  ~PostgresStore() override;

  void authenticate(const std::string& key_secret_hash, Callback<KeyGrant> done) override;
  // From the cache of grants when it has the key (a query less per request): each
  // admission batch reads its keys' `revoked` under the row lock and refuses a revoked
  // key's admissions with invalid_api_key, so a revocation through any gateway refuses
  // the key's next admission everywhere.
  void authenticate_for_admission(const std::string& key_secret_hash,
                                  Callback<KeyGrant> done) override;
  void admit(AdmitCommand cmd, Callback<AdmitResult> done) override;
  void settle(SettleCommand cmd, Callback<SettleResult> done) override;
  void allocation_status(const std::string& allocation_id,
                         Callback<AllocationStatus> done) override;
  // Without the row lock: a booking or settlement is either committed or not yet seen.
  void owns_provider_request(const std::string& allocation_id,
                             const std::string& provider_request_id, Callback<bool> done) override;
  // One autocommitted UPDATE on a worker thread, outside the allocation's queue.
  void note_provider_id(ProviderIdNote note, Callback<void> done) override;

  Result<CreatedAgreement> create_agreement(const NewAgreement& a) override;
  Result<AgreementRow> get_agreement(const std::string& agreement_id) override;
  Result<AgreementRow> cancel_agreement(const std::string& agreement_id) override;
  Result<std::vector<AllocationStatus>> list_allocations() override;
  Result<AllocationStatus> get_allocation(const std::string& allocation_id) override;
  Result<AllocationStatus> suspend_allocation(const std::string& allocation_id) override;
  Result<AllocationStatus> resume_allocation(const std::string& allocation_id) override;
  Result<CreatedKey> create_key(const std::string& allocation_id) override;
  Result<ApiKeyRow> revoke_key(const std::string& key_id) override;
  Result<Paged<RequestRow>> list_requests(const RequestFilter& f) override;
  Result<RequestRow> get_request(const std::string& request_id) override;
  Result<UsageEventRow> reconcile(const Reconciliation& r) override;
  Result<Paged<UsageEventRow>> list_events(const EventFilter& f) override;
  Result<Paged<ConflictRow>> list_conflicts(const ConflictFilter& f) override;

  // Operating at volume (postgres_console.cpp).
  Result<Paged<AgreementRow>> list_agreements(const PageFilter& f) override;
  Result<Paged<AllocationStatus>> list_allocations_page(const AllocationFilter& f) override;
  Result<Paged<ApiKeyRow>> list_keys(const std::string& allocation_id,
                                     const PageFilter& f) override;
  // On a worker thread, in one read-only snapshot.
  void usage_series(UsageQuery q, Callback<UsageSeries> done) override;
  Result<std::vector<BookedMatch>> find_bookings(const std::optional<std::string>& allocation_id,
                                                 const std::string& provider_request_id) override;
  Result<std::vector<RequestRow>> find_pending(const std::optional<std::string>& allocation_id,
                                               const std::string& provider_request_id) override;
  // Each under its allocation's row lock (conflicts are listed per allocation by seq).
  Result<int64_t> record_conflicts(std::vector<ConflictRow> conflicts) override;
  Result<UsageEventRow> adjust(const Adjustment& a) override;

  Result<int64_t> sweep_stale() override;
  Result<AuditReport> audit() override;

 private:
  PostgresStore(const StoreOptions& options, std::shared_ptr<const Clock> clock);

  // The injected clock's now, or nullopt to let SQL read the database clock.
  std::optional<UnixMicros> injected_now() const;

  // Runs `work` on a pooled connection, retrying deadlocks/serialization failures.
  template <class T, class F>
  Result<T> with_connection(F&& work);
  // Runs `work` on a worker thread, then `done` with its result (exactly once). Work under
  // an allocation's row lock goes through `schedule` instead: in order per allocation
  // (workers.h says why).
  template <class T, class F>
  void run_async(Callback<T> done, F work);

  struct PendingAdmission {
    AdmitCommand cmd;
    Callback<AdmitResult> done;
  };
  using Admissions = std::vector<PendingAdmission>;
  struct PendingSettlement {
    SettleCommand cmd;
    Callback<SettleResult> done;
  };
  using Settlements = std::vector<PendingSettlement>;

  Result<KeyGrant> authenticate_on(Connection& c, const std::string& hash);
  // Drops the cached grants of `key_id` (revoked).
  void forget_key(const std::string& key_id);
  // Adds `item` to what waits for `allocation_id`, scheduling the job that takes it unless
  // one is queued or running (answers it store_unavailable when the queue is full).
  template <class Pending>
  void enqueue(Waiting<Pending>& waiting, const std::string& allocation_id, Pending item);
  // Queues the allocation's job (run_allocation), after this process's earlier work under
  // that allocation's row lock; false when the queue is full.
  bool schedule(const std::string& allocation_id);
  // Answers every item waiting in `waiting` for `allocation_id` with `error`.
  template <class Pending>
  void fail_all(Waiting<Pending>& waiting, const std::string& allocation_id, const Error& error);
  // Takes up to `max` items waiting for `allocation_id` and schedules the job again when
  // more wait.
  template <class Pending>
  std::vector<Pending> take(Waiting<Pending>& waiting, const std::string& allocation_id,
                            size_t max);

  // The job both queues schedule. Takes up to settlements_per_transaction_max waiting
  // settlements and admissions_per_transaction_max waiting admissions of the allocation;
  // when both kinds wait, runs them in one transaction (settle_and_admit_on), else — or
  // when that transaction fails — each kind in its own (settle_batch, admit_batch). Each
  // queue schedules it for its own first item, so a job may find both taken by the one
  // before it: it then has nothing to do.
  void run_allocation(const std::string& allocation_id);
  // Decides `batch` in one transaction (admit_on) and answers each. A transaction that
  // fails (after its retries) answers each with its error and wrote nothing.
  void admit_batch(const Admissions& batch);
  // Answers each of `batch` with its result, dropping the grants of keys found revoked.
  void answer_admissions(const Admissions& batch, std::vector<Result<AdmitResult>> results);
  // Settles `batch` in one transaction (settle_batch_on), or, when that fails, one
  // transaction each, and answers each.
  void settle_batch(std::span<const PendingSettlement> batch);
  // One transaction for all of `batch` (same allocation), in order: one result each
  // (invalid_api_key for a key revoked or gone).
  Result<std::vector<Result<AdmitResult>>> admit_on(Connection& c, const Admissions& batch);
  // One transaction for all of `batch` (same allocation), in order, one result each, as
  // if each had its own.
  Result<std::vector<SettleResult>> settle_batch_on(Connection& c,
                                                    std::span<const PendingSettlement> batch);
  struct SettledAndAdmitted {
    std::vector<SettleResult> settled;
    std::vector<Result<AdmitResult>> admitted;
  };
  // One transaction: `settlements` as settle_batch_on decides them, then `admissions` as
  // admit_on does, on the allocation as the settlements leave it (one row lock and one
  // commit instead of two).
  Result<SettledAndAdmitted> settle_and_admit_on(Connection& c, const Settlements& settlements,
                                                 const Admissions& admissions);
  // The steps those transactions share (statements appended to one pipeline's Writes).
  struct Writes;
  // sql::window_counts' parameters for `admissions` decided on its counts.
  Params window_count_params(const std::string& allocation_id, size_t admissions) const;
  // The allocation's row lock, each request's row, locked, and each usage report's event.
  void settlement_reads(std::span<const PendingSettlement> batch, Writes& w) const;
  // Plans each settlement (core::plan_settlement) on what the reads found, as the ones
  // before it in the batch leave it, and appends the plans' writes to `w`.
  // REQUIRES: `read` is settlement_reads' results, in this transaction.
  static Result<std::vector<SettleResult>> decide_settlements(
      std::span<const PendingSettlement> batch, const std::vector<PgResult>& read, Writes& w);
  // The admission part of a pipeline: the row lock, the window counts, then each distinct
  // key's sql::key_revoked; returns those keys in that order.
  std::vector<std::string> admission_reads(const Admissions& batch, Writes& w) const;
  // REQUIRES: `read` holds admission_reads' results from index `at`, in this transaction.
  static Result<std::vector<Result<AdmitResult>>> decide_admissions(
      const Admissions& batch, const std::vector<std::string>& keys,
      const std::vector<PgResult>& read, size_t at, Writes& w);
  Result<std::vector<AllocationStatus>> status_on(Connection& c,
                                                  const std::optional<std::string>& id);
  Result<AllocationStatus> one_status_on(Connection& c, const std::string& id);
  Result<AllocationStatus> change_state_on(Connection& c, const std::string& allocation_id,
                                           bool suspend);
  Result<UsageEventRow> reconcile_on(Connection& c, const Reconciliation& r);
  Result<UsageEventRow> adjust_on(Connection& c, const Adjustment& a);
  Result<UsageSeries> usage_series_on(Connection& c, const UsageQuery& q);
  Result<bool> record_conflict_on(Connection& c, ConflictRow row);

  const StoreOptions options_;
  const std::shared_ptr<const Clock> clock_;
  ConnectionPool pool_;
  // A serving store's mark for newer gateways (schema.h, hold_gateway_lock); null for audit.
  std::unique_ptr<Connection> presence_;
  std::mutex grants_mu_;
  std::unordered_map<std::string, KeyGrant> grants_;  // GUARDED_BY(grants_mu_): by secret hash
  Waiting<PendingAdmission> admissions_;
  Waiting<PendingSettlement> settlements_;
  Workers workers_;  // last: joined first, while the pool still exists
};

template <class T, class F>
Result<T> PostgresStore::with_connection(F&& work) {
  for (int attempt = 1;; ++attempt) {
    auto lease = pool_.acquire();
    if (!lease.ok()) return lease.error();
    Connection& c = **lease;
    c.clear_sqlstate();
    Result<T> r = work(c);
    if (r.ok() || attempt >= transaction_attempts_max) return r;
    const std::string& state = c.last_sqlstate();
    // Deadlock and serialization failures roll the whole transaction back: safe to rerun.
    // A connection that broke is dropped by the pool; the retry gets a fresh one.
    const bool retry =
        state == sqlstate_deadlock || state == sqlstate_serialization || !c.healthy();
    if (!retry) return r;
  }
}

}  // namespace cairva::store::pg
