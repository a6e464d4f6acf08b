// BatchLane: the book's write lanes -- one batch in flight, everything
// queued meanwhile in the next, one row per run.
#include "baton/leader_core/batch_lane.h"

#include <gtest/gtest.h>

#include <string>

using namespace baton::leader_core;

namespace {
struct Row {
  std::int64_t run = 0;
  int version = 0;
};
}  // namespace

TEST(BatchLane, OneBatchInFlightAndWhatQueuedMeanwhileGoesOutNext) {
  BatchLane<Row> lane;
  EXPECT_FALSE(lane.take()) << "nothing queued, nothing to write";
  ASSERT_TRUE(lane.queue(1, {1, 3}));
  ASSERT_TRUE(lane.queue(2, {2, 5}));
  auto first = lane.take();
  ASSERT_TRUE(first);
  ASSERT_EQ(first->rows.size(), 2u);
  EXPECT_EQ(first->rows[0].run, 1);
  EXPECT_EQ(first->rows[1].version, 5);
  EXPECT_TRUE(lane.busy());
  EXPECT_TRUE(lane.writing(1));
  EXPECT_FALSE(lane.queued(1));

  ASSERT_TRUE(lane.queue(3, {3, 1}));
  EXPECT_FALSE(lane.take()) << "a second batch while the first is in flight";
  EXPECT_EQ(lane.queued_rows(), 1u);
  lane.written();
  EXPECT_FALSE(lane.writing(1));
  auto second = lane.take();
  ASSERT_TRUE(second);
  ASSERT_EQ(second->rows.size(), 1u);
  EXPECT_EQ(second->rows[0].run, 3);
  lane.check();
}

TEST(BatchLane, ARunHasOneRowQueuedOrBeingWrittenNeverTwo) {
  BatchLane<Row> lane;
  ASSERT_TRUE(lane.queue(7, {7, 1}));
  EXPECT_FALSE(lane.queue(7, {7, 2})) << "a resend of a queued row";
  EXPECT_EQ(lane.queued_rows(), 1u);
  ASSERT_TRUE(lane.take());
  EXPECT_FALSE(lane.queue(7, {7, 2})) << "a resend while its row is being written";
  EXPECT_TRUE(lane.holds(7));
  lane.written();
  EXPECT_FALSE(lane.holds(7));
  EXPECT_TRUE(lane.queue(7, {7, 2})) << "after the result, a new row for the run is the next batch's";
  lane.check();
}

TEST(BatchLane, NotesComeBackWithTheirBatchByRun) {
  BatchLane<Row, std::string> lane;
  ASSERT_TRUE(lane.queue(4, {4, 1}, "from w1"));
  ASSERT_TRUE(lane.queue(9, {9, 1}, "from w2"));
  EXPECT_FALSE(lane.queue(9, {9, 2}, "from w3"));
  auto batch = lane.take();
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->notes.size(), 2u);
  EXPECT_EQ(batch->notes.at(4), "from w1");
  EXPECT_EQ(batch->notes.at(9), "from w2") << "the refused resend did not replace the note";
  lane.written();
  EXPECT_FALSE(lane.take());
  lane.check();
}

TEST(BatchLaneDeathTest, AResultWithNoBatchInFlightStopsTheNode) {
  BatchLane<Row> lane;
  EXPECT_DEATH(lane.written(), "busy_");
}
