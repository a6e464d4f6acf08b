// The node's connection caps count per source (an IPv4 address or an IPv6
// /64), as its per-source rate limits do: a host given a /64 cannot open
// max_connections_per_address from each of its addresses.
#include "connection_budget.h"

#include <gtest/gtest.h>

#include <vector>

namespace baton::leader::serving {
namespace {

TEST(ConnectionBudget, AnIpv6SlashSixtyFourIsOneSourceAndAMappedIpv4AddressIsItsAddress) {
  ServerLimits limits;
  limits.max_connections = 100;
  limits.max_connections_per_address = 3;
  auto budget = std::make_shared<ConnectionBudget>(limits);
  std::string why;
  std::vector<Slot> held;
  for (const char* a : {"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::9"}) {
    held.push_back(budget->take(a, why));
    ASSERT_TRUE(held.back()) << a << ": " << why;
  }
  EXPECT_FALSE(budget->take("2001:db8:1:2:abcd::1", why)) << "a fourth address of the same /64";
  EXPECT_EQ(why, "max_connections_per_address 3 from 2001:db8:1:2::/64");
  EXPECT_TRUE(budget->take("2001:db8:1:3::1", why)) << "another /64 is another source";

  for (int i = 0; i < 3; ++i) held.push_back(budget->take("192.0.2.7", why));
  EXPECT_FALSE(budget->take("::ffff:192.0.2.7", why)) << "the same IPv4 host, written as IPv6";
  EXPECT_TRUE(budget->take("192.0.2.8", why)) << "each IPv4 address is its own source";

  held.erase(held.begin());  // one of the /64's connections closes
  EXPECT_TRUE(budget->take("2001:db8:1:2::77", why)) << "its slot is given back to the source";
}

}  // namespace
}  // namespace baton::leader::serving
