// The sweep yields to runs (docs/assurance.md, "Under load"): under a load
// above the threshold a round reads its busy allowance and no more; below
// it, all it may; a load that starts mid-round stops the round there.
#include "baton/verify/sweep_pace.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::verify;

TEST(SweepPace, FinishesPerSecondCountOverTheTimeTheyTook) {
  EXPECT_DOUBLE_EQ(finished_per_s(3000, Millis{30000}), 100.0);
  EXPECT_DOUBLE_EQ(finished_per_s(0, Millis{30000}), 0.0);
  EXPECT_DOUBLE_EQ(finished_per_s(10, Millis{0}), 0.0) << "no time passed: no rate";
}

TEST(SweepPace, UnderLoadARoundReadsItsBusyAllowanceAtIdleAllItMay) {
  const SweepPace pace{.busy_runs_per_s = 500, .slices_busy = 1, .slices_max = 100};
  EXPECT_EQ(slices_this_round(pace, 12000), 1) << "runs flow: the cursor may lag";
  EXPECT_EQ(slices_this_round(pace, 500), 100) << "at the threshold: not busy";
  EXPECT_EQ(slices_this_round(pace, 0), 100) << "idle: it catches up";
  const SweepPace none{.busy_runs_per_s = 500, .slices_busy = 0, .slices_max = 100};
  EXPECT_EQ(slices_this_round(none, 12000), 0) << "a busy allowance of 0 reads nothing under load";
  const SweepPace never{.busy_runs_per_s = 0, .slices_busy = 1, .slices_max = 100};
  EXPECT_EQ(slices_this_round(never, 1e9), 100) << "a threshold of 0: the sweep never yields";
}

TEST(SweepPace, ALoadThatStartsMidRoundStopsItAfterItsAllowance) {
  const SweepPace pace{.busy_runs_per_s = 500, .slices_busy = 1, .slices_max = 100};
  EXPECT_TRUE(next_slice_allowed(pace, 5, 10)) << "quiet: go on";
  EXPECT_FALSE(next_slice_allowed(pace, 5, 8000)) << "busy now, allowance read: stop";
  EXPECT_TRUE(next_slice_allowed(pace, 0, 8000)) << "busy, nothing read yet: one slice";
}
