// CronCreator: each job's next slots planned from its schedule, the creates
// a pass may make, and the rest kept for the next passes.
#include "baton/leader_core/cron_creator.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::leader_core;
using namespace std::chrono_literals;

namespace {

constexpr std::int64_t kMidnight = 1767225600;  // 2026-01-01T00:00:00Z

store::ScheduledJob every_second(const std::string& name, std::int64_t now_ms = kMidnight * 1000 + 600) {
  store::ScheduledJob j;
  j.name = name;
  j.schedule = "* * * * * *";
  j.time_zone = "UTC";
  j.misfire_policy = "run_latest";
  j.last_slot_unix = kMidnight;
  j.now_unix_ms = now_ms;
  j.now_unix = now_ms / 1000;
  return j;
}

}  // namespace

TEST(CronCreator, AJobsSlotsWithinTheLookaheadAreOneChainDueFromTheRead) {
  CronCreator cron;
  const MonoTime read_at{50s};
  auto steps = cron.plan({every_second("tick")}, read_at);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].invalid.empty());
  EXPECT_TRUE(steps[0].skipped.empty());
  const CronChain& chain = steps[0].chain;
  ASSERT_EQ(chain.slots.size(), 2u) << "1.5 s ahead of 00:00:00.600: the slots :01 and :02";
  EXPECT_EQ(chain.slots[0], kMidnight + 1);
  auto c = cron.next(chain, read_at, read_at, std::nullopt);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->slot, kMidnight + 1);
  EXPECT_FALSE(c->caught_up);
  EXPECT_EQ(c->due_at, read_at + 401ms) << "400 ms after the read by the database's clock, +1 ms";
}

TEST(CronCreator, AScheduleThatDoesNotParseIsSaidOnceAZoneThatDoesNotExistEveryTime) {
  CronCreator cron;
  auto bad_schedule = every_second("a");
  bad_schedule.schedule = "not a schedule";
  auto bad_zone = every_second("b");
  bad_zone.time_zone = "Mars/Olympus";
  auto first = cron.plan({bad_schedule, bad_zone}, MonoTime{1s});
  ASSERT_EQ(first.size(), 2u);
  EXPECT_NE(first[0].invalid.find("schedule=\"not a schedule\""), std::string::npos) << first[0].invalid;
  EXPECT_NE(first[1].invalid.find("time_zone=\"Mars/Olympus\""), std::string::npos) << first[1].invalid;
  auto second = cron.plan({bad_schedule, bad_zone}, MonoTime{2s});
  ASSERT_EQ(second.size(), 1u) << "the schedule's error was said when its text was first seen";
  EXPECT_EQ(second[0].job, "b");
}

TEST(CronCreator, APassMakesAtMostItsBudgetAndTheRestResumeInOrder) {
  CronCreator cron;
  std::vector<store::ScheduledJob> jobs;
  for (int i = 0; i < 15; ++i) jobs.push_back(every_second("job-" + std::to_string(i)));
  const MonoTime t{10s};
  auto steps = cron.plan(jobs, t);
  std::size_t made = 0;
  for (auto& s : steps)
    for (CronChain chain = s.chain; cron.next(chain, t, t, std::nullopt); ++chain.next) ++made;
  EXPECT_EQ(made, cron_creates_per_pass);
  ASSERT_TRUE(cron.has_backlog());
  // The next pass resumes where each chain stopped, oldest first.
  cron.new_pass();
  made = 0;
  std::vector<std::int64_t> first_slots;
  for (auto& chain : cron.resume()) {
    bool first = true;
    for (; cron.next(chain, t, t, std::nullopt); ++chain.next) {
      if (first) first_slots.push_back(chain.slots[chain.next]);
      first = false;
      ++made;
    }
  }
  EXPECT_EQ(made, 10u) << "30 slots in all, 20 made in the first pass";
  EXPECT_FALSE(cron.has_backlog());
  ASSERT_FALSE(first_slots.empty());
  EXPECT_EQ(first_slots[0], kMidnight + 1) << "job-10's chain had not begun";
}

TEST(CronCreator, WhileAWakeUpIsCloseOnlyRunsDueWithItAreCreated) {
  CronCreator cron;
  const MonoTime read_at{20s};
  auto steps = cron.plan({every_second("tick")}, read_at);
  CronChain chain = steps[0].chain;  // :01 due at read + 401 ms, :02 at read + 1,401 ms
  const MonoTime now = read_at + 300ms, wakeup = read_at + 401ms;
  // The slot :01 is due with the wake-up: made; :02 waits for it to pass.
  EXPECT_TRUE(cron.next(chain, now, read_at, wakeup));
  chain.next = 1;
  EXPECT_FALSE(cron.next(chain, now, read_at, wakeup));
  EXPECT_TRUE(cron.has_backlog());
  // Not for longer than cron_defer_max after the read of the schedules.
  cron.new_pass();
  auto kept = cron.resume();
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].next, 1u);
  EXPECT_TRUE(cron.next(kept[0], read_at + cron_defer_max, read_at, read_at + cron_defer_max + 50ms));
}

TEST(CronCreator, SlotsGivenUpAreRangesWithTheirPolicyAndWhyTheGap) {
  CronCreator cron;
  auto late = every_second("late", (kMidnight + 600) * 1000);  // ten minutes of slots missed
  auto paused = late;
  paused.name = "paused";
  paused.resumed_at_unix = kMidnight + 590;
  auto steps = cron.plan({late, paused}, MonoTime{1s});
  ASSERT_EQ(steps.size(), 2u);
  ASSERT_FALSE(steps[0].skipped.empty());
  EXPECT_EQ(steps[0].skipped[0].reason, "misfire_policy");
  EXPECT_EQ(steps[0].skipped[0].first_unix, kMidnight + 1);
  EXPECT_EQ(steps[0].skipped_details_json, R"({"policy":"run_latest","gap_cause":"not_planned"})");
  EXPECT_EQ(steps[1].skipped_details_json, R"({"policy":"run_latest","gap_cause":"paused"})");
  EXPECT_FALSE(steps[0].chain.slots.empty()) << "run_latest: the latest missed slot is still made";
}
