// Where a webhook may be sent (security review N-L2): judged on each
// resolved address, loopback and link-local refused unless allowed, the
// node's own port never, private ranges allowed (on premises, receivers
// live there).
#include "baton/notify/destination_policy.h"

#include <gtest/gtest.h>

namespace baton::notify {
namespace {

TEST(DestinationPolicy, LoopbackLinkLocalAndTheNodesOwnPortAreRefusedPrivateRangesAreNot) {
  const DestinationPolicy shipped{false, false, {"0.0.0.0:7001", "10.0.0.5:7001"}};
  for (const char* ok : {"10.1.2.3", "192.168.1.10", "172.16.0.9", "203.0.113.7", "fd00::1", "2001:db8::7"})
    EXPECT_EQ(destination_refusal(ok, 443, shipped), "") << ok;
  EXPECT_EQ(destination_refusal("127.0.0.1", 9, shipped),
            "127.0.0.1:9 is a loopback address (this host), refused unless webhooks.allow_loopback is true");
  for (const char* local : {"127.3.4.5", "::1", "0.0.0.0", "0.1.2.3", "::", "::ffff:127.0.0.1"})
    EXPECT_NE(destination_refusal(local, 443, shipped).find("is a loopback address"), std::string::npos) << local;
  EXPECT_EQ(destination_refusal("169.254.169.254", 443, shipped),
            "169.254.169.254:443 is a link-local address (where clouds answer instance metadata), refused unless "
            "webhooks.allow_link_local is true");
  EXPECT_NE(destination_refusal("fe80::1", 443, shipped).find("link-local"), std::string::npos);
  EXPECT_NE(destination_refusal("::ffff:169.254.1.1", 443, shipped).find("link-local"), std::string::npos)
      << "an IPv4 address written as IPv6 is judged as IPv4";
  for (const char* group : {"224.0.0.1", "255.255.255.255", "ff02::1"})
    EXPECT_NE(destination_refusal(group, 443, shipped).find("multicast or broadcast"), std::string::npos) << group;
  EXPECT_EQ(destination_refusal("not-an-address", 443, shipped), "'not-an-address' is not an IP address");

  // The node's own port: at its own address, and on this host when it
  // listens on every address; another port of the same host is a receiver.
  EXPECT_EQ(destination_refusal("10.0.0.5", 7001, shipped), "10.0.0.5:7001 is this node's own port");
  EXPECT_EQ(destination_refusal("10.0.0.5", 8443, shipped), "");
  EXPECT_EQ(destination_refusal("10.0.0.6", 7001, shipped), "") << "another host's port of the same number";

  // Allowed on purpose (a receiver on the node's host, a test): loopback
  // goes, the node's own port still does not.
  const DestinationPolicy local{true, true, {"127.0.0.1:7001"}};
  EXPECT_EQ(destination_refusal("127.0.0.1", 9443, local), "");
  EXPECT_EQ(destination_refusal("169.254.10.10", 443, local), "");
  EXPECT_EQ(destination_refusal("127.0.0.1", 7001, local), "127.0.0.1:7001 is this node's own port");
  EXPECT_EQ(destination_refusal("::1", 7001, local), "::1:7001 is this node's own port");
  const DestinationPolicy v6{true, false, {"[::]:7001"}};
  EXPECT_EQ(destination_refusal("::1", 7001, v6), "::1:7001 is this node's own port");
  EXPECT_EQ(destination_refusal("::1", 7002, v6), "");
}

}  // namespace
}  // namespace baton::notify
