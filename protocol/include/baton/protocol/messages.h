#pragma once
// The worker <-> leader WebSocket protocol (docs/protocol.md): one typed
// struct per message and a variant of all of them. JSON text frames; every
// frame carries "type" and "version". This header has no I/O and no JSON:
// codec.h turns frames into these values and back.
#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace baton::protocol {

/// The protocol versions this binary speaks (docs/protocol.md, "Versions").
/// A connection speaks the highest version both ends know: the worker's
/// hello, always a version-1 frame, names its range (`protocol`), and the
/// node's welcome names the version chosen; frames after it carry that
/// version. Version 2 adds the negotiation fields themselves and
/// `error.retry_after_ms`; a version-1 peer never sees either. Version 3
/// adds the `batch` frame (codec.h, next_frame). Version 4 adds
/// `assign.start_granted`: the assignment carries the start (docs/fencing.md).
/// Version 5 adds `heartbeat.progress`: what each running task last reported.
/// Version 6 adds a task's own knobs (`timeout_ms`, `parameters`, `run_as`;
/// docs/scheduling.md, "Chains"), which an older worker would ignore: a
/// leader places a run whose tasks use them on version-6 workers only.
/// Version 7 adds `assign.previous`: what became of the run's previous
/// attempt (docs/scheduling.md, "What became of the previous attempt").
inline constexpr int protocol_version_min = 1;
inline constexpr int protocol_version_max = 7;
inline constexpr int protocol_version = protocol_version_max;  ///< the newest (`baton --version`)

/// The version a node and a worker speak, or nullopt when their ranges do
/// not meet.
inline std::optional<int> negotiate_version(int node_min, int node_max, int worker_min, int worker_max) {
  const int chosen = node_max < worker_max ? node_max : worker_max;
  if (chosen < node_min || chosen < worker_min) return std::nullopt;
  return chosen;
}
/// Frames larger than this are rejected before parsing (and the socket closed).
inline constexpr std::size_t frame_bytes_max = 1 << 20;
/// From this version on, a `batch` frame carries several messages.
inline constexpr int batch_version_min = 3;
/// From this version on, an `assign` may carry the start grant.
inline constexpr int start_grant_version_min = 4;
/// From this version on, a `heartbeat` may carry tasks' progress.
inline constexpr int progress_version_min = 5;
/// From this version on, a task may carry its own timeout, parameters and
/// role (Task::needs_knobs).
inline constexpr int task_knobs_version_min = 6;
/// From this version on, an `assign` may carry the previous attempt's fate.
inline constexpr int provenance_version_min = 7;
/// A progress text is at most this many bytes (a reader refuses more).
inline constexpr std::size_t progress_text_bytes_max = 256;
/// At most this many messages in one batch frame (a reader refuses more).
inline constexpr std::size_t batch_messages_max = 1024;
/// A sender joins queued frames into one batch only up to this many bytes,
/// well below frame_bytes_max; a frame larger than it goes alone.
inline constexpr std::size_t batch_bytes_max = 256 * 1024;
static_assert(batch_bytes_max < frame_bytes_max / 2);
inline constexpr std::size_t tasks_per_run_max = 64;
inline constexpr std::size_t running_per_worker_max = 4096;
inline constexpr std::size_t output_tail_bytes_max = 16 * 1024;
static_assert(output_tail_bytes_max < frame_bytes_max / 4);
/// An `output` frame carries at most this much text.
inline constexpr std::size_t output_chunk_bytes_max = 16 * 1024;
static_assert(output_chunk_bytes_max < frame_bytes_max / 8);

/// Identifies one attempt of one run; every run-scoped message carries it.
struct AttemptRef {
  std::int64_t run_id = 0;
  int attempt = 0;
  std::string lease_token;
  friend bool operator==(const AttemptRef&, const AttemptRef&) = default;
  /// By run, then attempt, then token: a run's attempts are neighbours in
  /// an ordered container, and most comparisons end at an integer.
  friend auto operator<=>(const AttemptRef&, const AttemptRef&) = default;
};

