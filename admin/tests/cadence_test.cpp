// A cron job's cadence beside its ledger (docs/scheduling.md, "Cadence"):
// the slots its schedule made due in a window, and the interval it is
// configured to fire at, from the schedule itself.
#include <gtest/gtest.h>

#include "../src/admin_handler_support.h"

namespace baton::admin {
namespace {

constexpr std::int64_t noon = 1'764'936'000;  // 2025-12-05T12:00:00Z, on a minute

TEST(Cadence, DueSlotsCountTheScheduleInTheWindow) {
  EXPECT_EQ(due_slots("0 * * * * *", "UTC", noon - 3599, noon), 60);
  EXPECT_EQ(due_slots("*/10 * * * * *", "UTC", noon - 59, noon), 6);
  EXPECT_EQ(due_slots("not a schedule", "UTC", noon - 59, noon), std::nullopt);
}

// Issue 63: a job that fires every 60 s showed 45 and 54 while its window
// was younger than a few intervals (the window's length over its slots).
// Checked failing with that quotient: 54 for the young window below.
TEST(Cadence, TheConfiguredIntervalComesFromTheScheduleWhateverTheWindow) {
  EXPECT_DOUBLE_EQ(*schedule_interval_s("0 * * * * *", "UTC", noon - 3599, noon), 60.0);
  // Two minutes old, created mid-minute: two slots in 108 s of window.
  EXPECT_EQ(due_slots("0 * * * * *", "UTC", noon - 107, noon), 2);
  EXPECT_DOUBLE_EQ(*schedule_interval_s("0 * * * * *", "UTC", noon - 107, noon), 60.0);
  // Younger than one interval: the next slots after it.
  EXPECT_DOUBLE_EQ(*schedule_interval_s("0 * * * * *", "UTC", noon - 20, noon - 10), 60.0);
  EXPECT_DOUBLE_EQ(*schedule_interval_s("*/15 * * * * *", "UTC", noon - 5, noon), 15.0);
  EXPECT_EQ(schedule_interval_s("not a schedule", "UTC", noon - 59, noon), std::nullopt);
}

}  // namespace
}  // namespace baton::admin
