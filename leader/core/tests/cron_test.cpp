// Cron parsing and next-fire computation: table-driven cases with hand-computed
// expected times, parse errors with their positions, time zone names, and a
// cross-check of the skipping search against a naive minute/second walk.
#include "baton/leader_core/cron.h"

#include "cron_test_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace baton::leader_core;
using namespace std::chrono;

namespace {

using test::show;
sys_seconds at(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0) {
  return test::utc(y, mo, d, h, mi, s);
}

CronSchedule parse_ok(std::string_view expr) {
  auto r = parse_cron(expr);
  if (auto* e = std::get_if<CronParseError>(&r)) {
    ADD_FAILURE() << "\"" << expr << "\" failed to parse at " << e->position << ": " << e->message;
    return CronSchedule{};
  }
  return std::get<CronSchedule>(r);
}

struct FireCase {
  const char* expr;
  sys_seconds after;
  std::optional<sys_seconds> want;
  minutes offset{0};
};

// Expected times are UTC instants, worked out by hand from the calendar
// (2024-01-01 is a Monday; 2024 and 2028 are leap years, 2100 is not).
const std::vector<FireCase>& fire_cases() {
  static const std::vector<FireCase> cases = {
      // Every minute / every second; always strictly after.
      {"* * * * *", at(2024, 1, 1), at(2024, 1, 1, 0, 1)},
      {"* * * * *", at(2024, 1, 1, 0, 0, 30), at(2024, 1, 1, 0, 1)},
      {"* * * * * *", at(2024, 1, 1), at(2024, 1, 1, 0, 0, 1)},
      // Seconds field.
      {"30 * * * * *", at(2024, 1, 1, 10, 0, 30), at(2024, 1, 1, 10, 1, 30)},
      {"*/15 * * * * *", at(2024, 1, 1, 10, 0, 44), at(2024, 1, 1, 10, 0, 45)},
      {"0,30 0 12 * * *", at(2024, 1, 1, 12, 0, 0), at(2024, 1, 1, 12, 0, 30)},
      {"0,30 0 12 * * *", at(2024, 1, 1, 12, 0, 30), at(2024, 1, 2, 12, 0, 0)},
      {"5-7 59 23 31 12 *", at(2024, 12, 31, 23, 59, 7), at(2025, 12, 31, 23, 59, 5)},
      // Steps and ranges.
      {"*/5 * * * *", at(2024, 1, 1, 10, 3), at(2024, 1, 1, 10, 5)},
      {"5-10 * * * *", at(2024, 1, 1, 10, 10), at(2024, 1, 1, 11, 5)},
      {"10-20/5 * * * *", at(2024, 1, 1, 10, 16), at(2024, 1, 1, 10, 20)},
      {"10-20/5 * * * *", at(2024, 1, 1, 10, 20), at(2024, 1, 1, 11, 10)},
      {"7/20 * * * *", at(2024, 1, 1, 10, 47), at(2024, 1, 1, 11, 7)},  // 7,27,47
      {"0 9-17/4 * * *", at(2024, 1, 1, 17), at(2024, 1, 2, 9)},        // 9,13,17
      // Lists.
      {"0,15,45 * * * *", at(2024, 1, 1, 10, 15), at(2024, 1, 1, 10, 45)},
      {"0 6,18 1,15 * *", at(2024, 1, 1, 18), at(2024, 1, 15, 6)},
      // Day of month, months and month names.
      {"0 0 1 * *", at(2024, 1, 15), at(2024, 2, 1)},
      {"0 12 * JAN,jul *", at(2024, 1, 31, 12), at(2024, 7, 1, 12)},
      {"0 12 * feb-Apr *", at(2024, 4, 30, 12), at(2025, 2, 1, 12)},
      {"0 0 31 * *", at(2024, 1, 31), at(2024, 3, 31)},  // Feb has no 31st
      {"0 0 31 */2 *", at(2024, 1, 31), at(2024, 3, 31)},
      // Day of week, names, 0 and 7 both Sunday.
      {"0 9 * * MON-FRI", at(2024, 1, 5, 9), at(2024, 1, 8, 9)},
      {"0 9 * * sat,SUN", at(2024, 1, 1), at(2024, 1, 6, 9)},
      {"0 0 * * 7", at(2024, 1, 1), at(2024, 1, 7)},
      {"0 0 * * 0", at(2024, 1, 1), at(2024, 1, 7)},
      {"0 0 * * 5-7", at(2024, 1, 1), at(2024, 1, 5)},
      {"0 0 * * 5-7", at(2024, 1, 6), at(2024, 1, 7)},
      {"0 0 * * */2", at(2024, 1, 1), at(2024, 1, 2)},  // Sun, Tue, Thu, Sat
      // Vixie rule: both restricted -> either; one starts with '*' -> both.
      {"0 0 13 * FRI", at(2024, 1, 1), at(2024, 1, 5)},    // Friday 5th
      {"0 0 13 * FRI", at(2024, 1, 12), at(2024, 1, 13)},  // Saturday 13th
      {"0 0 13 * *", at(2024, 1, 1), at(2024, 1, 13)},
      {"0 0 */10 * MON", at(2024, 1, 1), at(2024, 3, 11)},  // 1/11/21/31 AND Monday
      // Macros.
      {"@hourly", at(2024, 1, 1, 10), at(2024, 1, 1, 11)},
      {"@daily", at(2024, 1, 1), at(2024, 1, 2)},
      {"@midnight", at(2024, 1, 1, 13, 14, 15), at(2024, 1, 2)},
      {"@weekly", at(2024, 1, 1), at(2024, 1, 7)},
      {"@monthly", at(2024, 1, 31, 23, 59, 59), at(2024, 2, 1)},
      {"@yearly", at(2024, 6, 15), at(2025, 1, 1)},
      {"@ANNUALLY", at(2024, 1, 1), at(2025, 1, 1)},
      // @every: multiples of the period since the epoch (2024-01-01 00:00:00
      // is 1704067200 = 7 * 243438171 + 3).
      {"@every 10s", at(2024, 1, 1, 0, 0, 3), at(2024, 1, 1, 0, 0, 10)},
      {"@every 10s", at(2024, 1, 1, 0, 0, 10), at(2024, 1, 1, 0, 0, 20)},
      {"@every 7s", at(2024, 1, 1), at(2024, 1, 1, 0, 0, 4)},
      {"@every 7s", at(2024, 1, 1, 0, 0, 4), at(2024, 1, 1, 0, 0, 11)},
      {"@every 2000ms", at(2024, 1, 1, 0, 0, 1), at(2024, 1, 1, 0, 0, 2)},
      {"@every 1h", at(2024, 1, 1, 10, 30), at(2024, 1, 1, 11)},
      {"@every 90m", at(2024, 1, 1), at(2024, 1, 1, 1, 30)},
      {"@every 90m", at(2024, 1, 1), at(2024, 1, 1, 1, 30), minutes{330}},  // offset ignored
      {"@every 10s", at(1969, 12, 31, 23, 59, 55), at(1970, 1, 1)},
      // Leap years and impossible dates.
      {"0 0 29 2 *", at(2023, 1, 1), at(2024, 2, 29)},
      {"0 0 29 2 *", at(2024, 3, 1), at(2028, 2, 29)},
      {"0 0 29 2 *", at(2096, 3, 1), std::nullopt},  // next is 2104: beyond 5 years
      {"0 0 30 2 *", at(2024, 1, 1), std::nullopt},
      {"0 0 31 4,6,9,11 *", at(2024, 1, 1), std::nullopt},
      {"0 0 28-31 2 *", at(2023, 2, 28), at(2024, 2, 28)},
      // Year rollover.
      {"59 23 31 12 *", at(2024, 12, 31, 23, 59), at(2025, 12, 31, 23, 59)},
      {"* * * * *", at(2024, 12, 31, 23, 59, 59), at(2025, 1, 1)},
      {"0 0 1 1 *", at(2024, 12, 31, 23, 59, 59), at(2025, 1, 1)},
      // UTC offsets: fields match the local wall clock, the result is UTC.
      {"0 9 * * *", at(2024, 1, 1), at(2024, 1, 1, 7), minutes{120}},
      {"0 0 * * *", at(2024, 1, 1), at(2024, 1, 1, 5, 30), minutes{-330}},
      {"0 1 * * MON", at(2024, 1, 1), at(2024, 1, 7, 20), minutes{300}},  // local Mon 01:00
      {"0 0 1 1 *", at(2024, 12, 31, 22), at(2024, 12, 31, 23), minutes{60}},
      {"@daily", at(2024, 12, 31, 22), at(2025, 1, 1, 8), minutes{-480}},
  };
  return cases;
}

TEST(CronNextFire, TableOfHandComputedTimes) {
  for (const FireCase& c : fire_cases()) {
    SCOPED_TRACE(std::string(c.expr) + " after " + show(c.after) + " offset " + std::to_string(c.offset.count()));
    const CronSchedule s = parse_ok(c.expr);
    EXPECT_EQ(show(next_fire(s, c.after, c.offset)), show(c.want));
  }
}

TEST(CronNextFire, TableHasEnoughDistinctExpressions) {
  std::vector<std::string> exprs;
  for (const FireCase& c : fire_cases()) {
    if (std::find(exprs.begin(), exprs.end(), c.expr) == exprs.end()) exprs.push_back(c.expr);
  }
  EXPECT_GE(exprs.size(), 25u);
}

TEST(CronNextFire, SuccessiveFiresOfDomOrDow) {
  // "0 0 13 * FRI": every Friday plus every 13th.
  const CronSchedule s = parse_ok("0 0 13 * FRI");
  std::vector<std::string> got;
  sys_seconds t = at(2024, 9, 1);
  for (int i = 0; i < 6; ++i) {
    t = *next_fire(s, t);
    got.push_back(show(t));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"2024-09-06 00:00:00", "2024-09-13 00:00:00", "2024-09-20 00:00:00",
                                           "2024-09-27 00:00:00", "2024-10-04 00:00:00", "2024-10-11 00:00:00"}));
  t = *next_fire(s, t);
  EXPECT_EQ(show(t), "2024-10-13 00:00:00");  // a Sunday, matched by the day of month
}

