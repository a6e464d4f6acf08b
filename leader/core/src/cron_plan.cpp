#include "baton/leader_core/cron_plan.h"

#include <algorithm>
#include <deque>

namespace baton::leader_core {

namespace {

using std::chrono::seconds;
using std::chrono::sys_seconds;

/// The newest `n` slots in (from, now], oldest first, and whether they are
/// all of them. Walks forward from a start close to `now` first (an hour, a
/// day, a month, a year, five years back), so a job that fires every second
/// and was last planned long ago costs a few thousand steps, not one per
/// missed second.
struct Newest {
  std::deque<sys_seconds> slots;
  bool dropped = false;  ///< older due slots exist than slots.front()
};

Newest newest_due(const CronPlanInput& in, sys_seconds from, sys_seconds now, std::size_t n) {
  Newest out;
  for (seconds window :
       {seconds{3600}, seconds{86400}, seconds{32 * 86400}, seconds{367 * 86400}, kCronSearchWindow, seconds::max()}) {
    const sys_seconds start = (now - from <= window) ? from : now - window;
    out.slots.clear();
    out.dropped = false;
    for (sys_seconds at = start;;) {
      auto next = next_fire(in.schedule, at, in.zone);
      if (!next || *next > now) break;
      out.slots.push_back(at = *next);
      if (out.slots.size() > n) {
        out.slots.pop_front();
        out.dropped = true;
      }
    }
    if (out.dropped || start == from) return out;
  }
  return out;
}

/// Slots in [first, last], counting at most kSkipCountCap.
std::pair<std::uint64_t, bool> count_slots(const CronPlanInput& in, sys_seconds first, sys_seconds last) {
  std::uint64_t n = 1;
  for (sys_seconds at = first; n < kSkipCountCap;) {
    auto next = next_fire(in.schedule, at, in.zone);
    if (!next || *next > last) return {n, true};
    at = *next;
    ++n;
  }
  return {n, false};
}

}  // namespace

std::optional<MisfirePolicy> parse_misfire_policy(std::string_view s) {
  if (s == "run_all") return MisfirePolicy::run_all;
  if (s == "run_latest") return MisfirePolicy::run_latest;
  if (s == "skip") return MisfirePolicy::skip;
  return std::nullopt;
}

std::string_view to_string(MisfirePolicy p) {
  switch (p) {
    case MisfirePolicy::run_all: return "run_all";
    case MisfirePolicy::run_latest: return "run_latest";
    case MisfirePolicy::skip: return "skip";
  }
  return "?";
}

std::string_view to_string(SkipReason r) {
  switch (r) {
    case SkipReason::misfire_policy: return "misfire_policy";
    case SkipReason::catch_up_limit: return "catch_up_limit";
    case SkipReason::starting_deadline: return "starting_deadline";
  }
  return "?";
}

std::int64_t cron_jitter_ms(std::string_view job, sys_seconds slot, std::int64_t jitter_ms) {
  if (jitter_ms <= 0) return 0;
  // FNV-1a over the name and the slot's seconds: stable across builds and
  // nodes (std::hash is neither).
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (char c : job) mix(static_cast<unsigned char>(c));
  const auto s = static_cast<std::uint64_t>(slot.time_since_epoch().count());
  for (int i = 0; i < 8; ++i) mix(static_cast<unsigned char>(s >> (8 * i)));
  return static_cast<std::int64_t>(h % static_cast<std::uint64_t>(jitter_ms + 1));
}

CronPlan plan_cron_slots(const CronPlanInput& in) {
  const sys_seconds now = std::chrono::floor<seconds>(in.db_now);
  const sys_seconds from = in.last_slot.value_or(now - seconds{1});
  CronPlan plan;

  // Due slots at most `skip_tolerance` late are on time (planning latency,
  // not a misfire) and always kept; the policy decides about the older,
  // missed ones: run_all keeps the newest `catch_up_limit`, run_latest the
  // newest one unless an on-time slot is newer, skip none.
  const std::size_t on_time_max = static_cast<std::size_t>(in.skip_tolerance.count()) + 1;
  std::size_t keep_missed = in.policy == MisfirePolicy::run_all ? in.catch_up_limit : 1;
  // One more than could be kept is read, so the newest slot given up is
  // known without a second walk.
  const Newest due = newest_due(in, from, now, keep_missed + on_time_max + 1);
  std::vector<sys_seconds> missed, on_time;
  for (sys_seconds slot : due.slots) (now - slot > in.skip_tolerance ? missed : on_time).push_back(slot);
  if (in.policy == MisfirePolicy::skip || (in.policy == MisfirePolicy::run_latest && !on_time.empty())) keep_missed = 0;

  if ((due.dropped || missed.size() > keep_missed) && missed.size() > keep_missed) {
    // (`due` holds one more than could be kept, so a dropped walk always
    // leaves a missed slot over the limit here.)
    const std::size_t over = missed.size() - keep_missed;
    const sys_seconds first = *next_fire(in.schedule, from, in.zone);
    const sys_seconds last = missed[over - 1];
    const auto [count, exact] = count_slots(in, first, last);
    plan.skipped.push_back(
        {first, last, count, exact,
         in.policy == MisfirePolicy::run_all ? SkipReason::catch_up_limit : SkipReason::misfire_policy});
    missed.erase(missed.begin(), missed.begin() + static_cast<std::ptrdiff_t>(over));
  }
  std::vector<sys_seconds> kept = std::move(missed);
  kept.insert(kept.end(), on_time.begin(), on_time.end());

  // Kept slots later than the starting deadline are given up too; they are
  // oldest first, so the late ones are a prefix.
  std::size_t late = 0;
  if (in.starting_deadline) {
    while (late < kept.size() && in.db_now - kept[late] > *in.starting_deadline) ++late;
  }
  if (late > 0) {
    plan.skipped.push_back({kept.front(), kept[late - 1], late, true, SkipReason::starting_deadline});
    kept.erase(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(late));
  }

  for (sys_seconds slot : kept) {
    if (plan.slots.size() >= in.per_pass) return plan;  // the rest next call, oldest first
    if (now - slot > in.skip_tolerance) ++plan.caught_up;
    plan.slots.push_back(slot);
  }
  // Slots ahead, created now so that they start on time (PENDING until then).
  const auto horizon = in.db_now + in.lookahead;
  for (sys_seconds at = std::max(from, now); plan.slots.size() < in.per_pass;) {
    auto next = next_fire(in.schedule, at, in.zone);
    if (!next || *next > horizon) break;
    plan.slots.push_back(at = *next);
  }
  return plan;
}

}  // namespace baton::leader_core