enum class TaskKind { program, sql, builtin };

/// The built-in tasks (BUILTIN): on the wire and in job files as NOOP,
/// SLEEP, LOG and FAIL (vocabulary.h maps them).
enum class Builtin { noop, sleep, log, fail };

/// How an attempt ended, as its worker reports it in `finish`: on the wire
/// SUCCEEDED, FAILED, TIMED_OUT, CANCELED.
enum class Outcome { succeeded, failed, timed_out, canceled };

/// What a failed task means for its chain (docs/scheduling.md, "Chains").
enum class TaskOnError {
  stop,       ///< the chain stops; the run fails (the default)
  continue_,  ///< the chain goes on; the run fails at its end
  ignore,     ///< the chain goes on; the failure does not count
};

/// Limits on a PROGRAM task's whole process tree (docs/security.md, "Task
/// users and resources"): written to the tree's cgroup where the host has
/// the controller, otherwise the nearest per-process limit. 0: no limit.
struct TaskResources {
  std::int64_t memory_bytes = 0;  ///< memory.max (else RLIMIT_AS of each process)
  std::int64_t pids = 0;          ///< pids.max (else RLIMIT_NPROC of the task user)
  std::int64_t cpu_millis = 0;    ///< cpu.max in thousandths of one CPU (cgroup only)
  bool empty() const { return memory_bytes == 0 && pids == 0 && cpu_millis == 0; }
  friend bool operator==(const TaskResources&, const TaskResources&) = default;
};

struct Task {
  TaskKind kind = TaskKind::builtin;
  std::string name;
  std::vector<std::string> command;        ///< PROGRAM: argv (exec, no shell)
  std::map<std::string, std::string> env;  ///< PROGRAM: extra environment
  std::string cwd;                         ///< PROGRAM: working directory
  std::string connection;                  ///< SQL: a connection name from the worker's config
  std::string sql;                         ///< SQL: statement text
  Builtin builtin = Builtin::noop;         ///< BUILTIN: which one
  std::string argument;                    ///< BUILTIN: SLEEP duration, LOG text, FAIL message
  bool ignore_error = false;               ///< older leaders' form of on_error ignore
  TaskOnError on_error = TaskOnError::stop;
  TaskResources resources;  ///< PROGRAM: limits on the task's tree
  /// The task's own timeout (0: none; the run's timeout still bounds the
  /// chain): a task still running after it is killed and fails, and its
  /// on_error decides what follows, as for any failure.
  std::int64_t timeout_ms = 0;
  /// Parameter values of this task alone, over the run's (the job's
  /// defaults overlaid by the trigger's).
  std::map<std::string, std::string> parameters{};
  /// SQL: the role the statement runs as (SET ROLE); "" the connection's.
  std::string run_as{};
  /// Whether it uses a knob a worker older than task_knobs_version_min
  /// would ignore.
  bool needs_knobs() const { return timeout_ms > 0 || !parameters.empty() || !run_as.empty(); }
  friend bool operator==(const Task&, const Task&) = default;
};

