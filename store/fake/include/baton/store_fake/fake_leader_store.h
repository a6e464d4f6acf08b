#pragma once
// The leader's store (store::LeaderStore) over the in-memory database of
// FakeRunDb, with the same rules as PgLeaderStore's SQL for what it models:
// the due runs, the active runs, the heartbeat batch, cron (scheduled jobs,
// a slot's run with its cursor and ledger entry, skipped ranges) and events
// (each into one run per subscribed job, run-after dependencies included);
// store/tests/leader_store_contract_test.cpp runs one suite against both.
// For the simulator and deterministic tests, which carry out the book's
// effects through the same interpreter as the control loop
// (leader/store_calls).
//
// Not modelled yet, and said so by each call's answer: the decision ledger's
// hold-backs (record_decision fails with db_error), retention (nothing to
// prune), operators' controls (the defaults), selectors (every worker can
// take every run, so no run is unmatched or waiting), the worker registry
// and run logs (accepted, not kept).
#include <functional>

#include "baton/store/leader_store.h"
#include "baton/store_fake/fake_run_store.h"

namespace baton::store::fake {

class FakeLeaderStore final : public LeaderStore {
 public:
  explicit FakeLeaderStore(FakeRunDb& db, int partition = 0) : db_(db), partition_(partition) {}

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
  Result<Pruned> prune(Epoch epoch, int batch) override;
  Result<SubmissionsProcessed> process_submissions(Epoch epoch, int limit,
                                                   const std::vector<std::string>& payload_denylist) override;
  Result<bool> await_inbox(Millis max) override;
  Result<CreateResult> record_decision(Epoch epoch, RunId run, const std::string& decision, const std::string& reason,
                                       const std::string& details_json) override;
  Result<void> record_fenced_out(Epoch epoch, const std::string& node_id,
                                 const std::vector<FencedOut>& refused) override;
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
  Result<Controls> read_controls() override;

  /// While true every call but the unmodelled ones fails with
  /// db_unavailable (a partition).
  bool unavailable = false;
  /// Asked after each read and heartbeat batch that ran: true loses its
  /// reply (outcome_unknown), as a connection lost after the statement.
  std::function<bool()> lose_reply;

 private:
  template <class T, class F>
  Result<T> call(F&& f);
  Result<void> accepted() const;
  FakeRunDb& db_;
  int partition_;  ///< every statement through this handle is for this partition
};

}  // namespace baton::store::fake