TEST(CronNextFire, FiveYearWindowEdge) {
  // "0 0 29 2 *" from the instant of 2024-02-29 00:00 is 4 years away;
  // "0 0 29 2 MON" (both restricted) is also any Monday in February.
  const CronSchedule feb29 = parse_ok("0 0 29 2 *");
  EXPECT_EQ(show(next_fire(feb29, at(2024, 2, 29))), "2028-02-29 00:00:00");
  EXPECT_EQ(show(next_fire(parse_ok("0 0 29 2 MON"), at(2024, 1, 1))), "2024-02-05 00:00:00");
}

TEST(CronNextFire, NamedTimeZoneOverload) {
  const CronSchedule s = parse_ok("0 9 * * *");
  EXPECT_EQ(show(next_fire(s, at(2024, 1, 1), "UTC")), "2024-01-01 09:00:00");
  EXPECT_EQ(show(next_fire(s, at(2024, 1, 1), "+02:00")), "2024-01-01 07:00:00");
  EXPECT_EQ(show(next_fire(s, at(2024, 1, 1), "-05:30")), "2024-01-01 14:30:00");
  EXPECT_EQ(show(next_fire(s, at(2024, 1, 1), "Europe/Berlin")), "2024-01-01 08:00:00");  // CET, +01:00
  EXPECT_EQ(show(next_fire(s, at(2024, 7, 1), "Europe/Berlin")), "2024-07-01 07:00:00");  // CEST, +02:00
  EXPECT_EQ(next_fire(s, at(2024, 1, 1), "Europe/Berlinn"), std::nullopt);
}

