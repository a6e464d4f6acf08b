#include "baton/leader_core/cron_creator.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <variant>

#include "baton/base/json_text.h"
#include "baton/leader_core/cron_plan.h"

namespace baton::leader_core {

std::vector<CronJobStep> CronCreator::plan(const std::vector<store::ScheduledJob>& jobs, MonoTime read_at) {
  std::vector<CronJobStep> out;
  for (const auto& j : jobs) {
    CronJobStep step;
    step.job = j.name;
    auto cached = schedules_.find(j.schedule);
    if (cached == schedules_.end()) {
      auto parsed = parse_cron(j.schedule);
      std::optional<CronSchedule> s;
      if (auto* ok = std::get_if<CronSchedule>(&parsed))
        s = *ok;
      else  // said once, when the text is first seen; skipped silently after
        step.invalid =
            fmt::format("schedule={} error={}", json_quote(j.schedule), std::get<CronParseError>(parsed).message);
      cached = schedules_.emplace(j.schedule, s).first;
    }
    if (!cached->second) {
      if (!step.invalid.empty()) out.push_back(std::move(step));
      continue;
    }
    auto zone = zones_.find(j.time_zone);
    if (zone == zones_.end()) {
      auto located = CronZone::locate(j.time_zone);
      std::optional<CronZone> z;
      if (auto* ok = std::get_if<CronZone>(&located)) z = std::move(*ok);
      zone = zones_.emplace(j.time_zone, std::move(z)).first;
    }
    const auto policy = parse_misfire_policy(j.misfire_policy);
    if (!zone->second || !policy) {
      step.invalid =
          fmt::format("time_zone={} misfire_policy={}", json_quote(j.time_zone), json_quote(j.misfire_policy));
      out.push_back(std::move(step));
      continue;
    }
    // Slots up to `cron_lookahead` ahead are created now, PENDING with their
    // slot time; the dispatcher does not see them before the slot, and the
    // book wakes at the slot (next_wakeup).
    CronPlanInput in;
    in.schedule = *cached->second;
    in.zone = *zone->second;
    in.policy = *policy;
    if (j.last_slot_unix) in.last_slot = std::chrono::sys_seconds{std::chrono::seconds{*j.last_slot_unix}};
    in.db_now = std::chrono::sys_time<std::chrono::milliseconds>{Millis{j.now_unix_ms}};
    in.lookahead = cron_lookahead;
    in.catch_up_limit = static_cast<std::size_t>(std::max(0, j.catch_up_limit));
    in.per_pass = cron_slots_per_pass;
    if (j.starting_deadline_ms) in.starting_deadline = Millis{*j.starting_deadline_ms};
    in.skip_tolerance = cron_skip_tolerance;
    const CronPlan plan = plan_cron_slots(in);
    step.chain.job = j.name;
    for (auto slot : plan.slots) step.chain.slots.push_back(slot.time_since_epoch().count());
    step.chain.caught_up = plan.caught_up;
    step.chain.now_unix_ms = j.now_unix_ms;
    step.chain.read_at = read_at;
    step.chain.jitter_ms = j.jitter_ms;
    if (!plan.skipped.empty()) {
      const bool resumed = j.resumed_at_unix && (!j.last_slot_unix || *j.resumed_at_unix > *j.last_slot_unix);
      step.skipped_details_json =
          fmt::format(R"({{"policy":"{}","gap_cause":"{}"}})", to_string(*policy), resumed ? "paused" : "not_planned");
      for (const auto& r : plan.skipped) {
        store::SkippedCronSlots range;
        range.first_unix = r.first.time_since_epoch().count();
        range.last_unix = r.last.time_since_epoch().count();
        if (r.count_exact) range.count = static_cast<std::int64_t>(r.count);
        range.count_at_least = static_cast<std::int64_t>(r.count);
        range.reason = std::string(to_string(r.reason));
        step.skipped.push_back(std::move(range));
      }
    }
    out.push_back(std::move(step));
  }
  return out;
}

std::optional<CronCreate> CronCreator::next(const CronChain& chain, MonoTime now, MonoTime last_cron,
                                            std::optional<MonoTime> next_wakeup) {
  if (chain.next >= chain.slots.size()) return std::nullopt;
  CronCreate c;
  c.slot = chain.slots[chain.next];
  c.caught_up = chain.next < chain.caught_up;
  c.jitter_delay_ms =
      cron_jitter_ms(chain.job, std::chrono::sys_seconds{std::chrono::seconds{c.slot}}, chain.jitter_ms);
  // When the run is due: counted from the read that gave now_unix_ms (+1
  // ms: never before the database's time).
  c.due_at = chain.read_at + Millis{c.slot * 1000 + c.jitter_delay_ms - chain.now_unix_ms + 1};
  if (!may_create(c.due_at, now, last_cron, next_wakeup)) {
    backlog_.push_back(chain);
    return std::nullopt;
  }
  creates_in_pass_++;
  return c;
}

bool CronCreator::may_create(MonoTime due_at, MonoTime now, MonoTime last_cron,
                             std::optional<MonoTime> next_wakeup) const {
  if (creates_in_pass_ >= cron_creates_per_pass) return false;
  if (!next_wakeup || now - last_cron >= cron_defer_max) return true;
  // A wake-up about to come (a slot, a held start): only the runs due with
  // it or before it are created now; later slots wait until it has passed.
  return *next_wakeup - now >= cron_quiet_before || due_at <= *next_wakeup + cron_quiet_before;
}

}  // namespace baton::leader_core
