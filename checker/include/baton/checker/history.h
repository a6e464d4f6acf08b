#pragma once
// A recorded chaos history, as the checker reads it from a run directory
// (layout in docs/chaos.md). Three kinds of evidence, none of them the
// coordinator's logs:
//   - what the tasks themselves wrote (evidence/tasks.jsonl, written by
//     baton-chaos-task: process starts, liveness ticks and exit statuses);
//   - what the harness did and saw (nemesis.log with inject / effect / heal
//     lines, probes.log with each node's /status answers, submissions.log,
//     outbox snapshots taken while a killed worker was down);
//   - the database's own records (db/*.jsonl, exported after the run).
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace baton::checker {

struct WindowInfo {
  std::int64_t start_us = 0, end_us = 0;
  std::int64_t start_mono_ns = 0, end_mono_ns = 0;
  std::string cron_job;
  std::vector<std::string> faults;  ///< requested kinds
  std::int64_t continuation_ms = 0, continuation_margin_ms = 0;
  std::int64_t lease_ms = 0, poll_ms = 0;
  /// How long a run may stay RUNNING on a worker that detached, or past
  /// its CONFIRMING deadline, before the leader is late in giving it up
  /// (running_has_owner; 0: the leader's own timings, lease + poll, twice).
  std::int64_t owner_grace_ms = 0;
};

/// One line of task evidence.
struct TaskEvent {
  std::string ev;  ///< start | alive | exit
  std::int64_t run = 0;
  int attempt = 0;
  std::string token, role, worker;
  std::int64_t pid = 0, pstart = 0, root_pid = 0, root_pstart = 0;
  std::int64_t mono_ns = 0, wall_us = 0;
  std::optional<int> status;  ///< exit only
};

/// One process as its evidence shows it: alive at least over [start, last].
struct ProcessLife {
  std::int64_t run = 0;
  int attempt = 0;
  std::string token, role, worker;
  std::int64_t pid = 0, pstart = 0;
  std::int64_t start_ns = 0, last_ns = 0;
  std::int64_t start_wall_us = 0;
  std::optional<int> exit_status;  ///< none: killed (or still running when the run ended)
};

/// One execution of a run: the task's main process and every descendant it
/// reported, keyed by the main process's (pid, pstart).
struct Execution {
  std::int64_t run = 0;
  int attempt = 0;
  std::string token, worker;
  std::int64_t root_pid = 0, root_pstart = 0;
  std::vector<ProcessLife> processes;  ///< main first when its start was seen
  std::optional<ProcessLife> main;
  /// Alive at least over [first start, last sign of life] of any process.
  std::int64_t from_ns = 0, to_ns = 0;
  bool succeeded() const { return main && main->exit_status && *main->exit_status == 0; }
};

struct NemesisEvent {
  std::int64_t t_us = 0, mono_ns = 0;
  std::string phase;  ///< inject | effect | heal
  std::string fault, target, detail;
};

/// A fault from its injection to its heal (heal = end of run if never healed).
struct FaultWindow {
  std::string fault, target, detail;
  std::int64_t from_ns = 0, to_ns = 0;
  std::int64_t from_us = 0, to_us = 0;
  bool took_effect = false;
};

struct Probe {
  std::int64_t mono_ns = 0, t_us = 0;
  std::string node;
  bool up = false;
  std::string role, leader;
  std::int64_t epoch = 0;
};

struct RunRow {
  std::int64_t id = 0;
  std::string job, state, key, error_code;
  int attempt = 0, max_attempts = 0;
  std::int64_t slot = 0;  ///< unix seconds, 0 if not time-triggered
  std::int64_t created_us = 0;
  std::int64_t event_id = 0;      ///< the event it was made from, 0 if none
  std::string concurrency_key{};  ///< its key under keyed concurrency (schemas/0035), "" if none
  // Its state when the history was taken (running_has_owner): the worker
  // it is assigned to and its continuation. Empty in a chaos export, which
  // is taken after every run finished.
  std::string worker{}, continuation{};
  std::optional<std::int64_t> continuation_deadline_us{};
};

/// A worker as the database recorded it when the history was taken.
struct WorkerRow {
  std::string id;
  bool attached = false;
  std::optional<std::int64_t> detached_us;  ///< when it last detached
};

/// One recorded event (db/events.jsonl).
struct EventRow {
  std::int64_t id = 0;
  std::string kind, dedupe_key;
  bool processed = false;
};

struct TransitionRow {
  std::int64_t id = 0, run = 0;
  std::string from, to, continuation;
  std::optional<std::int64_t> from_version;
  std::int64_t to_version = 0;
  int attempt = 0;
  std::int64_t epoch = 0;
  std::optional<std::int64_t> commit_us;  ///< none: no commit timestamp (a failure, never a pass)
  /// The continuation timeout the run carries (sent to its worker with the
  /// attempt); none for histories written before it was recorded.
  std::optional<std::int64_t> continuation_ms;
};

struct EpochRow {
  std::int64_t epoch = 0;
  std::string node, incarnation;
  std::optional<std::int64_t> commit_us;
};

struct AttemptRow {
  std::int64_t run = 0;
  int attempt = 0;
  std::string worker, outcome, token;
  std::optional<int> exit_code;
  /// When the database recorded it started and ended (unix us); none for an
  /// attempt that never started, or has not ended.
  std::optional<std::int64_t> started_us{}, finished_us{};
};

struct DeadLetterRow {
  std::int64_t run = 0;
  std::string final_state;
  int attempts = 0;
};

/// A job definition's overlap settings (docs/scheduling.md, "Overlap").
struct JobRow {
  std::string name;
  std::optional<std::int64_t> max_instances;
  std::string concurrency_policy = "allow";
  bool mutually_exclusive = false;   ///< no two such executions at once
  bool exclusive_execution = false;  ///< no other execution at all while one of it is alive
  std::vector<std::string> on_events;
  std::optional<std::int64_t> concurrency_limit{};  ///< executions alive at once per key
  /// Active runs allowed at once: max_instances, 1 under forbid/replace.
  std::optional<std::int64_t> limit() const {
    if (concurrency_policy == "forbid" || concurrency_policy == "replace") return 1;
    return max_instances;
  }
};

/// One decision-ledger entry about cron slots (docs/scheduling.md).
struct LedgerRow {
  std::string job, decision, reason;  ///< decision: created | skipped
  std::int64_t slot = 0;              ///< unix seconds
  std::int64_t slot_last = 0;         ///< a skipped range's last slot; == slot otherwise
  std::optional<std::int64_t> run;    ///< created: the run
  std::int64_t epoch = 0;
};

/// A finish found in a killed worker's outbox snapshot and not acknowledged.
struct DurableFinish {
  std::string worker;
  std::int64_t run = 0;
  int attempt = 0;
  std::string token, outcome;
};

struct History {
  WindowInfo window;
  std::vector<NemesisEvent> nemesis;
  std::vector<FaultWindow> faults;
  std::map<std::int64_t, std::vector<Execution>> executions;  ///< by run, in start order
  std::int64_t evidence_lines = 0, evidence_bad_lines = 0;
  std::vector<Probe> probes;
  std::map<std::int64_t, RunRow> runs;
  std::vector<TransitionRow> transitions;  ///< in commit order (log id)
  std::vector<EpochRow> epochs;
  std::vector<AttemptRow> attempts;
  std::vector<DeadLetterRow> dead_letters;
  std::vector<LedgerRow> ledger;
  std::map<std::string, JobRow> jobs;  ///< by name
  std::vector<EventRow> events;
  std::vector<std::string> accepted_events;  ///< dedupe keys of events the harness saw accepted
  std::vector<DurableFinish> durable_finishes;
  std::vector<std::string> accepted_keys;
  std::vector<std::string> read_errors;  ///< missing or unreadable inputs
  /// The database's records as they stood at `taken_us` (unix us): the
  /// workers, for running_has_owner. Empty in a chaos export.
  std::map<std::string, WorkerRow> workers;
  std::int64_t taken_us = 0;
  /// Runs present only for what they tell of the others (a slice of a live
  /// database: a run of the same slot, key or event, a run of the same job
  /// that ran beside one): their rows and attempts, never judged
  /// themselves. Empty in a chaos export, which holds every run whole.
  std::set<std::int64_t> context_runs;
  /// The recorded writes of the context runs, never judged: only where
  /// they end an attempt's execution (executions_from_attempts: a context
  /// run given up and later reported runs until it was given up, as a run
  /// of the slice does). Empty in a chaos export.
  std::vector<TransitionRow> context_transitions;
};

/// Reads a history directory. Missing files are reported in read_errors
/// (the checker turns them into violations), never silently empty.
History load_history(const std::string& dir);

/// A history read from the database alone (production: `baton verify`, the
/// leader's sweep) has no task evidence: its executions are the attempts
/// as the database recorded them, each from its start to its end (or to
/// `taken_us` while it runs), a success being an attempt recorded
/// SUCCEEDED. Replaces h.executions.
void executions_from_attempts(History& h);

/// Groups task evidence into processes and executions (exposed for tests).
std::map<std::int64_t, std::vector<Execution>> build_executions(const std::vector<TaskEvent>& events);

}  // namespace baton::checker
