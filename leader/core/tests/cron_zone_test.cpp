// Cron schedules in IANA zones across real daylight-saving transitions
// (docs/scheduling.md, "Daylight-saving time"): a skipped wall-clock time
// fires at the jump, a repeated one fires once in its first pass unless the
// schedule fires every hour. Expected instants are hand-computed from the
// published rules of each zone for 2026.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "baton/leader_core/cron.h"
#include "baton/leader_core/cron_zone.h"
#include "cron_test_time.h"

using namespace baton::leader_core;
using namespace std::chrono;

namespace {

using test::utc;
std::string zone_show(sys_seconds t) { return test::show(t, false); }

CronZone zone(const char* name) {
  auto z = CronZone::locate(name);
  if (auto* e = std::get_if<std::string>(&z)) {
    ADD_FAILURE() << *e;
    return CronZone{};
  }
  return std::get<CronZone>(z);
}

/// The next `n` fire times after `from`, in UTC.
std::vector<std::string> fires(const char* expr, const char* tz, sys_seconds from, int n) {
  const CronSchedule s = std::get<CronSchedule>(parse_cron(expr));
  const CronZone z = zone(tz);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    auto next = next_fire(s, from, z);
    if (!next) break;
    out.push_back(zone_show(*next));
    from = *next;
  }
  return out;
}

using Fires = std::vector<std::string>;

TEST(CronDst, BerlinSpringForwardFiresASkippedTimeAtTheJump) {
  // 2026-03-29 01:00 UTC: 02:00 CET becomes 03:00 CEST; 02:30 never happens.
  EXPECT_EQ(fires("30 2 * * *", "Europe/Berlin", utc(2026, 3, 27), 4),
            (Fires{"2026-03-27 01:30", "2026-03-28 01:30", "2026-03-29 01:00", "2026-03-30 00:30"}));
  // Every half hour: 02:00 and 02:30 collapse onto the jump, which 03:00 CEST
  // also is; one run, not three.
  EXPECT_EQ(fires("*/30 * * * *", "Europe/Berlin", utc(2026, 3, 29, 0, 15), 3),
            (Fires{"2026-03-29 00:30", "2026-03-29 01:00", "2026-03-29 01:30"}));
}

TEST(CronDst, BerlinFallBackFiresARepeatedTimeOnceUnlessHourly) {
  // 2026-10-25 01:00 UTC: 03:00 CEST becomes 02:00 CET; 02:30 happens twice.
  EXPECT_EQ(fires("30 2 * * *", "Europe/Berlin", utc(2026, 10, 23), 4),
            (Fires{"2026-10-23 00:30", "2026-10-24 00:30", "2026-10-25 00:30", "2026-10-26 01:30"}));
  // Starting inside the second pass does not fire the first pass's time again.
  EXPECT_EQ(fires("30 2 * * *", "Europe/Berlin", utc(2026, 10, 25, 0, 45), 1), (Fires{"2026-10-26 01:30"}));
  // A schedule over every hour keeps its rhythm through both passes.
  EXPECT_EQ(
      fires("*/30 * * * *", "Europe/Berlin", utc(2026, 10, 24, 23, 45), 5),
      (Fires{"2026-10-25 00:00", "2026-10-25 00:30", "2026-10-25 01:00", "2026-10-25 01:30", "2026-10-25 02:00"}));
  // From just before the transition, inside the first pass.
  EXPECT_EQ(fires("*/30 * * * *", "Europe/Berlin", utc(2026, 10, 25, 0, 40), 2),
            (Fires{"2026-10-25 01:00", "2026-10-25 01:30"}));
}

TEST(CronDst, NewYork) {
  // 2026-03-08 07:00 UTC: 02:00 EST becomes 03:00 EDT.
  EXPECT_EQ(fires("0 2 * * *", "America/New_York", utc(2026, 3, 7), 3),
            (Fires{"2026-03-07 07:00", "2026-03-08 07:00", "2026-03-09 06:00"}));
  // 2026-11-01 06:00 UTC: 02:00 EDT becomes 01:00 EST; 01:30 once, as EDT.
  EXPECT_EQ(fires("30 1 * * *", "America/New_York", utc(2026, 10, 31, 12), 2),
            (Fires{"2026-11-01 05:30", "2026-11-02 06:30"}));
  EXPECT_EQ(fires("0 9 * * MON-FRI", "America/New_York", utc(2026, 11, 2), 1), (Fires{"2026-11-02 14:00"}));
}

