#pragma once
// An in-memory job_runs table with the same predicates as PgRunStore's SQL
// (store/pg/run_transitions.cpp): the epoch fence read from the lease, the
// expected version, the expected state, and for attempt-scoped writes the
// worker, attempt, lease token (and the adopting epoch where the SQL asks
// for it). For deterministic tests and the simulator; the contract suite
// (store/tests/run_store_contract_test.cpp) runs the same typed tests
// against this and PostgreSQL, so the two cannot drift apart.
//
// FakeRunDb is "the database" (one per simulated cluster, sharing the
// FakeLeaseDb whose epoch fences every write, and the database's clock);
// each node writes through its own FakeRunStore handle, through which faults
// are injected for that node only (unavailable, a reply lost after commit).
//
// It can also model partitioned leadership (docs/scaling.md), for the
// simulator: one FakeLeaseDb per partition, every run in one partition for
// ever, and every statement for one partition (the design's `$p`): its fence
// reads that partition's lease and its rows are that partition's only.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/store/leader_store.h"
#include "baton/store/run_store.h"
#include "baton/store_fake/fake_lease_store.h"

namespace baton::store::fake {

/// The columns of a job_runs row that predicates or readers use.
struct FakeRun {
  RunId id{0};
  int partition = 0;  ///< partitioned leadership: the partition it was created in, for ever
  RunState state = RunState::pending;
  Version version{1};
  int attempt = 1;
  int max_attempts = 1;
  int priority = 0;
  Epoch leader_epoch{0};
  std::optional<std::int64_t> job_definition_id;
  std::optional<std::string> idempotency_key;
  std::optional<std::string> worker;
  std::optional<std::string> lease_token;
  std::string worker_instance;
  ContinuationState continuation = ContinuationState::none;
  std::optional<MonoTime> continuation_deadline;  ///< by the database clock
  std::int64_t continuation_timeout_ms = 0;       ///< 0: not recorded
  int unstarted_assignments = 0;
  std::optional<MonoTime> next_attempt_at;
  std::optional<std::string> cancel_reason;
  std::optional<std::string> progress;  ///< what its task last reported (heartbeat_batch)
  std::string error_code;
  std::string error_msg;
  MonoTime assigned_at{};                         ///< by the database clock, when it last became ASSIGNED
  MonoTime started_at{};                          ///< ... and RUNNING
  std::optional<std::int64_t> slot_unix;          ///< a cron run's slot (scheduled_for), unix seconds
  std::optional<std::int64_t> starts_at_unix_ms;  ///< a cron run's slot plus its jitter: not due before
  std::optional<std::int64_t> event_id;           ///< the event it was made from
};

/// A job_definitions row, as the leader's cron reads and writes it.
struct FakeJob {
  std::int64_t id = 0;
  std::string name;
  std::string schedule;  ///< a cron expression
  std::string time_zone = "UTC";
  std::string misfire_policy = "run_latest";
  int catch_up_limit = 100;
  std::optional<std::int64_t> starting_deadline_ms;
  std::int64_t jitter_ms = 0;
  std::string concurrency_policy = "allow";  ///< allow | forbid | replace
  int max_attempts = 1;
  int priority = 0;
  std::optional<std::int64_t> cron_cursor;  ///< unix seconds: the newest slot created or given up
  std::vector<std::string> on_events;       ///< event kinds that each make a run
  std::vector<std::string> run_after;       ///< jobs whose every success makes a run
  bool deleted = false;
};

/// An events row.
struct FakeEvent {
  std::int64_t id = 0;
  std::string kind;
  std::string dedupe_key;  ///< "" for none
  bool processed = false;
};

/// A decision_ledger row about a cron slot or a range of them.
struct FakeLedgerEntry {
  Epoch epoch{0};
  std::string job;
  std::int64_t slot = 0, slot_last = 0;  ///< unix seconds; slot_last == slot but for a skipped range
  std::string decision;                  ///< created | skipped
  std::string reason;                    ///< on_time | caught_up | concurrency_forbid | event | the plan's reason
  std::optional<RunId> run;              ///< created: the run
};

/// A job_run_attempts row: one per ended execution.
struct FakeAttempt {
  RunId run{0};
  int attempt = 0;
  std::string worker;
  Epoch epoch{0};
  std::string lease_token;
  RunState outcome = RunState::failed;
  std::optional<int> exit_code;
  std::string error_code;  ///< why it ended (the run's error_code then)
  /// Its worker's report after the leader had ended it (record_late_report).
  std::optional<RunState> late_outcome{};
  std::optional<int> late_exit_code{};
};

struct FakeDeadLetter {
  RunId run{0};
  RunState final_state = RunState::failed;
  int attempts = 0;
  std::string error_code;
};

/// A job_run_transitions row: the insert (from_version 0) and every
/// applied update, in commit order.
struct FakeTransition {
  RunId run{0};
  RunState from = RunState::pending;
  RunState to = RunState::pending;
  Version from_version{0};
  Version to_version{0};
  Epoch epoch{0};
  int attempt = 1;                                           ///< after the write
  ContinuationState continuation = ContinuationState::none;  ///< after the write
  std::int64_t continuation_timeout_ms = 0;                  ///< the run's, after the write
  MonoTime at{};                                             ///< commit time, by the database clock
  int partition = 0;  ///< whose lease fenced the statement (the statement's partition)
};

class FakeRunDb {
 public:
  FakeRunDb(const FakeLeaseDb& lease, const Clock& db_clock) : leases_{&lease}, clock_(db_clock) {}
  /// Partitioned leadership: lease `p` fences the statements of partition p.
  FakeRunDb(std::vector<const FakeLeaseDb*> partition_leases, const Clock& db_clock);

