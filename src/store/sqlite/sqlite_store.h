// SqliteStore: the embedded, single-process Store.
//
// While the process owns the file (FileLock), memory is authoritative: each allocation is
// a mutex + core::AllocationLedger + its agreement's immutable facts; API keys are a
// hash -> grant map (a revocation takes effect at once). Authentication, admission and
// settlement decide in memory under the allocation's mutex (no I/O inside) and queue their
// row writes, in decision order, to the one Writer; a callback runs once its writes are in
// the operation log (writer.h), before the tables have them.
// Admin reads of requests, events and conflicts read SQLite after a writer flush, so they
// reflect everything acknowledged.
//
// Restart: open() applies the writes the oplog holds beyond the tables (oplog.h), marks
// requests left in_flight usage_pending (persisted) and rebuilds every ledger from the tables.
//
// Thread safety: every method, from any thread. Lock order: allocations map (shared) ->
// one allocation's mutex -> the writer's queue. Callbacks never run under these locks.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "base/time.h"
#include "core/ledger.h"
#include "store/sqlite/db.h"
#include "store/sqlite/file_lock.h"
#include "store/sqlite/read_worker.h"
#include "store/sqlite/writer.h"
#include "store/store.h"

namespace cairva::store::sqlite {

class SqliteStore final : public Store {
 public:
  // `path`: the database file (created if missing). Fails when another process (or
  // another SqliteStore in this one) holds the file.
  static Result<std::unique_ptr<SqliteStore>> open(const std::string& path,
                                                   const StoreOptions& options,
                                                   std::shared_ptr<const Clock> clock);
  ~SqliteStore() override;
  // `cairva audit` on a file a running gateway may own: opens it read-only, without the
  // one-process lock, and checks the ledger's invariants in one read snapshot. Never writes
  // (no migration, no sweep). `options.in_flight_timeout_s` sets the stale check.
  static Result<AuditReport> audit_file(const std::string& path, const StoreOptions& options,
                                        const std::shared_ptr<const Clock>& clock);

  void authenticate(const std::string& key_secret_hash, Callback<KeyGrant> done) override;
  void admit(AdmitCommand cmd, Callback<AdmitResult> done) override;
  void settle(SettleCommand cmd, Callback<SettleResult> done) override;
  void allocation_status(const std::string& allocation_id,
                         Callback<AllocationStatus> done) override;
  // From the allocation's ledger, which holds every booked id and its open requests' ids.
  void owns_provider_request(const std::string& allocation_id,
                             const std::string& provider_request_id, Callback<bool> done) override;
  // Recorded in the allocation's ledger (owns_provider_request sees it) and journaled like
  // an admission (dropped at once when the writer is failing or full), riding the commit of
  // the calling loop's round.
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

  // Operating at volume (sqlite_console.cpp).
  Result<Paged<AgreementRow>> list_agreements(const PageFilter& f) override;
  Result<Paged<AllocationStatus>> list_allocations_page(const AllocationFilter& f) override;
  Result<Paged<ApiKeyRow>> list_keys(const std::string& allocation_id,
                                     const PageFilter& f) override;
  // On the read worker, after a writer flush, on the reader connection.
  void usage_series(UsageQuery q, Callback<UsageSeries> done) override;
  // From memory (the ledgers' booked ids): request_id left empty.
  Result<std::vector<BookedMatch>> find_bookings(const std::optional<std::string>& allocation_id,
                                                 const std::string& provider_request_id) override;
  Result<std::vector<RequestRow>> find_pending(const std::optional<std::string>& allocation_id,
                                               const std::string& provider_request_id) override;
  Result<int64_t> record_conflicts(std::vector<ConflictRow> conflicts) override;
  Result<UsageEventRow> adjust(const Adjustment& a) override;

  Result<int64_t> sweep_stale() override;
  Result<AuditReport> audit() override;
  // sqlite_backup.cpp: after a writer flush, VACUUM INTO a new file beside `path` on a
  // connection of its own (admin reads and the request path carry on), checked to hold every
  // write acknowledged before the call, then renamed to `path`.
  Result<BackupReport> backup(const std::string& path) override;

