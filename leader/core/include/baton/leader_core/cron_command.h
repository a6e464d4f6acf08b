#pragma once
// `baton cron next EXPR [--tz ZONE] [--from TIME] [-n N]`: the next N fire
// times of a cron expression, from the same parser and planner the leader
// schedules with, so an operator can check a schedule (and a zone's
// daylight-saving days) before applying it. Pure: the caller passes "now" and
// prints what comes back.
#include <chrono>
#include <string>
#include <vector>

namespace baton::leader_core {

struct CronCommandResult {
  int exit_code = 0;  ///< 0 printed the times, 2 usage or a bad expression, zone or time
  std::string out;    ///< one ISO 8601 time with its offset per line
  std::string err;
};

/// `args` are what follows "baton cron".
CronCommandResult run_cron_command(const std::vector<std::string>& args, std::chrono::sys_seconds now);

/// The usage text (also printed by --help).
extern const char* const kCronUsage;

}  // namespace baton::leader_core
