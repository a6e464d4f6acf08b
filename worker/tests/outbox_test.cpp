#include "baton/worker/outbox.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

using namespace baton;
using namespace baton::worker;

TEST(Outbox, KeepsFinishesUntilAcknowledgedAcrossReopen) {
  std::string dir = "/tmp/baton-outbox-test-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  protocol::Finish a{{1, 1, "aaaa"}, "SUCCEEDED", 0, "", "out", "", 5, {}};
  protocol::Finish b{{2, 3, "bbbb"}, "FAILED", 2, "exit 2", "", "err", 7, {}};
  {
    Outbox o(dir);
    ASSERT_TRUE(o.open());
    ASSERT_TRUE(o.put(a));
    ASSERT_TRUE(o.put(b));
    ASSERT_TRUE(o.put(a));  // idempotent: same attempt, one file
  }
  Outbox again(dir);
  ASSERT_TRUE(again.open());
  auto pending = again.pending();
  ASSERT_EQ(pending.size(), 2u);
  again.remove(a.ref);
  pending = again.pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0], b);
  EXPECT_TRUE(again.pending(std::chrono::seconds(60)).empty()) << "just written: not yet due for a resend";
  std::filesystem::remove_all(dir);
}

TEST(Outbox, AGroupIsOneFileKeptUntilItsLastFinishIsAcknowledged) {
  std::string dir = "/tmp/baton-outbox-group-test-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  auto files = [&] {
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir + "/outbox")) n += e.path().extension() == ".jsonl";
    return n;
  };
  std::vector<protocol::Finish> group;
  for (int i = 1; i <= 3; ++i) group.push_back({{i, 1, "tok" + std::to_string(i)}, "SUCCEEDED", 0, "", "", "", 1, {}});
  {
    Outbox o(dir);
    ASSERT_TRUE(o.open());
    ASSERT_TRUE(o.put_all(group));
    EXPECT_EQ(files(), 1u) << "one file (one fsync) for the group";
    ASSERT_TRUE(o.put_all(group));
    EXPECT_EQ(files(), 1u) << "finishes already pending are not written again";
    o.remove(group[0].ref);
    o.remove(group[1].ref);
    EXPECT_EQ(files(), 1u) << "the file still holds an unacknowledged finish";
  }
  Outbox again(dir);
  ASSERT_TRUE(again.open());
  // Acks are not written down (that would cost a write per ack): after a
  // restart the whole group is pending again, and the finishes already
  // acknowledged are replays the leader acknowledges without writing.
  auto pending = again.pending();
  ASSERT_EQ(pending.size(), 3u);
  EXPECT_EQ(pending[2], group[2]);
  for (const auto& f : group) again.remove(f.ref);
  EXPECT_EQ(files(), 0u);
  std::filesystem::remove_all(dir);
}