struct Hello {
  std::string worker_id;
  std::string token;
  int capacity = 1;
  std::map<std::string, std::string> labels;
  std::vector<AttemptRef> running;  ///< attempts this worker is executing right now
  /// Attempts whose process has ended and whose finish is not yet
  /// acknowledged (in the outbox): held, not lost, until finish_ack.
  std::vector<AttemptRef> finished;
  /// A leader endpoint this worker failed to connect to since it was last
  /// attached: a follower that would redirect it there holds the connection
  /// until a newer leader is known instead (no redirect ping-pong while a
  /// dead leader's lease runs out).
  std::string unreachable_leader;
  /// This worker process (random, new at every start): a leader tells a
  /// reconnect of the same process from a second process using the same
  /// worker id, whose lists say nothing about the first one's attempts.
  std::string instance;
  /// The instance that ran on this worker's spool before this one, whose
  /// task trees this one killed before attaching: its attempts are known
  /// dead, so this worker's lists speak for them too.
  std::string succeeds;
  /// The protocol versions the worker speaks (`protocol: {min, max}`); a
  /// hello without them (a version-1 worker) speaks only its frame's version.
  int protocol_min = protocol_version_min;
  int protocol_max = protocol_version_min;
  /// Runs the worker will hold assigned beyond its free slots (0..capacity;
  /// absent: 0). It asks to start them one by one as slots free, so a slot
  /// never waits for a round trip to the leader to get its next run.
  int prefetch = 0;
  friend bool operator==(const Hello&, const Hello&) = default;
};
/// The timings a worker keeps until its first welcome says otherwise (and
/// a welcome's defaults).
inline constexpr std::int64_t default_heartbeat_interval_ms = 1000;
inline constexpr std::int64_t default_heartbeat_timeout_ms = 5000;
inline constexpr std::int64_t default_continuation_margin_ms = 10000;
struct Welcome {
  std::string node_id;
  std::int64_t epoch = 0;
  std::int64_t heartbeat_interval_ms = default_heartbeat_interval_ms;
  std::int64_t heartbeat_timeout_ms = default_heartbeat_timeout_ms;
  std::int64_t continuation_timeout_ms = 30000;  ///< how long to keep a run going while detached
  /// The leader waits continuation timeout + this before it retries an
  /// attempt of a detached worker; the worker's dead-man's switch fires well
  /// inside it (docs/protocol.md).
  std::int64_t continuation_margin_ms = default_continuation_margin_ms;
  /// Attempts of `hello.running` this leader has adopted (written at its
  /// epoch) before this welcome: only these restart their continuation
  /// clock on the worker. A welcome alone proves nothing about a run.
  std::vector<AttemptRef> adopted;
  /// The version chosen for this connection (absent in a version-1 welcome:
  /// then 1).
  int protocol = protocol_version_min;
  friend bool operator==(const Welcome&, const Welcome&) = default;
};
struct Redirect {
  std::string leader_endpoint;  ///< empty when no leader is known
  std::int64_t epoch = 0;
  friend bool operator==(const Redirect&, const Redirect&) = default;
};
struct Error {
  std::string code;  ///< stable: bad_frame, too_large, unauthenticated, forbidden, unavailable, bad_version, protocol
  std::string message;
  /// Version 2: how long the worker should wait before it connects again
  /// (0: its own backoff). A refusal for credentials or versions is a
  /// configuration problem: retrying every few hundred milliseconds only
  /// floods both logs.
  std::int64_t retry_after_ms = 0;
  friend bool operator==(const Error&, const Error&) = default;
};
/// What became of the attempt before this one (schemas/0041): its fate --
/// succeeded_unacknowledged, fenced_out, lost_contact, timed_out or failed
/// -- its number and its worker. Empty fate: this is the run's first.
struct PreviousAttempt {
  std::string fate;
  int attempt = 0;
  std::string worker;
  friend bool operator==(const PreviousAttempt&, const PreviousAttempt&) = default;
};
/// The fates a previous attempt may have, as the reader accepts them.
bool is_attempt_fate(const std::string& fate);

