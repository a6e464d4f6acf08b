// TokenBucket: the pace of reassignments after a failover.
#include "baton/leader_core/token_bucket.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::leader_core;
using namespace std::chrono_literals;

TEST(TokenBucket, ABurstThenTheRate) {
  TokenBucket b(10, 5);  // 10/s, 5 at once
  const MonoTime t0{0ns};
  EXPECT_EQ(b.take(8, t0), 5);
  EXPECT_EQ(b.take(8, t0), 0);
  EXPECT_EQ(b.take(8, t0 + 200ms), 2);
  EXPECT_EQ(b.take(8, t0 + 10s), 5) << "never more than the burst, however long it waited";
  EXPECT_EQ(b.take(1, t0 + 10s + 100ms), 1);
}

TEST(TokenBucket, ARateOfZeroIsNoLimit) {
  TokenBucket b(0, 1);
  EXPECT_EQ(b.take(1000, MonoTime{0ns}), 1000);
}
