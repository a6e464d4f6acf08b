#pragma once
// Which cron slots of one job to create now: a pure function of the job's
// schedule, zone and misfire policy, the newest slot already created, the
// database's clock and the lookahead. The shell (ControlLoop) reads the
// inputs from the database and only writes the slots this returns.
//
// Rules (docs/operations.md, cron):
//   - due slots are those after `last_slot` and at or before `db_now`; a job
//     never materialised starts from `db_now - 1 s` (no history is invented);
//   - misfire: run_all creates every due slot, oldest first, at most
//     `catch_up_max` per call (the next call continues from the newest one
//     created); run_latest creates only the newest due slot; skip creates
//     the newest due slot only if it is at most `skip_tolerance` old, else
//     none;
//   - slots after `db_now` and up to `db_now + lookahead` are created ahead
//     (PENDING until their time), under every policy.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "baton/leader_core/cron.h"

namespace baton::leader_core {

enum class MisfirePolicy { run_all, run_latest, skip };

/// "run_all", "run_latest", "skip"; nullopt for anything else.
std::optional<MisfirePolicy> parse_misfire_policy(std::string_view s);

struct CronPlanInput {
  CronSchedule schedule;
  CronZone zone;  ///< the job's time zone, resolved (CronZone::locate)
  MisfirePolicy policy = MisfirePolicy::run_latest;
  std::optional<std::chrono::sys_seconds> last_slot;  ///< newest slot already created
  std::chrono::sys_time<std::chrono::milliseconds> db_now;
  std::chrono::milliseconds lookahead{0};
  std::size_t catch_up_max = 100;
  std::chrono::seconds skip_tolerance{2};
};

struct CronPlan {
  std::vector<std::chrono::sys_seconds> slots;  ///< to create, oldest first
};

CronPlan plan_cron_slots(const CronPlanInput& in);

}  // namespace baton::leader_core
