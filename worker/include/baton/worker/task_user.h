#pragma once
// The user a worker's PROGRAM tasks run as (`task_user` in the worker's
// config), distinct from the worker's own: a task then cannot read the
// worker's credential, token, spool or outbox (all private to the worker's
// user), nor signal or trace the worker (docs/security.md, "Task users and
// resources").
//
// Everything is resolved here, before any fork: the supervisor's child
// switches with raw system calls on these values alone (no NSS lookup, no
// allocation after fork).
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace baton::worker {

struct TaskUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  ///< supplementary groups, from the group database
  std::string home;
};

/// Looks `name` up in the user database. Refused, with `why` naming the
/// reason: an unknown user, root, or the user this process runs as (a task
/// user that is the worker's own protects nothing).
std::optional<TaskUser> resolve_task_user(const std::string& name, std::string* why);

/// Empty if this process may switch its children to another user (it is
/// root, or holds CAP_SETUID, CAP_SETGID and CAP_KILL); otherwise why not.
std::string task_user_switch_problem();

/// The capabilities a worker without `task_user` must not hold
/// (security review N1): a worker that is not root but holds CAP_SETUID,
/// CAP_SETGID or CAP_KILL (the packaged unit's AmbientCapabilities=) and
/// runs its tasks as itself. Each task's process drops every capability
/// before exec whatever the config says (task_supervisor.cpp); this refuses
/// the configuration outright so that it is fixed where it is written.
/// Empty when fine; otherwise the error, naming the setting. `euid` and
/// `held` (the capability bits the process holds: effective, permitted or
/// ambient) are parameters so that the rule is tested apart from the host.
std::string capabilities_without_task_user_problem(uid_t euid, unsigned long long held);

/// The same, for this process.
std::string capabilities_without_task_user_problem();

}  // namespace baton::worker