struct Assign {
  AttemptRef ref;
  std::vector<Task> tasks;
  std::int64_t timeout_ms = 0;  ///< 0: no timeout
  /// How long the worker keeps this attempt going while cut off from every
  /// leader; the leader keeps the same value with the run. 0: the value of
  /// the last welcome (a leader that predates the field).
  std::int64_t continuation_timeout_ms = 0;
  /// The run's parameters (docs/scheduling.md, "Parameters"): the job's
  /// defaults overlaid by the run's own, each value as text (strings as
  /// they are, anything else as compact JSON). Tasks receive them as
  /// BATON_PARAM_* variables, {{param.NAME}} in their arguments, and psql
  /// variables.
  std::map<std::string, std::string> parameters{};
  /// Version 4: the leader wrote this attempt RUNNING with its assignment,
  /// in one fenced statement committed before this frame left (the worker
  /// had a free slot): the worker starts it without asking, as if a
  /// `start_granted` had followed.
  bool start_granted = false;
  /// Version 7: what became of the run's previous attempt; a task sees it
  /// as BATON_PREVIOUS_* (docs/scheduling.md). Empty fate: none.
  PreviousAttempt previous{};
  friend bool operator==(const Assign&, const Assign&) = default;
};
struct Start {
  AttemptRef ref;
  friend bool operator==(const Start&, const Start&) = default;
};
struct StartGranted {
  AttemptRef ref;
  friend bool operator==(const StartGranted&, const StartGranted&) = default;
};
struct StartDenied {
  AttemptRef ref;
  std::string reason;
  friend bool operator==(const StartDenied&, const StartDenied&) = default;
};
/// What an attempt's task last reported of its progress (free text).
struct Progress {
  AttemptRef ref;
  std::string text;
  friend bool operator==(const Progress&, const Progress&) = default;
};
struct Heartbeat {
  std::vector<AttemptRef> running;
  /// Ended, finish not yet acknowledged (see Hello::finished).
  std::vector<AttemptRef> finished;
  /// Assigned to this worker and not started (a start asked for or due).
  /// A RUNNING attempt in none of the three lists of a heartbeat is one the
  /// worker does not have: positive evidence that it is lost.
  std::vector<AttemptRef> assigned;
  /// Version 5: the progress a running attempt's task last reported, for
  /// the attempts whose progress changed since the worker's last heartbeat
  /// (all of them after a welcome).
  std::vector<Progress> progress{};
  friend bool operator==(const Heartbeat&, const Heartbeat&) = default;
};
struct TaskResult {
  std::string name;
  int exit_code = 0;
  std::int64_t duration_ms = 0;
  bool ok = true;
  friend bool operator==(const TaskResult&, const TaskResult&) = default;
};
struct Finish {
  AttemptRef ref;
  Outcome outcome = Outcome::failed;  ///< never succeeded unless a worker said so
  std::optional<int> exit_code;
  std::string error;
  std::string stdout_tail;
  std::string stderr_tail;
  std::int64_t duration_ms = 0;
  std::vector<TaskResult> tasks;
  /// Set by a worker that streamed this attempt's output in `output`
  /// frames: the length of each stream (the offset after its last byte).
  /// The tails are then not logged again, and a leader can tell that
  /// output went missing.
  std::optional<std::int64_t> stdout_bytes{};
  std::optional<std::int64_t> stderr_bytes{};
  friend bool operator==(const Finish&, const Finish&) = default;
};
/// Task output while an attempt runs (docs/protocol.md, "Output"): the
/// text [offset, offset + data.size()) of one stream of the attempt. The
/// worker turns the task's raw bytes into valid UTF-8 first, and offsets
/// count that text, so a chunk sent twice (after a reconnect) lands on the
/// same bytes. Best effort, never acknowledged.
struct Output {
  AttemptRef ref;
  std::string stream;  ///< "stdout" or "stderr"
  std::int64_t offset = 0;
  std::string data;  ///< at most output_chunk_bytes_max bytes
  friend bool operator==(const Output&, const Output&) = default;
};
struct FinishAck {
  AttemptRef ref;
  friend bool operator==(const FinishAck&, const FinishAck&) = default;
};
struct Cancel {
  AttemptRef ref;
  std::string reason;
  friend bool operator==(const Cancel&, const Cancel&) = default;
};
struct Drain {
  friend bool operator==(const Drain&, const Drain&) = default;
};

using Message = std::variant<Hello, Welcome, Redirect, Error, Assign, Start, StartGranted, StartDenied, Heartbeat,
                             Finish, FinishAck, Cancel, Drain, Output>;

/// The "type" string of a message.
const char* type_name(const Message& m);

}  // namespace baton::protocol