TEST(CronDst, LordHoweShiftsByHalfAnHour) {
  // 2026-10-03 15:30 UTC: 02:00 +10:30 becomes 02:30 +11:00; 02:15 is skipped.
  EXPECT_EQ(fires("15 2 * * *", "Australia/Lord_Howe", utc(2026, 10, 2), 3),
            (Fires{"2026-10-02 15:45", "2026-10-03 15:30", "2026-10-04 15:15"}));
  // 2026-04-04 15:00 UTC: 02:00 +11:00 becomes 01:30 +10:30; 01:45 once.
  EXPECT_EQ(fires("45 1 * * *", "Australia/Lord_Howe", utc(2026, 4, 3), 3),
            (Fires{"2026-04-03 14:45", "2026-04-04 14:45", "2026-04-05 15:15"}));
}

TEST(CronDst, SydneyHourlyThroughTheRepeatedHour) {
  // 2026-04-04 16:00 UTC: 03:00 AEDT becomes 02:00 AEST; local 02:00 happens
  // at 15:00 and 16:00 UTC, 03:00 AEST at 17:00 UTC.
  EXPECT_EQ(fires("0 * * * *", "Australia/Sydney", utc(2026, 4, 4, 14, 30), 3),
            (Fires{"2026-04-04 15:00", "2026-04-04 16:00", "2026-04-04 17:00"}));
}

TEST(CronDst, ZonesWithoutDaylightSavingTime) {
  EXPECT_EQ(fires("0 9 * * *", "Asia/Kolkata", utc(2026, 1, 1), 2), (Fires{"2026-01-01 03:30", "2026-01-02 03:30"}));
  EXPECT_EQ(fires("0 9 * * *", "UTC", utc(2026, 1, 1), 1), (Fires{"2026-01-01 09:00"}));
  EXPECT_EQ(fires("0 9 * * *", "-05:30", utc(2026, 1, 1), 1), (Fires{"2026-01-01 14:30"}));
}

TEST(CronDst, AYearOfHourlyFiresIsEveryHourExactlyOnce) {
  for (const char* tz : {"Europe/Berlin", "America/New_York", "Australia/Sydney", "America/Santiago"}) {
    SCOPED_TRACE(tz);
    const CronSchedule s = std::get<CronSchedule>(parse_cron("0 * * * *"));
    const CronZone z = zone(tz);
    sys_seconds t = utc(2026, 1, 1);
    int n = 0;
    while (true) {
      const auto next = next_fire(s, t, z);
      ASSERT_TRUE(next.has_value());
      if (*next > utc(2027, 1, 1)) break;
      ASSERT_EQ(*next - t, hours{1}) << "after " << zone_show(t);
      t = *next;
      ++n;
    }
    EXPECT_EQ(n, 365 * 24);
  }
}

TEST(CronDst, AYearOfADailyTimeIsOneFirePerLocalDay) {
  // 02:30 is skipped once and repeated once a year in each of these zones;
  // still exactly one run per local calendar day.
  for (const char* tz : {"Europe/Berlin", "Europe/London", "America/New_York", "Australia/Sydney"}) {
    SCOPED_TRACE(tz);
    const CronSchedule s = std::get<CronSchedule>(parse_cron("30 2 * * *"));
    const CronZone z = zone(tz);
    sys_seconds t = utc(2026, 1, 1);
    std::vector<sys_days> local_days;
    while (true) {
      const auto next = next_fire(s, t, z);
      ASSERT_TRUE(next.has_value());
      if (*next >= utc(2027, 1, 1)) break;
      local_days.push_back(floor<days>(z.local_at(*next)));
      t = *next;
    }
    for (std::size_t i = 1; i < local_days.size(); ++i) EXPECT_EQ(local_days[i] - local_days[i - 1], days{1});
    EXPECT_GE(local_days.size(), 364u);
    EXPECT_LE(local_days.size(), 366u);
  }
}

TEST(CronZoneInstants, KindsOfLocalTimes) {
  const CronZone berlin = zone("Europe/Berlin");
  const LocalInstants skipped = berlin.instants_of(utc(2026, 3, 29, 2, 30));
  EXPECT_EQ(skipped.kind, LocalInstants::Kind::skipped);
  EXPECT_EQ(zone_show(skipped.at[0]), "2026-03-29 01:00");
  const LocalInstants repeated = berlin.instants_of(utc(2026, 10, 25, 2, 30));
  EXPECT_EQ(repeated.kind, LocalInstants::Kind::repeated);
  EXPECT_EQ(repeated.count, 2u);
  EXPECT_EQ(zone_show(repeated.at[0]), "2026-10-25 00:30");
  EXPECT_EQ(zone_show(repeated.at[1]), "2026-10-25 01:30");
  const LocalInstants plain = berlin.instants_of(utc(2026, 7, 1, 12));
  EXPECT_EQ(plain.kind, LocalInstants::Kind::unique);
  EXPECT_EQ(zone_show(plain.at[0]), "2026-07-01 10:00");
  EXPECT_EQ(berlin.period_at(utc(2026, 7, 1)).offset, hours{2});
  EXPECT_EQ(zone_show(berlin.period_at(utc(2026, 7, 1)).end), "2026-10-25 01:00");
}

}  // namespace