  /// The partition the statements that follow are for (FakeRunStore sets
  /// its own before each call; a direct caller sets it). A statement's fence
  /// reads this partition's lease, a run it creates is in it, and a row of
  /// another partition is not there for it (`WHERE partition_id = $p`).
  void use_partition(int p);
  int partitions() const { return static_cast<int>(leases_.size()); }

  CreateResult create_run(Epoch epoch, const NewRun& run);
  std::optional<RunRow> read_run(RunId id) const;

  WriteResult assign(const RunFence& f, const std::string& worker_id);
  WriteResult reassign(const RunFence& f, RunState from, const std::string& worker_id);
  WriteResult start(const RunFence& f, const AttemptFence& a);
  WriteResult heartbeat(const RunFence& f, const AttemptFence& a);
  WriteResult finish(const RunFence& f, const AttemptFence& a, const Finish& fin);
  WriteResult retry_later(const RunFence& f, const AttemptFence& a, const Finish& fin, Millis delay);
  WriteResult orphan(const RunFence& f);
  WriteResult requeue(const RunFence& f);
  WriteResult fail_orphaned(const RunFence& f, const std::string& reason);
  WriteResult fail_unrunnable(const RunFence& f, RunState from, const std::string& code, const std::string& reason);
  WriteResult late_success(const RunFence& f, const AttemptFence& a, const Finish& fin);
  WriteResult record_late_report(const RunFence& f, const AttemptFence& a, const Finish& fin);
  WriteResult cancel(const RunFence& f, RunState from, const std::string& reason);
  WriteResult cancel_attempt(const RunFence& f, const AttemptFence& a, const Finish& fin, const std::string& reason);
  WriteResult begin_confirming(const RunFence& f, Millis deadline_in);
  WriteResult request_cancel(const RunFence& f, const std::string& reason);
  WriteResult adopt(const RunFence& f, const AttemptFence& a);
  BatchWriteResult assign_batch(Epoch epoch, const std::vector<AssignRow>& rows);
  BatchWriteResult start_batch(Epoch epoch, const std::vector<StartRow>& rows);
  BatchWriteResult finish_batch(Epoch epoch, const std::vector<FinishRow>& rows);

  // The reads and the batched heartbeat of store::LeaderStore that the
  // leader's run lifecycle uses (same rules as PgLeaderStore's SQL; ages and
  // deadlines by the database clock). The simulator calls them.
  std::vector<ActiveRun> active_runs(Millis continuation_margin) const;
  /// PENDING whose time has come (or comes within `ahead`: a cron slot),
  /// ORPHANED, and RETRY_WAITING whose next attempt is due, by priority then
  /// id (labels are not modelled: every worker can take any run).
  std::vector<DueRun> due_runs(int limit, Millis ahead = Millis{0}) const;
  /// A run as the dispatcher reads it (due_runs' rows; a trigger's insert).
  static DueRun due_run_of(const FakeRun& r);
  /// What became of the attempt before the one `r` would start now
  /// (baton_previous_attempt, schemas/0041).
  PreviousAttempt previous_attempt(const FakeRun& r) const;
  HeartbeatBatchResult heartbeat_batch(Epoch epoch, const std::vector<HeartbeatRow>& rows);

  // Cron (fake_cron.cpp; the same rules as PgLeaderStore's statements,
  // store/tests/leader_store_contract_test.cpp holds them together).
  /// A new job definition; returns its id.
  std::int64_t define_job(FakeJob job);
  /// The job is deleted: no more slots of it are planned.
  void delete_job(const std::string& name);
  std::vector<ScheduledJob> scheduled_jobs() const;
  /// A slot's run, the job's cursor and the ledger entry, fenced, in one
  /// step; under concurrency_policy forbid no run while another of the
  /// job's runs is unfinished (`forbidden`, a `skipped` entry), under
  /// replace the unfinished ones are named for the caller to cancel.
  Result<CreateResult> create_cron_run(Epoch epoch, const std::string& job, std::int64_t slot_unix, bool caught_up,
                                       std::int64_t jitter_ms);
  Result<CreateResult> skip_cron_slots(Epoch epoch, const std::string& job,
                                       const std::vector<SkippedCronSlots>& ranges);
  /// The database clock as unix milliseconds (a fixed day plus its monotonic
  /// time: the fake has no wall clock).
  std::int64_t unix_ms() const;

