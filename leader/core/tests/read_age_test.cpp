// A read fed late: its relative times move by the time it waited, never
// past the truth (docs/architecture.md, "One pass of the loop").
#include "baton/leader_core/read_age.h"

#include <gtest/gtest.h>

namespace baton::leader_core {
namespace {

store::DueRun due_in(std::int64_t ms) {
  store::DueRun d;
  d.starts_in_ms = ms;
  return d;
}

TEST(ReadAge, ADueRunsTimeLeftShrinksByTheTimeItsReadWaited) {
  std::vector<store::DueRun> rows{due_in(250), due_in(7), due_in(0)};
  age_read(rows, Millis{10});
  EXPECT_EQ(rows[0].starts_in_ms, 240);
  EXPECT_EQ(rows[1].starts_in_ms, 0) << "its time came while the read waited: no hold, never a negative one";
  EXPECT_EQ(rows[2].starts_in_ms, 0);
}

TEST(ReadAge, TheDatabasesClockAtTheReadMovesOnByTheTimeItWaited) {
  store::ScheduledJob j;
  j.now_unix_ms = 1'700'000'000'995;
  j.now_unix = 1'700'000'000;
  std::vector<store::ScheduledJob> jobs{j};
  age_read(jobs, Millis{10});
  EXPECT_EQ(jobs[0].now_unix_ms, 1'700'000'001'005);
  EXPECT_EQ(jobs[0].now_unix, 1'700'000'001) << "the seconds follow the milliseconds";
}

TEST(ReadAge, AReadFedAtOnceIsUnchanged) {
  std::vector<store::DueRun> rows{due_in(250)};
  age_read(rows, Millis{0});
  EXPECT_EQ(rows[0].starts_in_ms, 250);
}

}  // namespace
}  // namespace baton::leader_core
