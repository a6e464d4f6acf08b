#pragma once
// LeaderStore on PostgreSQL (reads and registries; fenced statements come
// from run_transitions.cpp).
#include <string>

#include "baton/store/leader_store.h"
#include "baton/store_pg/pg_session.h"

namespace baton::store::pg {

class PgLeaderStore final : public LeaderStore {
 public:
  PgLeaderStore(const std::string& url, const std::string& application_name);
  /// Calls cut off after `d` (PgSession); the admin API's store uses a short
  /// one so /status answers while the database does not.
  void set_call_deadline(Millis d) { session_.set_call_deadline(d); }

  Result<std::vector<DueRun>> due_runs(int limit, const std::map<std::string, std::string>& labels) override;
  Result<std::vector<ActiveRun>> active_runs(Millis continuation_margin) override;
  Result<HeartbeatBatchResult> heartbeat_batch(Epoch epoch, const std::vector<HeartbeatRow>& rows,
                                               Millis stale_after) override;
  Result<CreateResult> create_job_run(Epoch epoch, const std::string& job_name,
                                      const std::optional<std::string>& idempotency_key,
                                      const std::string& trigger_kind, std::optional<std::int64_t> slot_unix) override;
  Result<void> worker_attached(const std::string& worker_id, const std::string& labels_json, int capacity,
                               const std::string& node_id, Epoch epoch) override;
  Result<void> worker_detached(const std::string& worker_id) override;
  Result<void> append_run_log(RunId run, int attempt, const std::string& stream, const std::string& chunk) override;
  Result<void> upsert_job(const JobDefinition& job) override;
  Result<bool> job_exists(const std::string& name) override;
  Result<std::vector<ScheduledJob>> scheduled_jobs() override;
  Result<RunCounts> run_counts() override;
  Result<std::optional<std::string>> run_json(RunId id) override;
  Result<Page> list_runs(const RunQuery& q) override;
  Result<Page> list_epochs(int limit, std::optional<std::int64_t> before_epoch) override;
  Result<Page> list_workers(int limit, std::optional<std::string> after_id) override;
  Result<JobPage> list_jobs(int limit, std::optional<std::string> after_name, std::optional<std::string> only) override;
  Result<std::optional<std::int64_t>> set_job_paused(const std::string& name, bool paused, const std::string& actor,
                                                     Epoch epoch) override;
  Result<Page> list_dead_letters(int limit, std::optional<std::int64_t> before_id,
                                 std::optional<std::string> triage_status) override;
  Result<Page> list_audit(int limit, std::optional<std::int64_t> before_id,
                          std::optional<std::string> subject) override;
  Result<void> audit(const std::string& actor, const std::string& action, const std::string& subject, Epoch epoch,
                     const std::string& details_json) override;

 private:
  PgSession session_;
};

}  // namespace baton::store::pg