  // Group-commit figures (commits, rows, largest batch) for /metrics and reports.
  WriterStats writer_stats() const { return writer_->stats(); }
  // A commit failed and the writer's retry has not succeeded yet (admissions are refused).
  bool writer_failing() const { return writer_->failing(); }
  // Tests: blocks until the writer's retry or probe has cleared its failure.
  void wait_while_writer_failing_for_testing() { writer_->wait_while_failing_for_testing(); }
  // Tests: make every commit fail (as a full disk would) while set.
  void set_write_fault_for_testing(bool fail) { writer_->set_fault_for_testing(fail); }
  // Blocks until every write queued so far has been attempted.
  void flush() { writer_->flush(); }
  // Tests: while set, acknowledged writes reach the oplog only (as when the process dies
  // before the applier copies them into the tables); closing then leaves them there.
  void pause_applier_for_testing(bool pause) { writer_->pause_applier_for_testing(pause); }
  void pause_journal_for_testing(bool pause) { writer_->pause_journal_for_testing(pause); }

  // One allocation's in-memory state. Public for the loader; opaque to callers.
  struct Allocation {
    Allocation(std::string id_, AgreementRow agreement_)
        : id(std::move(id_)), agreement(std::move(agreement_)), ledger(agreement.terms) {}
    const std::string id;
    const AgreementRow agreement;  // immutable facts; its state lives in the ledger
    std::mutex mu;
    core::AllocationLedger ledger;  // GUARDED_BY(mu)
    // The latest start and booking: times stored for this allocation never run backwards
    // (a clock stepping back is held at these), which the listings' and usage series'
    // orders rely on (schema.cpp, migration 9). GUARDED_BY(mu)
    UnixMicros last_start = 0;
    UnixMicros last_booking = 0;
  };
  struct Key {
    std::string id;
    std::string hash;
    std::string allocation_id;
    bool revoked = false;
  };

 private:
  SqliteStore(std::string path, StoreOptions options, std::shared_ptr<const Clock> clock,
              std::unique_ptr<FileLock> lock, Db reader, std::unique_ptr<Writer> writer);

  std::shared_ptr<Allocation> find(const std::string& allocation_id) const;
  std::shared_ptr<Allocation> find_by_agreement(const std::string& agreement_id) const;
  // REQUIRES: a.mu held. Moves stale in-flight requests to usage_pending and queues it.
  int64_t sweep_locked(Allocation& a, UnixMicros now);
  // REQUIRES: a.mu held. Queues the ledger's states if they differ from `before`.
  void persist_states_if_changed(Allocation& a, core::AllocationState before,
                                 core::AgreementState before_agreement);
  AllocationStatus status_locked(Allocation& a, UnixMicros now);
  AgreementRow agreement_locked(Allocation& a) const;
  // Queues `apply` and waits (bounded) for it. `fail_fast`: refused at once while the
  // writer is failing, never committed after a failure (creations, which memory learns
  // only on success); otherwise retried until durable (changes memory already made).
  Status write_and_wait(std::function<Status(Db&)> apply, bool fail_fast);
  // Runs `fn` on the reader connection after a writer flush.
  template <class T>
  Result<T> read(const std::function<Result<T>(Db&)>& fn) {
    writer_->flush();  // everything acknowledged before this call is in the file
    std::lock_guard lock(reader_mu_);
    return fn(reader_);
  }
  void settle_lookup(SettleCommand cmd, Callback<SettleResult> done);
  // Queues the records of `plan` (core/settlement.h) as one op; `done` once durable.
  void persist(const SettleCommand& cmd, const core::SettlePlan& plan, UnixMicros now,
               Callback<SettleResult> done);
  Result<AllocationStatus> change_state(const std::string& allocation_id, bool suspend);
  Status load();
  // REQUIRES: a.mu held. The time a booking made now is stored with.
  UnixMicros booking_time_locked(Allocation& a) {
    a.last_booking = std::max(a.last_booking, clock_->now());
    return a.last_booking;
  }
  Result<UsageSeries> read_usage_series(const UsageQuery& q);

  const std::string path_;  // the database file
  const StoreOptions options_;
  const std::shared_ptr<const Clock> clock_;
  std::unique_ptr<FileLock> lock_;
  std::mutex reader_mu_;
  Db reader_;  // GUARDED_BY(reader_mu_)
  std::unique_ptr<Writer> writer_;
  std::unique_ptr<ReadWorker> read_worker_;  // after the writer: joined before it

  mutable std::shared_mutex map_mu_;
  std::unordered_map<std::string, std::shared_ptr<Allocation>> allocations_;  // GUARDED_BY(map_mu_)
  std::unordered_map<std::string, std::string> allocation_of_agreement_;      // GUARDED_BY(map_mu_)
  std::unordered_map<std::string, std::shared_ptr<Key>> keys_by_hash_;        // GUARDED_BY(map_mu_)
  std::unordered_map<std::string, std::shared_ptr<Key>> keys_by_id_;          // GUARDED_BY(map_mu_)
};

}  // namespace cairva::store::sqlite
