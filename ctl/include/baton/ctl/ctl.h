#pragma once
// `baton ctl`: every admin API verb from the command line (docs/ctl.md).
// Where to connect and with which token come from flags, then BATON_ADDR /
// BATON_TOKEN / BATON_TOKEN_FILE, then a config file (--config, BATON_CONFIG,
// or ~/.config/baton/ctl.yaml). Tables by default, `-o json` for scripts.
//
// Exit codes (stable, for scripts):
//   0 done            1 refused (bad request)   2 usage error
//   3 unavailable (no answer, 5xx, no leader)   4 not found
//   5 conflict (a stale version, a name taken)  6 unauthenticated or forbidden
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace baton::ctl {

enum ExitCode : int {
  exit_ok = 0,
  exit_refused = 1,
  exit_usage = 2,
  exit_unavailable = 3,
  exit_not_found = 4,
  exit_conflict = 5,
  exit_auth = 6,
};

/// Reads an environment variable (std::getenv in the binary, a map in tests).
using Env = std::function<std::optional<std::string>(const std::string& name)>;

/// Every verb's words ("runs list", "logs", ...), for docs/ctl.md's test.
std::vector<std::string> verb_names();

/// Runs `baton ctl ARGS...`; returns the exit code.
int run_ctl(const std::vector<std::string>& args, const Env& env, std::ostream& out, std::ostream& err);

}  // namespace baton::ctl