  // Events and run-after dependencies (fake_events.cpp; the same rules as
  // PgAdminStore::post_event, the success CTEs of run_transitions.cpp and
  // PgLeaderStore::process_events).
  /// Records an event; with a dedupe key already used, nothing, and the
  /// earlier event's id. Any node may (no fence).
  std::int64_t post_event(const std::string& kind, const std::string& dedupe_key);
  /// Fenced, one step: the oldest unprocessed events (at most `limit`), each
  /// a run of every live job subscribed to its kind (on_events, or run_after
  /// for `job.succeeded:<job>`), once per (job, event), each with a
  /// `created` ledger entry; the events marked processed.
  EventsProcessed process_events(Epoch epoch, int limit);
  const std::vector<FakeEvent>& events() const { return events_; }

  const std::map<std::string, FakeJob>& jobs() const { return jobs_; }
  const std::vector<FakeLedgerEntry>& ledger() const { return ledger_; }

  const std::map<std::int64_t, FakeRun>& runs() const { return runs_; }
  const std::vector<FakeAttempt>& attempts() const { return attempts_; }
  const std::vector<FakeDeadLetter>& dead_letters() const { return dead_letters_; }
  const std::vector<FakeTransition>& transitions() const { return transitions_; }

 private:
  /// The shape of every fenced update: the epoch fence, the row, its
  /// version, then `where` on the row; if all hold, `set` changes it and the
  /// version and epoch move on (and the transition is logged).
  WriteResult update(const RunFence& f, const std::function<bool(const FakeRun&)>& where,
                     const std::function<void(FakeRun&)>& set);
  /// The shape of every batch: the fence judged once for the statement,
  /// then each row on its own predicates (`one`).
  template <class Row, class One>
  BatchWriteResult batch(Epoch epoch, const std::vector<Row>& rows, One&& one);
  static bool holds(const FakeRun& r, const AttemptFence& a);
  std::string new_token();
  void record_attempt(const FakeRun& r, RunState outcome, std::optional<int> exit_code);
  void dead_letter_if_failed(const FakeRun& r);
  /// A job that is defined and not deleted, or bad_input naming it (the
  /// SQL's "unknown job").
  Result<FakeJob*> live_job(const std::string& name);
  /// Inserts a PENDING run under `epoch` (already judged) and logs it.
  FakeRun& insert(Epoch epoch, const NewRun& n);
  /// What a success sets off, in the statement that writes it: the event
  /// `job.succeeded:<job>` when some live job runs after that job (one per
  /// run, deduplicated by run).
  void on_success(const FakeRun& r);

  /// The lease that fences the current statement.
  const FakeLeaseDb& lease() const;
  /// A row the current statement may see (its partition's).
  bool visible(const FakeRun& r) const { return r.partition == partition_; }

  std::vector<const FakeLeaseDb*> leases_;  ///< one per partition
  int partition_ = 0;                       ///< the current statement's
  const Clock& clock_;
  std::map<std::int64_t, FakeRun> runs_;
  std::vector<FakeAttempt> attempts_;
  std::vector<FakeDeadLetter> dead_letters_;
  std::vector<FakeTransition> transitions_;
  std::map<std::string, FakeJob> jobs_;  ///< by name
  std::vector<FakeLedgerEntry> ledger_;
  std::vector<FakeEvent> events_;
  std::int64_t next_id_ = 1;
  std::int64_t next_job_id_ = 1;
  std::uint64_t next_token_ = 1;
};

class FakeRunStore final : public RunStore {
 public:
  explicit FakeRunStore(FakeRunDb& db, int partition = 0) : db_(db), partition_(partition) {}

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
  Result<WriteResult> request_cancel(const RunFence& f, const std::string& reason) override;
  Result<WriteResult> begin_confirming(const RunFence& f, Millis deadline_in) override;
  Result<WriteResult> adopt(const RunFence& f, const AttemptFence& a) override;
  Result<BatchWriteResult> assign_batch(Epoch epoch, const std::vector<AssignRow>& rows) override;
  Result<BatchWriteResult> start_batch(Epoch epoch, const std::vector<StartRow>& rows, Millis stale_after) override;
  Result<BatchWriteResult> finish_batch(Epoch epoch, const std::vector<FinishRow>& rows) override;

  /// While true every call fails with db_unavailable (a partition).
  bool unavailable = false;
  /// When set, the next write is applied and then reported as
  /// outcome_unknown (the reply was lost after commit: the in-doubt case).
  bool lose_next_reply = false;
  /// Asked at the start of each write, unavailable or not (the simulator
  /// draws its fault there): true loses that write's reply like
  /// `lose_next_reply`.
  std::function<bool()> lose_write_reply;
  int calls = 0;

 private:
  template <class T, class F>
  Result<T> call(F&& f, bool is_write);
  FakeRunDb& db_;
  int partition_;  ///< every statement through this handle is for this partition
};

}  // namespace baton::store::fake
