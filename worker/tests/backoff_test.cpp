#include "baton/worker/backoff.h"

#include <gtest/gtest.h>

#include <random>

using namespace baton;
using namespace baton::worker;

TEST(ReconnectBackoff, DoublesUpToTheCapWithJitterInTheUpperHalf) {
  const Millis base{200}, max{5000};
  std::mt19937_64 rng(5);
  for (int failures = 1; failures <= 30; ++failures) {
    const Millis ceiling = std::min(Millis{200 * (std::int64_t{1} << std::min(failures - 1, 16))}, max);
    Millis lo{1 << 30}, hi{0};
    for (int i = 0; i < 2000; ++i) {
      Millis d = reconnect_delay(failures, base, max, rng());
      lo = std::min(lo, d);
      hi = std::max(hi, d);
      ASSERT_GE(d, ceiling / 2);
      ASSERT_LE(d, ceiling);
    }
    EXPECT_LT(lo, hi) << "jitter spreads the fleet";
  }
  EXPECT_EQ(reconnect_delay(1, base, max, 0), Millis{100});
  EXPECT_EQ(reconnect_delay(100, base, max, 0), Millis{2500});
}
