// When the worker's loop stood still long enough that a frame it reads next
// may be stale (stall_guard.h).
#include "baton/worker_core/stall_guard.h"

#include <gtest/gtest.h>

namespace baton::worker_core {
namespace {

using namespace std::chrono_literals;

MonoTime at(Millis t) { return MonoTime{} + t; }

TEST(StallGuard, ALoopThatTicksIsNeverStalled) {
  StallGuard g(1000ms);
  for (int i = 0; i <= 100; ++i) EXPECT_FALSE(g.stalled(at(Millis{i * 100}))) << i;
}

TEST(StallGuard, AGapLongerThanTheLimitIsAStallOnce) {
  StallGuard g(1000ms);
  EXPECT_FALSE(g.stalled(at(0ms)));
  EXPECT_FALSE(g.stalled(at(1000ms))) << "exactly the limit";
  EXPECT_TRUE(g.stalled(at(9300ms))) << "a SIGSTOP of 8.3 s";
  EXPECT_FALSE(g.stalled(at(9350ms))) << "counted from the call that saw it";
}

TEST(StallGuard, TheFirstCallOnlyStartsTheCount) {
  StallGuard g(1000ms);
  EXPECT_FALSE(g.stalled(at(50000ms)));
  EXPECT_TRUE(g.stalled(at(52000ms)));
}

TEST(StallGuard, TheLimitIsHalfOfTimeoutLessIntervalAtLeastAQuarterSecond) {
  EXPECT_EQ(StallGuard::limit_for(1000ms, 5000ms), 2000ms) << "the defaults";
  EXPECT_EQ(StallGuard::limit_for(300ms, 1500ms), 600ms) << "the chaos harness's";
  EXPECT_EQ(StallGuard::limit_for(2000ms, 10000ms), 4000ms) << "a stretched cadence (heartbeat_cadence.h)";
  EXPECT_EQ(StallGuard::limit_for(1000ms, 1200ms), 250ms);
}

}  // namespace
}  // namespace baton::worker_core