TEST(CronParse, MacrosEqualTheirExpansions) {
  EXPECT_EQ(parse_ok("@yearly"), parse_ok("0 0 1 1 *"));
  EXPECT_EQ(parse_ok("@annually"), parse_ok("0 0 1 1 *"));
  EXPECT_EQ(parse_ok("@monthly"), parse_ok("0 0 1 * *"));
  EXPECT_EQ(parse_ok("@weekly"), parse_ok("0 0 * * 0"));
  EXPECT_EQ(parse_ok("@daily"), parse_ok("0 0 * * *"));
  EXPECT_EQ(parse_ok("@midnight"), parse_ok("0 0 * * *"));
  EXPECT_EQ(parse_ok("@hourly"), parse_ok("0 * * * *"));
  EXPECT_EQ(parse_ok("0 * * * *"), parse_ok("0 0 * * * *"));
}

TEST(CronParse, FieldDetails) {
  const CronSchedule s = parse_ok("  1,2  3-4 1/10 JAN-mar  mon-wed,7 ");
  EXPECT_EQ(s.seconds, 1u);  // 5 fields: second 0
  EXPECT_EQ(s.minutes, 0b110u);
  EXPECT_EQ(s.hours, (1u << 3) | (1u << 4));
  EXPECT_EQ(s.days_of_month, (1u << 1) | (1u << 11) | (1u << 21) | (1u << 31));
  EXPECT_EQ(s.months, 0b1110u);
  EXPECT_EQ(s.days_of_week, 0b1111u);  // Sun (from 7), Mon, Tue, Wed
  EXPECT_FALSE(s.dom_star);
  EXPECT_FALSE(s.dow_star);
  EXPECT_FALSE(s.is_every());

  const CronSchedule t = parse_ok("0 0 * * */3");
  EXPECT_EQ(t.days_of_week, (1u << 0) | (1u << 3) | (1u << 6));
  EXPECT_TRUE(t.dow_star);
  EXPECT_EQ(parse_ok("0 0 * * 1/2").days_of_week, (1u << 1) | (1u << 3) | (1u << 5));  // a/n: a-6/n

  EXPECT_EQ(parse_ok("@every 2m").every, seconds{120});
  EXPECT_EQ(parse_ok("@EVERY 1H").every, seconds{3600});
  EXPECT_EQ(parse_ok("@every 43800h").every, hours{43800});
}

