#include "baton/leader_core/cron_plan.h"

#include <algorithm>

namespace baton::leader_core {

namespace {

using std::chrono::seconds;
using std::chrono::sys_seconds;

/// The newest slot in (from, now], or nothing. Walks forward from a start
/// close to `now` first (an hour, a day, a month, a year back), so a job
/// that fires every second and was last materialised long ago costs a few
/// thousand steps, not one per missed second.
std::optional<sys_seconds> newest_due(const CronPlanInput& in, sys_seconds from, sys_seconds now) {
  for (seconds window : {seconds{3600}, seconds{86400}, seconds{32 * 86400}, seconds{367 * 86400}}) {
    sys_seconds at = std::max(from, now - window);
    std::optional<sys_seconds> newest;
    for (;;) {
      auto next = next_fire(in.schedule, at, in.zone);
      if (!next || *next > now) break;
      newest = at = *next;
    }
    if (newest || at == from) return newest;
  }
  return std::nullopt;  // nothing in the last year: next_fire searches no further back either
}

}  // namespace

std::optional<MisfirePolicy> parse_misfire_policy(std::string_view s) {
  if (s == "run_all") return MisfirePolicy::run_all;
  if (s == "run_latest") return MisfirePolicy::run_latest;
  if (s == "skip") return MisfirePolicy::skip;
  return std::nullopt;
}

CronPlan plan_cron_slots(const CronPlanInput& in) {
  const sys_seconds now = std::chrono::floor<seconds>(in.db_now);
  const sys_seconds from = in.last_slot.value_or(now - seconds{1});
  CronPlan plan;
  if (in.policy == MisfirePolicy::run_all) {
    for (sys_seconds at = from; plan.slots.size() < in.catch_up_max;) {
      auto next = next_fire(in.schedule, at, in.zone);
      if (!next || *next > now) break;
      plan.slots.push_back(at = *next);
    }
    // At the limit, the rest (and the slots ahead) come on the next call,
    // which starts from the newest slot created: oldest first, none lost.
    if (plan.slots.size() >= in.catch_up_max) return plan;
  } else if (auto newest = newest_due(in, from, now)) {
    if (in.policy == MisfirePolicy::run_latest || now - *newest <= in.skip_tolerance) plan.slots.push_back(*newest);
  }
  // Slots ahead, created now so that they start on time (PENDING until then).
  const auto horizon = in.db_now + in.lookahead;
  for (sys_seconds at = std::max(from, now);;) {
    auto next = next_fire(in.schedule, at, in.zone);
    if (!next || *next > horizon) break;
    plan.slots.push_back(at = *next);
  }
  return plan;
}

}  // namespace baton::leader_core
