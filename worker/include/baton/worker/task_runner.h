#pragma once
// Executes one attempt of a run: its chain of tasks in order, on the calling
// thread. PROGRAM tasks are exec'd without a shell under a supervisor that
// kills their whole process tree on exit, timeout, cancel, worker death or a
// missed renewal (task_supervisor.h); SQL tasks run psql against a connection
// named in the worker's own config; BUILTIN tasks are NOOP, SLEEP, LOG, FAIL.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "baton/protocol/messages.h"
#include "baton/worker/task_cgroup.h"
#include "baton/worker/task_user.h"
#include "baton/worker_core/task_environment.h"

namespace baton::worker {

struct AttemptContext {
  protocol::AttemptRef ref;
  std::chrono::milliseconds timeout{0};  ///< whole chain; 0 = none
  std::map<std::string, std::string> sql_connections;
  /// The run's parameters (task_parameters.h: environment, {{param.NAME}},
  /// psql variables).
  std::map<std::string, std::string> parameters;
  /// What became of the run's previous attempt (protocol::Assign::previous).
  protocol::PreviousAttempt previous;
  /// Called with (pid, started) when a task's supervisor starts and exits
  /// (a record for operators; the chaos checker keeps its own evidence).
  std::function<void(int pid, bool started)> on_process;
  /// The task tree is killed if renew() is not called for this long (the
  /// dead-man's switch; task_supervisor.h). 0: no switch.
  std::chrono::milliseconds switch_timeout{0};
  /// The worker's variables a task inherits (task_environment.h).
  std::vector<std::string> env_allowlist = worker_core::default_task_env_allowlist();
  /// Where each PROGRAM task's tree gets a cgroup of its own (null: none).
  const TaskCgroups* cgroups = nullptr;
  /// The user PROGRAM tasks run as (null: the worker's own; task_user.h).
  const TaskUser* task_user = nullptr;
  /// Where the attempt's exit record is made (exit_records.h) before its
  /// last task starts, if that is a PROGRAM task ("": none).
  std::string exit_record_dir;
  /// Called on the runner's thread with every piece of output a task
  /// prints (stream 0: stdout, 1: stderr), as it is read: the agent streams
  /// it to the leader (worker_core/output_stream.h).
  std::function<void(int stream, const char* data, std::size_t n)> on_output;
};

class TaskRunner {
 public:
  /// Runs every task; returns the finish report (outcome, exit code, tails,
  /// per-task results).
  protocol::Finish run(const AttemptContext& ctx, const std::vector<protocol::Task>& tasks);
  /// Thread-safe: kills the running process group and stops the chain; the
  /// outcome becomes CANCELED (or FAILED with `reason` if `as_failure`).
  void cancel(const std::string& reason, bool as_failure);
  /// Thread-safe: renews the dead-man's switch of the running PROGRAM task.
  /// The agent calls it while the attempt may continue.
  void renew();

 private:
  struct TaskOutcome {
    bool ok = false;
    int exit_code = 0;
    bool timed_out = false;
    bool canceled = false;
    std::string error;
  };
  TaskOutcome run_program(const AttemptContext& ctx, const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env, const std::string& cwd,
                          const protocol::TaskResources& resources, std::chrono::steady_clock::time_point deadline);
  TaskOutcome run_builtin(const protocol::Task& t, std::chrono::steady_clock::time_point deadline);
  TaskOutcome run_sql(const AttemptContext& ctx, const std::string& url, const std::string& sql,
                      const std::string& run_as, std::chrono::steady_clock::time_point deadline);
  void append(int stream, const char* data, std::size_t n);

  std::atomic<bool> cancel_{false};
  std::atomic<bool> cancel_as_failure_{false};
  std::string cancel_reason_;
  std::mutex control_mutex_;
  int control_fd_ = -1;      ///< the running task's supervisor, -1 if none (under control_mutex_)
  int exit_record_fd_ = -1;  ///< the exit record the next PROGRAM task's supervisor appends to (-1: none)
  std::string stdout_tail_, stderr_tail_;
  const AttemptContext* ctx_ = nullptr;  ///< the attempt being run (for on_output)
};

}  // namespace baton::worker
