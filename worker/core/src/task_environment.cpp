#include "baton/worker_core/task_environment.h"

#include "baton/worker_core/task_parameters.h"

namespace baton::worker_core {

const std::vector<std::string>& default_task_env_allowlist() {
  static const std::vector<std::string> names{"PATH", "HOME", "LANG", "LC_*", "TZ", "USER", "LOGNAME", "TMPDIR"};
  return names;
}

namespace {
bool allowed(const std::string& name, const std::vector<std::string>& allowlist) {
  for (const auto& a : allowlist) {
    if (!a.empty() && a.back() == '*') {
      if (name.compare(0, a.size() - 1, a, 0, a.size() - 1) == 0) return true;
    } else if (name == a) {
      return true;
    }
  }
  return false;
}
}  // namespace

std::map<std::string, std::string> attempt_facts(const protocol::AttemptRef& ref,
                                                 const protocol::PreviousAttempt& previous) {
  std::map<std::string, std::string> out{{"RUN_ID", std::to_string(ref.run_id)},
                                         {"ATTEMPT", std::to_string(ref.attempt)},
                                         {"FENCE_TOKEN", ref.lease_token}};
  if (!previous.fate.empty()) {
    out["PREVIOUS_OUTCOME"] = previous.fate;
    out["PREVIOUS_ATTEMPT"] = std::to_string(previous.attempt);
    out["PREVIOUS_WORKER"] = previous.worker;
  } else {
    // A leader of protocol 7 or later names the previous attempt of every
    // attempt after the first; without a name it is an older leader's
    // assignment, and "none" would claim what nobody knows.
    out["PREVIOUS_OUTCOME"] = ref.attempt > 1 ? "unknown" : "none";
  }
  return out;
}

std::vector<std::string> task_environment(const std::vector<std::string>& worker_env,
                                          const std::vector<std::string>& allowlist, const protocol::AttemptRef& ref,
                                          const protocol::PreviousAttempt& previous,
                                          const std::map<std::string, std::string>& parameters,
                                          const std::map<std::string, std::string>& task_env) {
  std::map<std::string, std::string> env;
  for (const auto& entry : worker_env) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string name = entry.substr(0, eq);
    if (allowed(name, allowlist)) env[std::move(name)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : attempt_facts(ref, previous)) env["BATON_" + k] = v;
  for (const auto& [k, v] : parameters) env[parameter_env_name(k)] = v;
  for (const auto& [k, v] : task_env) env[k] = v;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace baton::worker_core