struct ErrorCase {
  const char* expr;
  std::size_t position;
  const char* message_contains;
};

TEST(CronParse, InvalidExpressionsNamePositionAndProblem) {
  const std::vector<ErrorCase> cases = {
      {"", 0, "empty"},
      {"   ", 0, "empty"},
      {"* * * *", 7, "expected 5 or 6 fields (6 = with seconds), got 4"},
      {"* * * * * * *", 12, "got 7"},
      {"61 * * * *", 0, "minute field: value 61 out of range 0-59"},
      {"  61 * * * *", 2, "minute field: value 61 out of range 0-59"},
      {"0 24 * * *", 2, "hour field: value 24 out of range 0-23"},
      {"0 0 0 * *", 4, "day-of-month field: value 0 out of range 1-31"},
      {"0 0 * 13 *", 6, "month field: value 13 out of range 1-12"},
      {"0 0 * * 8", 8, "day-of-week field: value 8 out of range 0-7"},
      {"60 * * * * *", 0, "second field: value 60 out of range 0-59"},
      {"99999999999999999999 * * * *", 0, "minute field: value 99999999999999999999 out of range 0-59"},
      {"0 0 1,5,32 * *", 8, "day-of-month field: value 32 out of range 1-31"},
      {"0 0 * FOO *", 6, "month field: unknown name \"FOO\""},
      {"0 0 * * MON-FOO", 12, "day-of-week field: unknown name \"FOO\""},
      {"MON * * * *", 0, "minute field: names are not allowed"},
      {"*/0 * * * *", 2, "minute field: step 0 out of range 1-59"},
      {"0 */25 * * *", 4, "hour field: step 25 out of range 1-23"},
      {"*/x * * * *", 2, "minute field: step must be a number"},
      {"5-3 * * * *", 0, "minute field: range 5-3 is backwards"},
      {"0 0 * * FRI-MON", 8, "day-of-week field: range FRI-MON is backwards"},
      {"1,,2 * * * *", 2, "minute field: empty list element"},
      {"1, * * * *", 2, "minute field: empty list element"},
      {"1- * * * *", 2, "minute field: missing range end"},
      {"*/ * * * *", 2, "minute field: missing step"},
      {"1-5x * * * *", 2, "minute field: invalid value \"5x\""},
      {"*-5 * * * *", 1, "minute field: unexpected character '-' after '*'"},
      {"1/2/3 * * * *", 3, "minute field: unexpected character '/'"},
      {"0 0 L * *", 4, "day-of-month field: names are not allowed"},
      {"0 0 ? * *", 4, "day-of-month field: unexpected character '?'"},
      {"@often", 0, "unknown macro \"@often\""},
      {"@daily 5", 7, "unexpected \"5\" after @daily"},
      {"@every", 6, "@every: missing duration"},
      {"@every 500ms", 7, "@every: duration 500ms is below the minimum of 1s"},
      {"@every 0s", 7, "@every: duration 0s must be positive"},
      {"@every 10x", 7, "@every: invalid duration \"10x\""},
      {"@every s", 7, "@every: invalid duration \"s\""},
      {"@every -5s", 7, "@every: invalid duration"},
      {"@every 1500ms", 7, "@every: duration 1500ms is not a whole number of seconds"},
      {"@every 43801h", 7, "exceeds the maximum"},
      {"@every 10s extra", 11, "@every: unexpected \"extra\""},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(std::string("expr: \"") + c.expr + "\"");
    auto r = parse_cron(c.expr);
    const auto* e = std::get_if<CronParseError>(&r);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->position, c.position) << e->message;
    EXPECT_NE(e->message.find(c.message_contains), std::string::npos) << e->message;
  }
  EXPECT_GE(cases.size(), 15u);
}

