#pragma once
// Port for everything the leader's control loop and the admin API read, and
// for the registries (workers, job definitions, run logs) they write. Writes
// of run *state* are not here: they are RunStore's fenced transitions, plus
// the two fenced inserts and the batched heartbeat below, which carry the
// same epoch fence.
#include <map>
#include <string>
#include <vector>

#include "baton/base/result.h"
#include "baton/store/leader_rows.h"
#include "baton/store/run_store.h"

namespace baton::store {

class LeaderStore {
 public:
  virtual ~LeaderStore() = default;

  /// Due runs (PENDING past their slot, RETRY_WAITING past their time,
  /// ORPHANED) that a worker carrying `labels` can take, in dispatch order
  /// (priority, due time, id), at most `limit`.
  /// PENDING runs may be read up to `ahead` before their time (a cron slot):
  /// the leader assigns them early and writes their start at the time.
  /// `taking`: the label sets of every attached worker that takes runs
  /// (busy or not). An exclusive job's due run drains the cluster (no other
  /// job's run is read) only while one of them satisfies its selector:
  /// until then it would hold back every other run for a worker that is
  /// not there (issue 64, decision 1; docs/scheduling.md).
  virtual Result<std::vector<DueRun>> due_runs(int limit, const std::map<std::string, std::string>& labels,
                                               Millis ahead,
                                               const std::vector<std::map<std::string, std::string>>& taking) = 0;
  virtual Result<std::vector<ActiveRun>> active_runs(Millis continuation_margin) = 0;
  /// One statement, fenced per row: RUNNING rows still held by the given
  /// attempts get heartbeat_at = now(), stale_after = now() + stale_after.
  virtual Result<HeartbeatBatchResult> heartbeat_batch(Epoch epoch, const std::vector<HeartbeatRow>& rows,
                                                       Millis stale_after) = 0;
  /// A cron slot of `job`, in one fenced statement: its run (Conflict if the
  /// slot exists), the job's cron cursor moved up to the slot, and a
  /// `created` decision-ledger entry (`caught_up`: created late, after a gap).
  /// Under concurrency_policy forbid, while a run of the job is unfinished,
  /// no run: a `skipped` entry (`forbidden` set); under replace, the run is
  /// created and the unfinished ones are listed in `replaced` (to cancel).
  virtual Result<CreateResult> create_cron_run(Epoch epoch, const std::string& job, std::int64_t slot_unix,
                                               bool caught_up, std::int64_t jitter_ms) = 0;
  /// Slots of `job` given up, in one fenced statement: a `skipped` ledger
  /// entry per range (with `details_json` merged in: policy, gap cause) and
  /// the cron cursor moved past the last. Answers like a create: applied, or
  /// fenced with the current epoch (`run` unused).
  virtual Result<CreateResult> skip_cron_slots(Epoch epoch, const std::string& job,
                                               const std::vector<SkippedCronSlots>& ranges,
                                               const std::string& details_json) = 0;
  /// Up to `limit` unprocessed events, oldest first, in one fenced
  /// statement: one run per subscribed job (on_events; run_after for
  /// `job.succeeded:<job>`) that is live and not paused, unique per (job,
  /// event), each with a `created` ledger entry; the events marked processed.
  virtual Result<EventsProcessed> process_events(Epoch epoch, int limit) = 0;
  /// Up to `limit` pending SQL submissions (schemas/0036, baton.trigger),
  /// oldest first, in one fenced statement, judged by the API trigger's
  /// rules: a job deleted since, `payload_denylist` (also published for the
  /// submitting function to apply) or the job's parameter declarations
  /// refuse it (no run, why on the submission); an idempotency key that
  /// names an earlier run gives that run; otherwise one run (trigger_kind
  /// `sql`, unique per submission) with a `created` ledger entry naming the
  /// submission and who submitted it (no audit entry: the statement runs
  /// on the leader's loop, which must not wait on the audit log). Each
  /// submission is marked with its outcome in the same statement. One whose
  /// key meets a run this statement cannot see stays pending for the next
  /// call.
  virtual Result<SubmissionsProcessed> process_submissions(Epoch epoch, int limit,
                                                           const std::vector<std::string>& payload_denylist) = 0;
  /// Waits up to `max` for a NOTIFY on the inbox channel (`baton_inbox`: a
  /// submission or an event committed); true when one came. The first call
  /// (and the first after a reconnect) LISTENs, so only a store used for
  /// waiting queues notifications.
  virtual Result<bool> await_inbox(Millis max) = 0;
  /// Retention: at most `batch` of each kind older than the `retention_days`
  /// setting, fenced: finished runs (with attempts, transitions and log
  /// chunks), decision-ledger entries, processed events and triaged (closed
  /// or replayed) dead letters, processed SQL submissions. Untriaged dead
  /// letters are kept.
  virtual Result<Pruned> prune(Epoch epoch, int batch) = 0;
  /// A decision about one run (held back by overlap control, no worker
  /// matches its selector), fenced: the decision-ledger entry is written only
  /// under `epoch`.
  virtual Result<CreateResult> record_decision(Epoch epoch, RunId run, const std::string& decision,
                                               const std::string& reason, const std::string& details_json) = 0;
  /// What a leader fenced at `epoch` could not write (FencedOut), as
  /// decision-ledger entries `fenced_out` under that epoch, one per run (or
  /// one for a write of no run). Not fenced: written by the node after it
  /// stopped leading, it records what was refused and changes no run.
  virtual Result<void> record_fenced_out(Epoch epoch, const std::string& node_id,
                                         const std::vector<FencedOut>& refused) = 0;
  virtual Result<void> worker_attached(const std::string& worker_id, const std::string& labels_json, int capacity,
                                       const std::string& node_id, Epoch epoch) = 0;
  /// The worker's session with `node_id` under `epoch` ended: recorded only
  /// while its row still holds that attachment. An old leader's session
  /// closing after the worker attached to a newer one changes nothing (the
  /// row said DETACHED while the worker ran runs for the new leader: found
  /// by the history checker's running_has_owner, docs/assurance.md).
  virtual Result<void> worker_detached(const std::string& worker_id, const std::string& node_id, Epoch epoch) = 0;
  /// These attached workers were heard from: their last heartbeat is now.
  virtual Result<void> workers_seen(const std::vector<std::string>& worker_ids) = 0;
  virtual Result<void> append_run_log(RunId run, int attempt, const std::string& stream, const std::string& chunk) = 0;
  /// Streamed output, placed by offset (store/output_placement.h): only
  /// text past what the log already holds of its stream is kept (a resent
  /// chunk adds nothing), a gap is logged as lost, and text past
  /// `db_bytes_per_stream` is left to the log archive (one note says so).
  virtual Result<void> append_run_output(const std::vector<OutputChunk>& chunks, std::int64_t db_bytes_per_stream) = 0;
  virtual Result<std::vector<ScheduledJob>> scheduled_jobs() = 0;
  /// Unfinished runs whose job's selector none of `label_sets` (the labels of
  /// the workers taking runs) satisfies: they would wait silently. At most
  /// `limit`, oldest first; id and job_name filled.
  virtual Result<std::vector<DueRun>> unmatched_runs(const std::vector<std::map<std::string, std::string>>& label_sets,
                                                     int limit) = 0;
  /// Runs due for assignment now -- PENDING whose slot has come (and past
  /// any jitter), due RETRY_WAITING, ORPHANED -- whatever their selector and
  /// limits: what dispatch would consider. At most `limit`, oldest first; id
  /// and job_name filled.
  virtual Result<std::vector<DueRun>> waiting_runs(int limit) = 0;
  /// Runs due now that wait because their key is at its concurrency limit
  /// or their rate permits are all taken (schemas/0035), with what the due
  /// read gives (their KeyedLimits), in id order. The due read leaves them
  /// out, so the leader looks for them apart to record why they wait.
  /// Empty where there are no keyed jobs (the fakes).
  virtual Result<std::vector<DueRun>> key_waiting_runs(int /*limit*/) { return std::vector<DueRun>{}; }
  /// What operators set that the leader applies without a restart.
  virtual Result<Controls> read_controls() = 0;
};

}  // namespace baton::store
