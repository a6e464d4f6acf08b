#pragma once
// LeaderStore on PostgreSQL (reads and registries; fenced statements come
// from run_transitions.cpp).
#include <string>

#include "baton/store/leader_store.h"
#include "baton/store_pg/pg_session.h"

namespace baton::store::pg {

/// The channel baton.trigger and baton.emit_event NOTIFY at commit
/// (schemas/0036); the leader's inbox waiter LISTENs on it.
inline constexpr const char* inbox_channel = "baton_inbox";

class PgLeaderStore final : public LeaderStore {
 public:
  PgLeaderStore(const std::string& url, const std::string& application_name);

  Result<std::vector<DueRun>> due_runs(int limit, const std::map<std::string, std::string>& labels, Millis ahead,
                                       const std::vector<std::map<std::string, std::string>>& taking) override;
  Result<std::vector<ActiveRun>> active_runs(Millis continuation_margin) override;
  Result<HeartbeatBatchResult> heartbeat_batch(Epoch epoch, const std::vector<HeartbeatRow>& rows,
                                               Millis stale_after) override;
  Result<CreateResult> create_cron_run(Epoch epoch, const std::string& job, std::int64_t slot_unix, bool caught_up,
                                       std::int64_t jitter_ms) override;
  Result<CreateResult> skip_cron_slots(Epoch epoch, const std::string& job, const std::vector<SkippedCronSlots>& ranges,
                                       const std::string& details_json) override;
  Result<EventsProcessed> process_events(Epoch epoch, int limit) override;
  Result<SubmissionsProcessed> process_submissions(Epoch epoch, int limit,
                                                   const std::vector<std::string>& payload_denylist) override;
  Result<bool> await_inbox(Millis max) override;
  Result<Pruned> prune(Epoch epoch, int batch) override;
  Result<void> record_fenced_out(Epoch epoch, const std::string& node_id,
                                 const std::vector<FencedOut>& refused) override;
  Result<CreateResult> record_decision(Epoch epoch, RunId run, const std::string& decision, const std::string& reason,
                                       const std::string& details_json) override;
  Result<void> worker_attached(const std::string& worker_id, const std::string& labels_json, int capacity,
                               const std::string& node_id, Epoch epoch) override;
  Result<void> worker_detached(const std::string& worker_id, const std::string& node_id, Epoch epoch) override;
  Result<void> workers_seen(const std::vector<std::string>& worker_ids) override;
  Result<void> append_run_log(RunId run, int attempt, const std::string& stream, const std::string& chunk) override;
  Result<void> append_run_output(const std::vector<OutputChunk>& chunks, std::int64_t db_bytes_per_stream) override;
  Result<std::vector<ScheduledJob>> scheduled_jobs() override;
  Result<std::vector<DueRun>> unmatched_runs(const std::vector<std::map<std::string, std::string>>& label_sets,
                                             int limit) override;
  Result<std::vector<DueRun>> waiting_runs(int limit) override;
  Result<std::vector<DueRun>> key_waiting_runs(int limit) override;
  Result<Controls> read_controls() override;

 private:
  PgSession session_;
};

}  // namespace baton::store::pg
