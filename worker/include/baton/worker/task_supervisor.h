#pragma once
// The per-task supervisor: a process between the worker and a PROGRAM task
// that makes the task's whole process tree die with its attempt, and with
// its worker, including detached grandchildren (double fork, setsid) that
// neither the task's process group nor PR_SET_PDEATHSIG reaches.
//
//   worker --fork--> supervisor (child subreaper) --fork/exec--> task ...
//
// The supervisor is a child subreaper, so every descendant orphaned below it
// is re-parented to it, and it can find and kill all of them. It kills the
// whole tree when:
//   - the task's main process exits (nothing of an ended attempt lives on);
//   - the worker asks (cancel, timeout, continuation deadline);
//   - the worker dies: its end of the control pipe closes (kill -9, OOM);
//   - the dead-man's switch fires: the worker renews it (a byte on the
//     control pipe) only while the attempt may continue -- attached, or
//     detached for less than the continuation timeout -- so a worker that is
//     paused (SIGSTOP), stalled or cut off cannot keep the tree alive. The
//     switch timeout is below the leader's continuation margin, so the tree
//     is dead before any leader may retry the run (docs/protocol.md).
// The supervisor then exits with the task's status (exit code, or 128 +
// signal). It also reports that status on the control socket the moment it
// reaps the task (woken by a pidfd, not by its 20 ms poll), before it tears
// the rest of the tree down: a supervisor killed after its task ended (the
// OOM killer, an operator) would otherwise take a success with it, and the
// attempt would be retried (docs/chaos.md, "What it found"). It runs in the forked child of a multi-threaded process
// without exec, so it uses only async-signal-safe calls (no allocation).
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace baton::worker {

/// What the task's own process becomes before exec, all resolved before the
/// fork (task_user.h): another user, and per-process limits where the tree's
/// cgroup cannot hold them.
struct TaskProcessLimits {
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
  const gid_t* groups = nullptr;
  std::size_t group_count = 0;
  std::uint64_t nproc = 0;          ///< RLIMIT_NPROC (per user: needs switch_user); 0 = unchanged
  std::uint64_t address_space = 0;  ///< RLIMIT_AS of each process; 0 = unchanged
};

struct SupervisedTask {
  pid_t supervisor = -1;  ///< wait for this pid: its exit status is the task's
  int control_fd = -1;    ///< renew / kill; closing it kills the tree
};

/// Forks the supervisor, which starts `argv` (execvpe with `envp`, in `cwd`
/// if not null, stdout/stderr on `out_fd`/`err_fd`, in its own process
/// group). If `cgroup_procs_fd` is an open cgroup.procs file (task_cgroup.h),
/// the supervisor joins that group before it forks the task, so the whole
/// tree lives in it. If `exit_record_fd` is an open exit record
/// (exit_record.h), the supervisor appends the task's wait status to it and
/// syncs it the moment it reaps a task that ended on its own, before it
/// reports the status: the end outlives a worker killed in that instant.
/// All arrays must be built before the call. supervisor = -1 if the fork
/// failed.
SupervisedTask start_supervised(char* const* argv, char* const* envp, const char* cwd, int out_fd, int err_fd,
                                std::chrono::milliseconds switch_timeout, int cgroup_procs_fd = -1,
                                const TaskProcessLimits& limits = {}, int exit_record_fd = -1);

/// The task's wait status as the supervisor reported it on `control_fd`
/// (non-blocking; read it once the supervisor has exited). Empty if it
/// never did: it was killed before its task ended, or before it reaped it.
std::optional<int> reported_task_status(int control_fd);

/// Renews the dead-man's switch. Thread-safe (one write).
void renew_switch(int control_fd);
/// Asks the supervisor to kill the whole tree now. Thread-safe.
void kill_tree(int control_fd);

// A record of each live supervisor, one file per pid in the worker's spool
// (`trees/PID`, holding the process's start time), so that a new incarnation
// of the worker can find supervisors the old one left behind -- one that was
// stopped with it, or had not yet noticed its worker die -- and kill their
// trees before it attaches and can be assigned anything.
void record_supervisor(const std::string& dir, pid_t supervisor);
void forget_supervisor(const std::string& dir, pid_t supervisor);
/// SIGTERMs every recorded supervisor that is still the same process (pid
/// and start time), waits up to `grace` for each to kill its tree and exit,
/// then SIGKILLs what is left of it. Returns how many were found alive.
int kill_leftover_supervisors(const std::string& dir, std::chrono::milliseconds grace);

}  // namespace baton::worker
