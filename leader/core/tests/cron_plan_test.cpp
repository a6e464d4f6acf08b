// plan_cron_slots: which slots of one job to create now and which to give
// up, under each misfire policy, after gaps from seconds to decades, with a
// starting deadline, across a daylight-saving jump, and the invariant that
// every due slot is either created or inside a reported skipped range.
#include "baton/leader_core/cron_plan.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "cron_test_time.h"

using namespace baton::leader_core;
using namespace std::chrono;

namespace {

sys_seconds plan_at(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  return test::utc(y, mo, d, h, mi, s);
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

using Slots = std::vector<sys_seconds>;

}  // namespace

TEST(CronPlan, MisfirePolicyWordsAreExact) {
  EXPECT_EQ(parse_misfire_policy("run_all"), MisfirePolicy::run_all);
  EXPECT_EQ(parse_misfire_policy("run_latest"), MisfirePolicy::run_latest);
  EXPECT_EQ(parse_misfire_policy("skip"), MisfirePolicy::skip);
  EXPECT_FALSE(parse_misfire_policy("RUN_ALL"));
  EXPECT_FALSE(parse_misfire_policy(""));
  for (auto p : {MisfirePolicy::run_all, MisfirePolicy::run_latest, MisfirePolicy::skip})
    EXPECT_EQ(parse_misfire_policy(to_string(p)), p);
}

// The job's zone decides the wall clock its fields match: 09:00 at +02:00 is
// 07:00 UTC (the node used to ignore the zone and fire at 09:00 UTC).
TEST(CronPlan, SlotsFollowTheJobsZone) {
  auto in = input("0 9 * * *", MisfirePolicy::run_latest, plan_at(2026, 6, 1, 6, 59, 0), plan_at(2026, 6, 1, 7, 0, 0));
  in.zone = CronZone::fixed(minutes{120});
  EXPECT_EQ(plan_cron_slots(in).slots, Slots{plan_at(2026, 6, 1, 7, 0, 0)});
  in.zone = CronZone{};
  EXPECT_TRUE(plan_cron_slots(in).slots.empty());
}

TEST(CronPlan, RunAllCatchesUpTheNewestMissedSlotsWithinTheLimit) {
  // Every minute, last planned 10:00, now 10:05:30: five slots were missed.
  auto in = input("* * * * *", MisfirePolicy::run_all, plan_at(2026, 1, 1, 10, 0), plan_at(2026, 1, 1, 10, 5, 30));
  auto all = plan_cron_slots(in);
  EXPECT_EQ(all.slots.size(), 5u);
  EXPECT_EQ(all.caught_up, 5u);
  EXPECT_TRUE(all.skipped.empty());
  in.catch_up_limit = 3;
  auto limited = plan_cron_slots(in);
  EXPECT_EQ(limited.slots, (Slots{plan_at(2026, 1, 1, 10, 3), plan_at(2026, 1, 1, 10, 4), plan_at(2026, 1, 1, 10, 5)}));
  ASSERT_EQ(limited.skipped.size(), 1u);
  EXPECT_EQ(limited.skipped[0], (SkippedSlots{plan_at(2026, 1, 1, 10, 1), plan_at(2026, 1, 1, 10, 2), 2, true,
                                              SkipReason::catch_up_limit}));
  in.catch_up_limit = 0;  // run_all with no catch-up: every missed slot is given up
  auto none = plan_cron_slots(in);
  EXPECT_TRUE(none.slots.empty());
  ASSERT_EQ(none.skipped.size(), 1u);
  EXPECT_EQ(none.skipped[0].count, 5u);
}

TEST(CronPlan, PerPassBoundAdmitsTheRestOnTheNextCall) {
  auto in = input("* * * * *", MisfirePolicy::run_all, plan_at(2026, 1, 1, 10, 0), plan_at(2026, 1, 1, 10, 5, 30));
  in.per_pass = 2;
  auto first = plan_cron_slots(in).slots;
  EXPECT_EQ(first, (Slots{plan_at(2026, 1, 1, 10, 1), plan_at(2026, 1, 1, 10, 2)}));
  in.last_slot = first.back();  // the cursor: none lost, none twice
  EXPECT_EQ(plan_cron_slots(in).slots, (Slots{plan_at(2026, 1, 1, 10, 3), plan_at(2026, 1, 1, 10, 4)}));
}

TEST(CronPlan, RunLatestRunsOnlyTheNewestMissedSlotAndRecordsTheRest) {
  auto in = input("0 * * * *", MisfirePolicy::run_latest, plan_at(2026, 1, 1, 4), plan_at(2026, 1, 1, 10, 20));
  auto plan = plan_cron_slots(in);
  EXPECT_EQ(plan.slots, Slots{plan_at(2026, 1, 1, 10)});
  EXPECT_EQ(plan.caught_up, 1u);
  ASSERT_EQ(plan.skipped.size(), 1u);
  EXPECT_EQ(plan.skipped[0],
            (SkippedSlots{plan_at(2026, 1, 1, 5), plan_at(2026, 1, 1, 9), 5, true, SkipReason::misfire_policy}));
}

TEST(CronPlan, RunLatestAfterAYearOfAnEverySecondJobIsQuickAndBounded) {
  auto in = input("* * * * * *", MisfirePolicy::run_latest, plan_at(2025, 1, 1),
                  plan_at(2026, 1, 1, 10, 0, 7) + milliseconds{400});
  auto plan = plan_cron_slots(in);
  // 10:00:05-07 are at most 2 s late: on time, not misfires.
  EXPECT_EQ(plan.slots,
            (Slots{plan_at(2026, 1, 1, 10, 0, 5), plan_at(2026, 1, 1, 10, 0, 6), plan_at(2026, 1, 1, 10, 0, 7)}));
  ASSERT_EQ(plan.skipped.size(), 1u);
  EXPECT_EQ(plan.skipped[0].first, plan_at(2025, 1, 1, 0, 0, 1));
  EXPECT_EQ(plan.skipped[0].last, plan_at(2026, 1, 1, 10, 0, 4));
  EXPECT_FALSE(plan.skipped[0].count_exact);
  EXPECT_EQ(plan.skipped[0].count, kSkipCountCap);
}

TEST(CronPlan, SkipRunsOnlyOnTimeSlotsAndNeverStalls) {
  auto in = input("0 * * * *", MisfirePolicy::skip, plan_at(2026, 1, 1, 9), plan_at(2026, 1, 1, 10, 0, 1));
  EXPECT_EQ(plan_cron_slots(in).slots, Slots{plan_at(2026, 1, 1, 10)}) << "1 s late: on time";
  in.db_now = plan_at(2026, 1, 1, 10, 0, 5);
  auto late = plan_cron_slots(in);
  EXPECT_TRUE(late.slots.empty()) << "5 s late: skipped";
  ASSERT_EQ(late.skipped.size(), 1u);
  EXPECT_EQ(late.skipped[0],
            (SkippedSlots{plan_at(2026, 1, 1, 10), plan_at(2026, 1, 1, 10), 1, true, SkipReason::misfire_policy}));

  // After 28 hours without a leader an every-second job used to stop for good
  // (its slot walk gave up and the cursor never moved). Now the gap is one
  // skipped range and the next slot runs on time.
  auto gap =
      input("* * * * * *", MisfirePolicy::skip, plan_at(2026, 1, 1), plan_at(2026, 1, 2, 4, 0, 0) + milliseconds{100});
  auto plan = plan_cron_slots(gap);
  ASSERT_EQ(plan.skipped.size(), 1u);
  EXPECT_EQ(plan.skipped[0].last, plan_at(2026, 1, 2, 3, 59, 57));
  EXPECT_EQ(plan.slots,
            (Slots{plan_at(2026, 1, 2, 3, 59, 58), plan_at(2026, 1, 2, 3, 59, 59), plan_at(2026, 1, 2, 4)}));
}

TEST(CronPlan, StartingDeadlineGivesUpSlotsTooLateToStart) {
  auto in = input("* * * * *", MisfirePolicy::run_all, plan_at(2026, 1, 1, 10, 0), plan_at(2026, 1, 1, 10, 5, 30));
  in.starting_deadline = seconds{150};
  auto plan = plan_cron_slots(in);
  EXPECT_EQ(plan.slots, (Slots{plan_at(2026, 1, 1, 10, 3), plan_at(2026, 1, 1, 10, 4), plan_at(2026, 1, 1, 10, 5)}));
  ASSERT_EQ(plan.skipped.size(), 1u);
  EXPECT_EQ(plan.skipped[0], (SkippedSlots{plan_at(2026, 1, 1, 10, 1), plan_at(2026, 1, 1, 10, 2), 2, true,
                                           SkipReason::starting_deadline}));
  // With a limit too: the limit's range first, then the deadline's.
  in.catch_up_limit = 4;
  in.starting_deadline = seconds{200};
  auto both = plan_cron_slots(in);
  ASSERT_EQ(both.skipped.size(), 2u);
  EXPECT_EQ(both.skipped[0].reason, SkipReason::catch_up_limit);
  EXPECT_EQ(both.skipped[0].last, plan_at(2026, 1, 1, 10, 1));
  EXPECT_EQ(both.skipped[1], (SkippedSlots{plan_at(2026, 1, 1, 10, 2), plan_at(2026, 1, 1, 10, 2), 1, true,
                                           SkipReason::starting_deadline}));
  EXPECT_EQ(both.slots.size(), 3u);
}

TEST(CronPlan, GapsOfDecadesUnderEveryPolicy) {
  // Yearly, last planned 2000-01-01, now mid-2026: 26 slots were missed.
  auto in = input("0 0 1 1 *", MisfirePolicy::run_latest, plan_at(2000, 1, 1), plan_at(2026, 6, 1));
  auto latest = plan_cron_slots(in);
  EXPECT_EQ(latest.slots, Slots{plan_at(2026, 1, 1)});
  ASSERT_EQ(latest.skipped.size(), 1u);
  EXPECT_EQ(latest.skipped[0],
            (SkippedSlots{plan_at(2001, 1, 1), plan_at(2025, 1, 1), 25, true, SkipReason::misfire_policy}));
  in.policy = MisfirePolicy::run_all;
  EXPECT_EQ(plan_cron_slots(in).slots.size(), 26u);
  in.policy = MisfirePolicy::skip;
  auto skipped = plan_cron_slots(in);
  EXPECT_TRUE(skipped.slots.empty());
  EXPECT_EQ(skipped.skipped[0].count, 26u);
}

TEST(CronPlan, ResumingAPausedJobFollowsThePolicyNotAFullBackfill) {
  // Daily at 06:00, paused for 30 days: run_all with a limit of 2 runs two,
  // run_latest one, skip none; each reports the rest.
  const auto last = plan_at(2026, 3, 1, 6);
  const auto now = plan_at(2026, 3, 31, 12);
  for (auto [policy, runs] : {std::pair{MisfirePolicy::run_all, 2u}, std::pair{MisfirePolicy::run_latest, 1u},
                              std::pair{MisfirePolicy::skip, 0u}}) {
    auto in = input("0 6 * * *", policy, last, now);
    in.catch_up_limit = 2;
    auto plan = plan_cron_slots(in);
    EXPECT_EQ(plan.slots.size(), runs) << to_string(policy);
    ASSERT_EQ(plan.skipped.size(), 1u);
    EXPECT_EQ(plan.skipped[0].count, 30u - runs);
  }
}

TEST(CronPlan, CatchingUpAcrossADaylightSavingJumpCreatesEachLocalDayOnce) {
  auto in = input("30 2 * * *", MisfirePolicy::run_all, plan_at(2026, 3, 28, 1, 30), plan_at(2026, 3, 30, 12));
  in.zone = std::get<CronZone>(CronZone::locate("Europe/Berlin"));
  EXPECT_EQ(plan_cron_slots(in).slots, (Slots{plan_at(2026, 3, 29, 1), plan_at(2026, 3, 30, 0, 30)}));
}

TEST(CronPlan, SlotsWithinTheLookaheadAreCreatedAheadUnderEveryPolicy) {
  for (auto p : {MisfirePolicy::run_all, MisfirePolicy::run_latest, MisfirePolicy::skip}) {
    auto in = input("* * * * * *", p, plan_at(2026, 1, 1, 10, 0, 0), plan_at(2026, 1, 1, 10, 0, 0) + milliseconds{200});
    in.lookahead = milliseconds{1500};
    EXPECT_EQ(plan_cron_slots(in).slots, (Slots{plan_at(2026, 1, 1, 10, 0, 1)})) << to_string(p);
    in.last_slot = plan_at(2026, 1, 1, 10, 0, 1);  // already created ahead: nothing again
    EXPECT_TRUE(plan_cron_slots(in).slots.empty());
  }
}

TEST(CronPlan, ANewJobStartsAtTheSlotDueNowWithoutInventingHistory) {
  auto in =
      input("* * * * * *", MisfirePolicy::run_all, std::nullopt, plan_at(2026, 1, 1, 10, 0, 3) + milliseconds{10});
  auto plan = plan_cron_slots(in);
  EXPECT_EQ(plan.slots, Slots{plan_at(2026, 1, 1, 10, 0, 3)});
  EXPECT_TRUE(plan.skipped.empty());
}

// Every due slot is created or inside exactly one reported range, the ranges
// are ordered and disjoint and their counts exact: the property the chaos
// checker's "every skipped slot has a ledger record" rests on.
TEST(CronPlan, EveryDueSlotIsCreatedOrReportedExactlyOnce) {
  const std::vector<const char*> exprs = {"* * * * *",     "*/7 * * * * *",   "0 */2 * * *",
                                          "15,45 * * * *", "0 9 * * MON-FRI", "@every 45s"};
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int i = 0; i < 400; ++i) {
    const char* expr = exprs[rng() % exprs.size()];
    const auto policy = static_cast<MisfirePolicy>(rng() % 3);
    const sys_seconds last = plan_at(2026, 3, 1) + seconds{static_cast<long>(rng() % 86400)};
    const auto now = last + seconds{static_cast<long>(rng() % (3 * 86400))} + milliseconds{rng() % 1000};
    auto in = input(expr, policy, last, now);
    in.zone = std::get<CronZone>(CronZone::locate(i % 2 ? "Europe/Berlin" : "UTC"));
    in.catch_up_limit = rng() % 5;
    if (rng() % 2) in.starting_deadline = seconds{static_cast<long>(rng() % 7200)};
    SCOPED_TRACE(std::string(expr) + " policy " + std::string(to_string(policy)));
    const CronPlan plan = plan_cron_slots(in);
    std::vector<sys_seconds> due;
    for (sys_seconds t = last;;) {
      auto next = next_fire(in.schedule, t, in.zone);
      if (!next || *next > floor<seconds>(now)) break;
      due.push_back(t = *next);
    }
    if (plan.slots.size() >= in.per_pass) continue;  // the rest come on the next call
    std::multiset<sys_seconds> accounted(plan.slots.begin(), plan.slots.end());
    std::optional<sys_seconds> prev_last;
    for (const auto& r : plan.skipped) {
      ASSERT_TRUE(r.count_exact);
      ASSERT_LE(r.first, r.last);
      if (prev_last) {
        ASSERT_LT(*prev_last, r.first);
      }
      prev_last = r.last;
      std::uint64_t n = 0;
      for (sys_seconds d : due)
        if (d >= r.first && d <= r.last) accounted.insert(d), ++n;
      EXPECT_EQ(n, r.count);
    }
    for (sys_seconds d : due) EXPECT_EQ(accounted.count(d), 1u);
    for (sys_seconds s : plan.slots) EXPECT_TRUE(s > last);
    ++checked;
  }
  EXPECT_GE(checked, 300);
}

TEST(CronJitter, TheSameForEveryLeaderWithinTheJitterAndSpread) {
  EXPECT_EQ(cron_jitter_ms("nightly", plan_at(2026, 1, 1), 0), 0);
  EXPECT_EQ(cron_jitter_ms("nightly", plan_at(2026, 1, 1), 60000),
            cron_jitter_ms("nightly", plan_at(2026, 1, 1), 60000));
  std::set<std::int64_t> seen;
  double sum = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto j = cron_jitter_ms("nightly", plan_at(2026, 1, 1) + minutes{i}, 60000);
    ASSERT_GE(j, 0);
    ASSERT_LE(j, 60000);
    seen.insert(j);
    sum += static_cast<double>(j);
  }
  EXPECT_GT(seen.size(), 950u) << "spread, not bunched";
  EXPECT_NEAR(sum / 1000, 30000, 3000);
  EXPECT_NE(cron_jitter_ms("a", plan_at(2026, 1, 1), 60000), cron_jitter_ms("b", plan_at(2026, 1, 1), 60000))
      << "jobs firing on the same minute start apart";
}
