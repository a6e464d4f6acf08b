// plan_cron_slots: which slots of one job to create now, under each misfire
// policy, in the job's zone, with the lookahead and the catch-up limit.
#include "baton/leader_core/cron_plan.h"

#include <gtest/gtest.h>

#include <variant>

using namespace baton::leader_core;
using namespace std::chrono;

namespace {

sys_seconds at(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  return sys_days{year{y} / month{mo} / day{d}} + hours{h} + minutes{mi} + seconds{s};
}

CronSchedule cron(const char* expr) { return std::get<CronSchedule>(parse_cron(expr)); }

CronPlanInput input(const char* expr, MisfirePolicy p, std::optional<sys_seconds> last, sys_time<milliseconds> now) {
  CronPlanInput in;
  in.schedule = cron(expr);
  in.policy = p;
  in.last_slot = last;
  in.db_now = now;
  return in;
}

}  // namespace

TEST(CronPlan, MisfirePolicyWordsAreExact) {
  EXPECT_EQ(parse_misfire_policy("run_all"), MisfirePolicy::run_all);
  EXPECT_EQ(parse_misfire_policy("run_latest"), MisfirePolicy::run_latest);
  EXPECT_EQ(parse_misfire_policy("skip"), MisfirePolicy::skip);
  EXPECT_FALSE(parse_misfire_policy("RUN_ALL"));
  EXPECT_FALSE(parse_misfire_policy(""));
}

// The job's zone decides the wall clock its fields match: 09:00 at +02:00 is
// 07:00 UTC (the node used to ignore the zone and fire at 09:00 UTC).
TEST(CronPlan, SlotsFollowTheJobsZone) {
  auto in = input("0 9 * * *", MisfirePolicy::run_latest, at(2026, 6, 1, 6, 59, 0), at(2026, 6, 1, 7, 0, 0));
  in.zone = CronZone::fixed(minutes{120});
  EXPECT_EQ(plan_cron_slots(in).slots, std::vector<sys_seconds>{at(2026, 6, 1, 7, 0, 0)});
  in.zone = CronZone{};
  EXPECT_TRUE(plan_cron_slots(in).slots.empty());
}

TEST(CronPlan, RunAllCatchesUpOldestFirstWithinTheLimit) {
  // Every minute, last created 10:00, now 10:05:30: five slots are due.
  auto in = input("* * * * *", MisfirePolicy::run_all, at(2026, 1, 1, 10, 0), at(2026, 1, 1, 10, 5, 30));
  auto all = plan_cron_slots(in).slots;
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all.front(), at(2026, 1, 1, 10, 1));
  EXPECT_EQ(all.back(), at(2026, 1, 1, 10, 5));
  in.catch_up_max = 3;
  auto first = plan_cron_slots(in).slots;
  EXPECT_EQ(first, (std::vector<sys_seconds>{at(2026, 1, 1, 10, 1), at(2026, 1, 1, 10, 2), at(2026, 1, 1, 10, 3)}));
  in.last_slot = first.back();  // the next pass goes on from there: none lost, none twice
  EXPECT_EQ(plan_cron_slots(in).slots, (std::vector<sys_seconds>{at(2026, 1, 1, 10, 4), at(2026, 1, 1, 10, 5)}));
}

TEST(CronPlan, RunLatestCreatesOnlyTheNewestDueSlot) {
  // Every second, last created a year ago: one slot, the newest, quickly.
  auto in =
      input("* * * * * *", MisfirePolicy::run_latest, at(2025, 1, 1), at(2026, 1, 1, 10, 0, 7) + milliseconds{400});
  EXPECT_EQ(plan_cron_slots(in).slots, std::vector<sys_seconds>{at(2026, 1, 1, 10, 0, 7)});
}

TEST(CronPlan, SkipDropsAMissedSlotOlderThanTheTolerance) {
  auto in = input("0 * * * *", MisfirePolicy::skip, at(2026, 1, 1, 9), at(2026, 1, 1, 10, 0, 1));
  EXPECT_EQ(plan_cron_slots(in).slots, std::vector<sys_seconds>{at(2026, 1, 1, 10)}) << "1 s late: within 2 s";
  in.db_now = at(2026, 1, 1, 10, 0, 5);
  EXPECT_TRUE(plan_cron_slots(in).slots.empty()) << "5 s late: skipped";
}

TEST(CronPlan, SlotsWithinTheLookaheadAreCreatedAheadUnderEveryPolicy) {
  for (auto p : {MisfirePolicy::run_all, MisfirePolicy::run_latest, MisfirePolicy::skip}) {
    auto in = input("* * * * * *", p, at(2026, 1, 1, 10, 0, 0), at(2026, 1, 1, 10, 0, 0) + milliseconds{200});
    in.lookahead = milliseconds{1500};
    EXPECT_EQ(plan_cron_slots(in).slots, (std::vector<sys_seconds>{at(2026, 1, 1, 10, 0, 1)}))
        << "policy " << static_cast<int>(p);
    in.last_slot = at(2026, 1, 1, 10, 0, 1);  // already created ahead: nothing again
    EXPECT_TRUE(plan_cron_slots(in).slots.empty());
  }
}

TEST(CronPlan, ANewJobStartsAtTheSlotDueNowWithoutInventingHistory) {
  auto in = input("* * * * * *", MisfirePolicy::run_all, std::nullopt, at(2026, 1, 1, 10, 0, 3) + milliseconds{10});
  EXPECT_EQ(plan_cron_slots(in).slots, std::vector<sys_seconds>{at(2026, 1, 1, 10, 0, 3)});
}
