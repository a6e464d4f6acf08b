// `baton cron next`: the printed times, the zone's offsets in them, and the
// errors that point at what was wrong.
#include "baton/leader_core/cron_command.h"

#include <gtest/gtest.h>

#include "baton/leader_core/cron_zone.h"

using namespace baton::leader_core;
using namespace std::chrono;

namespace {

const sys_seconds kNow = sys_days{year{2026} / 3 / 28} + hours{12};

CronCommandResult run(std::vector<std::string> args) { return run_cron_command(args, kNow); }

TEST(CronCommand, PrintsTheNextTimesWithTheZonesOffset) {
  const auto r = run({"next", "30 2 * * *", "--tz", "Europe/Berlin", "-n", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // 2026-03-29: 02:30 does not exist in Berlin; the run is at the jump, 03:00 CEST.
  EXPECT_EQ(r.out, "2026-03-29T03:00:00+02:00\n2026-03-30T02:30:00+02:00\n2026-03-31T02:30:00+02:00\n");
}

TEST(CronCommand, FromIsInclusiveAndDefaultsToUtc) {
  const auto r = run({"next", "@hourly", "--from", "2026-01-01T00:00:00Z", "-n", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "2026-01-01T00:00:00Z\n2026-01-01T01:00:00Z\n");
  const auto def = run({"next", "0 0 * * *"});
  EXPECT_EQ(def.out.substr(0, 21), "2026-03-29T00:00:00Z\n");
  EXPECT_EQ(std::count(def.out.begin(), def.out.end(), '\n'), 5);
}

TEST(CronCommand, FromWithoutOffsetIsAWallClockInTheZone) {
  const auto r = run({"next", "0 * * * *", "--tz", "America/New_York", "--from", "2026-11-01 00:30", "-n", "4"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "2026-11-01T01:00:00-04:00\n2026-11-01T01:00:00-05:00\n2026-11-01T02:00:00-05:00\n"
            "2026-11-01T03:00:00-05:00\n");
}

TEST(CronCommand, BadExpressionsPointAtTheField) {
  const auto r = run({"next", "0 25 * * *"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("position 2: hour field: value 25 out of range 0-23"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  0 25 * * *\n    ^\n"), std::string::npos) << r.err;
}

TEST(CronCommand, UsageErrorsNameWhatWasWrong) {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{}, "missing subcommand"},
      {{"last"}, "unknown subcommand 'last'"},
      {{"next"}, "missing cron expression"},
      {{"next", "0", "9", "*", "*", "*"}, "quote the whole expression"},
      {{"next", "@daily", "--tz", "Mars/Olympus"}, "\"Mars/Olympus\" is not a known IANA zone"},
      {{"next", "@daily", "--from", "yesterday"}, "time \"yesterday\": no date"},
      {{"next", "@daily", "--from", "2026-02-30T00:00Z"}, "no such date"},
      {{"next", "@daily", "-n", "0"}, "-n '0': expected a number from 1 to 1000"},
      {{"next", "@daily", "-n"}, "-n needs a value"},
      {{"next", "@daily", "--verbose"}, "unknown option '--verbose'"},
  };
  for (const auto& c : cases) {
    const auto r = run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.says;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  EXPECT_EQ(run({"next", "0 0 30 2 *"}).exit_code, 1) << "never fires";
  EXPECT_EQ(run({"--help"}).exit_code, 0);
}

TEST(CronIso8601, FormatsAndParsesRoundTrip) {
  auto berlin = std::get<CronZone>(CronZone::locate("Europe/Berlin"));
  const sys_seconds t = sys_days{year{2026} / 7 / 1} + hours{10};
  EXPECT_EQ(format_iso8601(t, berlin), "2026-07-01T12:00:00+02:00");
  EXPECT_EQ(format_iso8601(t, CronZone{}), "2026-07-01T10:00:00Z");
  EXPECT_EQ(format_iso8601(t, CronZone::fixed(minutes{-330})), "2026-07-01T04:30:00-05:30");
  for (const char* text :
       {"2026-07-01T12:00:00+02:00", "2026-07-01T10:00:00Z", "2026-07-01 12:00", "2026-07-01T04:30-05:30"}) {
    auto parsed = parse_iso8601(text, berlin);
    ASSERT_TRUE(std::holds_alternative<sys_seconds>(parsed)) << text << ": " << std::get<std::string>(parsed);
    EXPECT_EQ(std::get<sys_seconds>(parsed), t) << text;
  }
  for (const char* bad :
       {"", "2026-07-01", "2026-07-01T25:00Z", "2026-07-01T10:00Zx", "2026-07-01T10:00+2", "2026/07/01 10:00"}) {
    EXPECT_TRUE(std::holds_alternative<std::string>(parse_iso8601(bad, berlin))) << bad;
  }
}

}  // namespace
