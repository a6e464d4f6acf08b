// FailedAuthLimiter: failed authentications per source, refused before the
// credential is looked at once the source's budget is spent.
#include "baton/leader_core/failed_auth_limiter.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::leader_core;
using namespace std::chrono_literals;

TEST(FailedAuthLimiter, ASourceMayFailItsBurstThenIsRefusedUntilItsBudgetRefills) {
  FailedAuthLimiter l({.per_second = 2, .burst = 5, .sources = 100});
  const MonoTime t0{0ns};
  for (int i = 0; i < 5; ++i) {
    EXPECT_FALSE(l.refused("10.0.0.1", t0)) << "failure " << i << " is within the burst";
    l.failed("10.0.0.1", t0);
  }
  auto wait = l.refused("10.0.0.1", t0);
  ASSERT_TRUE(wait);
  EXPECT_EQ(*wait, 500ms) << "one failure's worth at 2 a second";
  EXPECT_FALSE(l.refused("10.0.0.2", t0)) << "another source keeps its own budget";
  EXPECT_TRUE(l.refused("10.0.0.1", t0 + 499ms));
  EXPECT_FALSE(l.refused("10.0.0.1", t0 + 500ms));
  l.failed("10.0.0.1", t0 + 500ms);
  EXPECT_TRUE(l.refused("10.0.0.1", t0 + 600ms)) << "a source that keeps failing gets the rate, no more";
}

TEST(FailedAuthLimiter, ARefusalDoesNotDrainTheBudgetFurther) {
  FailedAuthLimiter l({.per_second = 1, .burst = 1, .sources = 100});
  const MonoTime t0{0ns};
  l.failed("10.0.0.1", t0);
  for (int i = 1; i < 10; ++i) EXPECT_TRUE(l.refused("10.0.0.1", t0 + i * 100ms));
  EXPECT_FALSE(l.refused("10.0.0.1", t0 + 1s)) << "refused requests were not counted as failures";
}

TEST(FailedAuthLimiter, OneIpv6SlashSixtyFourIsOneSource) {
  EXPECT_EQ(auth_source_of("2001:db8:1:2::1"), "2001:db8:1:2::/64");
  EXPECT_EQ(auth_source_of("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::/64");
  EXPECT_EQ(auth_source_of("2001:db8:1:3::1"), "2001:db8:1:3::/64");
  EXPECT_EQ(auth_source_of("::ffff:192.0.2.7"), "192.0.2.7") << "an IPv4-mapped address is its IPv4 address";
  EXPECT_EQ(auth_source_of("192.0.2.7"), "192.0.2.7");
  EXPECT_EQ(auth_source_of("?"), "?");

  FailedAuthLimiter l({.per_second = 1, .burst = 2, .sources = 100});
  const MonoTime t0{0ns};
  l.failed(auth_source_of("2001:db8:1:2::1"), t0);
  l.failed(auth_source_of("2001:db8:1:2::2"), t0);
  EXPECT_TRUE(l.refused(auth_source_of("2001:db8:1:2::3"), t0)) << "every address of the /64 shares its budget";
  EXPECT_FALSE(l.refused(auth_source_of("2001:db8:1:3::1"), t0));
}

TEST(FailedAuthLimiter, SourcesAreBoundedAndTheLeastRecentlyFailedIsForgotten) {
  FailedAuthLimiter l({.per_second = 1, .burst = 1, .sources = 3});
  const MonoTime t0{0ns};
  l.failed("10.0.0.1", t0);
  l.failed("10.0.0.2", t0);
  l.failed("10.0.0.3", t0);
  l.failed("10.0.0.1", t0);  // the most recent failure again
  l.failed("10.0.0.4", t0);  // forgets 10.0.0.2
  EXPECT_EQ(l.sources(), 3u);
  EXPECT_TRUE(l.refused("10.0.0.1", t0));
  EXPECT_FALSE(l.refused("10.0.0.2", t0));
  EXPECT_TRUE(l.refused("10.0.0.4", t0));
}

TEST(FailedAuthLimiter, ARateOfZeroIsNoLimit) {
  FailedAuthLimiter l({.per_second = 0, .burst = 1, .sources = 3});
  for (int i = 0; i < 100; ++i) l.failed("10.0.0.1", MonoTime{0ns});
  EXPECT_FALSE(l.refused("10.0.0.1", MonoTime{0ns}));
  EXPECT_EQ(l.sources(), 0u);
}
