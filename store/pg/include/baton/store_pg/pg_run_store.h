#pragma once
// RunStore on PostgreSQL: the only place that writes job_runs. Every write is
// one prepared statement of the shape (see run_transitions.cpp):
//
//   WITH fence AS (SELECT epoch FROM leader_lease WHERE id = 1 FOR KEY SHARE),
//        w AS (UPDATE job_runs SET ..., version = version + 1
//              WHERE id = $1 AND version = $2 AND state = ... AND <attempt predicates>
//                AND (SELECT epoch FROM fence) = $3 RETURNING ...)
//   SELECT (SELECT epoch FROM fence), w.* ...
//
// The FOR KEY SHARE lock is held until the write commits and conflicts with
// the election's FOR UPDATE, which makes the fence linearizable against
// elections (docs/fencing.md). The statement also returns the lease epoch it
// was judged against, so zero rows is classified as Fenced (epoch moved) or
// Conflict (version/state moved) without a second round trip.
#include <string>

#include "baton/store/run_store.h"
#include "baton/store_pg/pg_session.h"

namespace baton::store::pg {

class PgRunStore final : public RunStore {
 public:
  PgRunStore(const std::string& url, const std::string& application_name);

  Result<CreateResult> create_run(Epoch epoch, const NewRun& run) override;
  Result<std::optional<RunRow>> read_run(RunId id) override;
  Result<WriteResult> assign(const RunFence& f, const std::string& worker_id) override;
  Result<WriteResult> reassign(const RunFence& f, RunState from, const std::string& worker_id) override;
  Result<WriteResult> start(const RunFence& f, const AttemptFence& a, Millis stale_after) override;
  Result<WriteResult> heartbeat(const RunFence& f, const AttemptFence& a, Millis stale_after) override;
  Result<WriteResult> finish(const RunFence& f, const AttemptFence& a, const Finish& fin) override;
  Result<WriteResult> retry_later(const RunFence& f, const AttemptFence& a, const Finish& fin, Millis delay) override;
  Result<WriteResult> orphan(const RunFence& f) override;
  Result<WriteResult> requeue(const RunFence& f) override;
  Result<WriteResult> fail_orphaned(const RunFence& f, const std::string& reason) override;
  Result<WriteResult> fail_unrunnable(const RunFence& f, RunState from, const std::string& error_code,
                                      const std::string& reason) override;
  Result<WriteResult> late_success(const RunFence& f, const AttemptFence& a, const Finish& fin) override;
  Result<WriteResult> record_late_report(const RunFence& f, const AttemptFence& a, const Finish& fin) override;
  Result<WriteResult> cancel(const RunFence& f, RunState from, const std::string& reason) override;
  Result<WriteResult> cancel_attempt(const RunFence& f, const AttemptFence& a, const Finish& fin,
                                     const std::string& reason) override;
  Result<WriteResult> begin_confirming(const RunFence& f, Millis deadline_in) override;
  Result<WriteResult> request_cancel(const RunFence& f, const std::string& reason) override;
  Result<WriteResult> adopt(const RunFence& f, const AttemptFence& a) override;
  Result<BatchWriteResult> assign_batch(Epoch epoch, const std::vector<AssignRow>& rows) override;
  Result<BatchWriteResult> start_batch(Epoch epoch, const std::vector<StartRow>& rows, Millis stale_after) override;
  Result<BatchWriteResult> finish_batch(Epoch epoch, const std::vector<FinishRow>& rows) override;

  /// Connects now (useful to fail fast with a clear message at start).
  Result<void> connect() { return session_.ensure_connected(); }

 private:
  /// Whether a statement's transaction first takes the run table's lock
  /// that an exclusive run's activation needs (schemas/0046).
  enum class RunTableLock { none, exclusive_activation };
  template <class... Args>
  Result<WriteResult> fenced(const char* statement, const RunFence& f, Args&&... args);
  template <class... Args>
  Result<WriteResult> fenced_locked(const char* statement, const RunFence& f, Args&&... args);
  template <class... Args>
  Result<BatchWriteResult> batch(const char* statement, RunTableLock lock, Epoch epoch, Args&&... args);

  PgSession session_;
};

}  // namespace baton::store::pg
