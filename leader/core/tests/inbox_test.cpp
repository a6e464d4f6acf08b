// The inbox (SQL submissions and events, schemas/0036): the book takes it at
// every cron period, at once when a commit is noticed, again at once while
// batches come back full, never twice at a time, judged by the node's
// denylist; an answer from a newer epoch fences it.
#include <gtest/gtest.h>

#include "baton/leader_core/run_book.h"
#include "run_book_driver.h"

namespace baton::leader_core {
namespace {

using namespace run_book_testing;

TEST(Inbox, TakenAtTheCronPeriodWithTheNodesDenylist) {
  RuntimeConfig c = config();
  c.payload_denylist = {"password", "=token"};
  Driver d(c);
  d.start();
  d.tick(1000ms);
  ASSERT_EQ(d.submission_takes.size(), 1u);
  EXPECT_EQ(d.submission_takes[0].payload_denylist, c.payload_denylist);
  d.tick(1050ms);
  EXPECT_EQ(d.submission_takes.size(), 1u) << "not before the cron period";
  d.tick(1000ms + c.cron_every);
  EXPECT_EQ(d.submission_takes.size(), 2u);
}

TEST(Inbox, ANoticedCommitIsTakenAtTheNextPassNotAtThePeriod) {
  Driver d;
  d.start();
  d.tick(1000ms);
  ASSERT_EQ(d.submission_takes.size(), 1u);
  d.book.inbox_noticed();
  d.tick(1010ms);
  EXPECT_EQ(d.submission_takes.size(), 2u);
  d.tick(1020ms);
  EXPECT_EQ(d.submission_takes.size(), 2u) << "one notice, one take";
}

TEST(Inbox, AFullBatchGoesOnAtTheNextPass) {
  Driver d;
  d.start();
  d.submitted = store::SubmissionsProcessed{kEpoch, 200, 200, 0};
  d.tick(1000ms);
  ASSERT_EQ(d.submission_takes.size(), 1u);
  d.tick(1010ms);
  EXPECT_EQ(d.submission_takes.size(), 2u) << "more were waiting";
  d.tick(1020ms);
  EXPECT_EQ(d.submission_takes.size(), 2u) << "the last batch was not full";
}

TEST(Inbox, NeverTwoTakesInFlight) {
  Driver d;
  d.start();
  d.hold_submissions = true;
  d.tick(1000ms);
  ASSERT_EQ(d.held_submissions.size(), 1u);
  // A notice while the take is in flight waits for it.
  d.book.inbox_noticed();
  d.tick(1010ms);
  d.tick(1000ms + config().cron_every + 10ms);
  EXPECT_EQ(d.submission_takes.size(), 1u);
  d.hold_submissions = false;
  d.answer(d.held_submissions[0], store::SubmissionsProcessed{kEpoch, 0, 0, 0});
  d.tick(1000ms + config().cron_every + 20ms);
  EXPECT_EQ(d.submission_takes.size(), 2u) << "the notice is taken once the take in flight came back";
}

TEST(Inbox, ATakeAnsweredByANewerEpochFencesTheBook) {
  Driver d;
  d.start();
  d.submitted = store::SubmissionsProcessed{Epoch{kEpoch.value + 1}, 0, 0, 0};
  d.tick(1000ms);
  EXPECT_TRUE(d.book.fenced());
}

}  // namespace
}  // namespace baton::leader_core
