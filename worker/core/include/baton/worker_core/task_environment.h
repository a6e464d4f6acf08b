#pragma once
// The environment a task starts with (docs/operations.md, "Task
// environment"). Pure: the worker's variables in, the task's out.
//
// A task does not inherit the worker's whole environment: a worker started
// by a service manager or a shell may hold credentials (PGPASSWORD, cloud
// keys) that no job asked for. It gets:
//   1. the worker's variables whose names the allowlist names -- NAME, or
//      PREFIX* for every name starting with PREFIX;
//   2. BATON_RUN_ID, BATON_ATTEMPT and BATON_FENCE_TOKEN, and what became
//      of the previous attempt: BATON_PREVIOUS_OUTCOME (none for a first
//      attempt; unknown when the leader did not say, an older one), and
//      BATON_PREVIOUS_ATTEMPT and BATON_PREVIOUS_WORKER when there was one
//      (docs/scheduling.md, "What became of the previous attempt");
//   3. the run's parameters as BATON_PARAM_* (task_parameters.h);
//   4. the task's own `env` from the job definition;
// a later entry replacing an earlier one of the same name.
#include <map>
#include <string>
#include <vector>

#include "baton/protocol/messages.h"

namespace baton::worker_core {

/// PATH, HOME, LANG, LC_*, TZ, USER, LOGNAME, TMPDIR.
const std::vector<std::string>& default_task_env_allowlist();

/// What an attempt is told of itself and of the attempt before it: the
/// BATON_* variables above by name, without the prefix's "BATON_" --
/// RUN_ID, ATTEMPT, FENCE_TOKEN, PREVIOUS_OUTCOME, and PREVIOUS_ATTEMPT and
/// PREVIOUS_WORKER when there was a previous attempt. A PROGRAM task gets
/// them as BATON_NAME variables, a SQL task as the session settings
/// baton.name (lower case).
std::map<std::string, std::string> attempt_facts(const protocol::AttemptRef& ref,
                                                 const protocol::PreviousAttempt& previous);

/// "NAME=value" entries, sorted by name.
std::vector<std::string> task_environment(const std::vector<std::string>& worker_env,
                                          const std::vector<std::string>& allowlist, const protocol::AttemptRef& ref,
                                          const protocol::PreviousAttempt& previous,
                                          const std::map<std::string, std::string>& parameters,
                                          const std::map<std::string, std::string>& task_env);

}  // namespace baton::worker_core