TEST(CronTimeZone, ValidateNamesAndOffsets) {
  for (const char* good : {"UTC", "Etc/UTC", "Z", "+02:00", "-05:30", "+14:00", "Europe/Berlin", "America/New_York",
                           "Australia/Lord_Howe", "Asia/Kolkata"}) {
    EXPECT_EQ(validate_time_zone(good), std::nullopt) << good;
  }
  for (const char* bad : {"Europe/Berlinn", "", "utc", "+2:00", "+02", "+0200", "+19:00", "+02:60", "02:00",
                          "europe/berlin", "../../etc/passwd", "/etc/localtime", "Europe/Berlin\n"}) {
    SCOPED_TRACE(bad);
    const std::optional<std::string> err = validate_time_zone(bad);
    ASSERT_TRUE(err.has_value());
    if (*bad != '\0') {
      EXPECT_NE(err->find(bad), std::string::npos) << *err;
    }
  }
  EXPECT_NE(validate_time_zone("Europe/Berlinn")->find("not a known IANA zone"), std::string::npos);
}

// ---- cross-check against a naive walk ----------------------------------------

bool naive_matches(const CronSchedule& s, sys_seconds local) {
  const sys_days d = floor<days>(local);
  const year_month_day ymd{d};
  const hh_mm_ss tod{local - d};
  auto bit = [](std::uint64_t m, long v) { return ((m >> v) & 1) != 0; };
  const bool dom = bit(s.days_of_month, static_cast<long>(static_cast<unsigned>(ymd.day())));
  const bool dow = bit(s.days_of_week, static_cast<long>(weekday{d}.c_encoding()));
  const bool day_ok = (s.dom_star || s.dow_star) ? (dom && dow) : (dom || dow);
  return day_ok && bit(s.months, static_cast<long>(static_cast<unsigned>(ymd.month()))) &&
         bit(s.hours, tod.hours().count()) && bit(s.minutes, tod.minutes().count()) &&
         bit(s.seconds, tod.seconds().count());
}

std::optional<sys_seconds> naive_next(const CronSchedule& s, sys_seconds after, minutes offset, seconds horizon) {
  // Second by second; minute by minute once on second 0 of a 5-field schedule.
  const bool minute_steps = s.seconds == 1;
  for (sys_seconds t = after + seconds{1}; t <= after + horizon;) {
    if (naive_matches(s, t + offset)) return t;
    t += (minute_steps && t.time_since_epoch().count() % 60 == 0) ? seconds{60} : seconds{1};
  }
  return std::nullopt;
}

TEST(CronNextFire, AgreesWithNaiveWalk) {
  // Expressions that fire at least every few days, so the naive walk (one
  // second at a time over 8 days) finds every answer.
  const std::vector<const char*> exprs = {
      "* * * * *",      "*/7 * * * *",   "13 */5 * * *",   "0 9-17 * * MON-FRI", "15,45 3 * * *",
      "0 0 * * 0",      "0 0 13 * FRI",  "*/10 * * * * *", "5-7 1 2 * * *",      "0 30 */4 * * sat,sun",
      "0 0 1,15 * WED", "59 23 * * *",   "0 0 */2 * *",    "10/20 * * * * *",    "0 12 * * 7",
      "30 2 * * 1-5/2", "0 0 28-31 * *", "45 23 31 12 *",  "0 0 * FEB,MAR *",    "0 0 29 * *",
  };
  std::mt19937_64 rng(20240229);
  std::uniform_int_distribution<std::int64_t> when(at(2023, 1, 1).time_since_epoch().count(),
                                                   at(2029, 1, 1).time_since_epoch().count());
  const std::vector<minutes> offsets = {minutes{0}, minutes{330}, minutes{-480}};
  int compared = 0;
  for (const char* expr : exprs) {
    const CronSchedule s = parse_ok(expr);
    for (int i = 0; i < 3; ++i) {
      const sys_seconds after{seconds{when(rng)}};
      const minutes off = offsets[static_cast<std::size_t>(i) % offsets.size()];
      SCOPED_TRACE(std::string(expr) + " after " + show(after) + " offset " + std::to_string(off.count()));
      const std::optional<sys_seconds> got = next_fire(s, after, off);
      const std::optional<sys_seconds> want = naive_next(s, after, off, days{8});
      if (want) {
        ++compared;
        EXPECT_EQ(show(got), show(want));
      } else {
        ASSERT_TRUE(got.has_value());  // further away than the naive walk looked
        EXPECT_GT(*got - after, days{8});
        EXPECT_TRUE(naive_matches(s, *got + off));
      }
    }
  }
  EXPECT_GE(compared, 45);
}

}  // namespace
