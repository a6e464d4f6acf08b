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
