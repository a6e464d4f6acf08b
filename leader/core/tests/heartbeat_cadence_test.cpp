// The fleet's heartbeat budget (heartbeat_cadence.h): what a worker's welcome
// gives it by the number of workers attached.
#include "baton/leader_core/heartbeat_cadence.h"

#include <gtest/gtest.h>

namespace baton::leader_core {
namespace {

using namespace std::chrono_literals;

RuntimeConfig config(int budget) {
  RuntimeConfig c;  // interval 1 s, timeout 5 s, margin 10 s
  c.max_heartbeats_per_second = budget;
  return c;
}

TEST(HeartbeatCadence, AFleetWithinTheBudgetKeepsTheConfiguredCadence) {
  EXPECT_EQ(heartbeat_cadence(1, config(2000)), (HeartbeatCadence{1000ms, 5000ms}));
  EXPECT_EQ(heartbeat_cadence(2000, config(2000)), (HeartbeatCadence{1000ms, 5000ms})) << "2,000 a second exactly";
}

TEST(HeartbeatCadence, ALargerFleetStretchesIntervalAndTimeoutAlike) {
  EXPECT_EQ(heartbeat_cadence(3000, config(2000)), (HeartbeatCadence{1500ms, 7500ms}));
  EXPECT_EQ(heartbeat_cadence(2001, config(2000)), (HeartbeatCadence{1001ms, 5005ms})) << "rounded up";
}

TEST(HeartbeatCadence, TheTimeoutNeverPassesTheContinuationMargin) {
  // 10,000 workers at 2,000 a second would want 5 s and 25 s; the margin
  // (10 s) caps the timeout, the interval keeps its ratio.
  EXPECT_EQ(heartbeat_cadence(10000, config(2000)), (HeartbeatCadence{2000ms, 10000ms}));
  auto wide = config(2000);
  wide.continuation_margin = 30000ms;
  EXPECT_EQ(heartbeat_cadence(10000, wide), (HeartbeatCadence{5000ms, 25000ms}));
  auto tight = config(2000);
  tight.continuation_margin = tight.heartbeat_timeout;
  EXPECT_EQ(heartbeat_cadence(10000, tight), (HeartbeatCadence{1000ms, 5000ms})) << "no room to stretch";
}

TEST(HeartbeatCadence, ABudgetOfZeroNeverStretches) {
  EXPECT_EQ(heartbeat_cadence(100000, config(0)), (HeartbeatCadence{1000ms, 5000ms}));
}

}  // namespace
}  // namespace baton::leader_core
