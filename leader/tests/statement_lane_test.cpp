#include "baton/leader/statement_lane.h"

#include <gtest/gtest.h>

#include <future>
#include <vector>

using namespace baton::leader;

TEST(StatementLane, RunsItsJobsOneAtATimeInTheOrderPosted) {
  std::vector<int> ran;
  std::promise<void> done;
  {
    StatementLane lane(read_lane_queued_max);
    for (int i = 0; i < 5; ++i) lane.post([&ran, i] { ran.push_back(i); });
    lane.post([&done] { done.set_value(); });
    done.get_future().wait();
  }
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(StatementLane, AWriteLaneTakesTheNextJobOnceTheLastWasTaken) {
  std::promise<void> first_taken, second_ran;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  StatementLane lane(write_lane_queued_max);
  lane.post([&first_taken, released] {
    first_taken.set_value();
    released.wait();
  });
  first_taken.get_future().wait();
  // The first is under way, none waits: the book's next batch may come.
  lane.post([&second_ran] { second_ran.set_value(); });
  release.set_value();
  second_ran.get_future().wait();
}

TEST(StatementLaneDeathTest, ASecondJobQueuedOnAWriteLaneStopsTheNode) {
  // A book that posted a batch while its last one still waited to be
  // taken broke "one batch in flight per lane": the node stops rather
  // than write out of order.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        std::promise<void> first_taken;
        std::promise<void> release;
        std::shared_future<void> blocked = release.get_future().share();
        StatementLane lane(write_lane_queued_max);
        lane.post([&first_taken, blocked] {
          first_taken.set_value();
          blocked.wait();
        });
        first_taken.get_future().wait();
        lane.post([] {});  // queued behind the first: allowed
        lane.post([] {});  // a second one queued: not
        release.set_value();  // without the check the lane drains and the body returns
      },
      "assertion failed: jobs_.size\\(\\) < queued_max_");
}
