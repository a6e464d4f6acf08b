// Where ctl sends its token after a follower's redirect (security review
// N-L5, as the Python client does): the same scheme only; with TLS
// verified by the system's roots, which any public certificate satisfies,
// only to the address given; with the cluster's own CA, to any node it
// verifies.
#include <gtest/gtest.h>

#include "baton/ctl/api_client.h"

using baton::ctl::redirect_refusal;
using baton::tls::ClientFiles;

TEST(CtlRedirect, TheTokenFollowsARedirectOnlyWhereItMayGo) {
  const ClientFiles cluster_ca{"/etc/baton/tls/ca.crt", "", ""};
  const ClientFiles system_roots{"", "", ""};
  EXPECT_EQ(redirect_refusal("n1:7001", "https://n2:7001/api/v1/runs", cluster_ca), "");
  EXPECT_EQ(redirect_refusal("n1:7001", "https://n1:7001/api/v1/runs", system_roots), "") << "the address given";
  EXPECT_EQ(redirect_refusal("n1:7001", "https://evil.example.com/api/v1/runs", system_roots),
            "not following the redirect to 'https://evil.example.com/api/v1/runs' with the token: verified by the "
            "system's roots (no ca_file), the token goes only to the address given (n1:7001); give the cluster's CA "
            "(--ca, ca_file) or the leader's address");
  EXPECT_EQ(redirect_refusal("n1:7001", "http://n2:7001/api/v1/runs", cluster_ca),
            "not following the redirect to 'http://n2:7001/api/v1/runs': only https:// addresses are followed");
  // Plaintext (insecure: true, said on every call): another node of it.
  EXPECT_EQ(redirect_refusal("127.0.0.1:7001", "http://127.0.0.1:7002/api/v1/runs", std::nullopt), "");
  EXPECT_NE(redirect_refusal("127.0.0.1:7001", "https://127.0.0.1:7002/", std::nullopt), "");
  // Several addresses given (BATON_ADDR): each of them was.
  EXPECT_EQ(redirect_refusal("n1:7001, n2:7001", "https://n2:7001/api/v1/runs", system_roots), "");
  EXPECT_NE(redirect_refusal("n1:7001, n2:7001", "https://n3:7001/api/v1/runs", system_roots), "");
}

TEST(AddressList, ACommaListTrimmed) {
  using baton::ctl::address_list;
  EXPECT_EQ(address_list("a:1"), (std::vector<std::string>{"a:1"}));
  EXPECT_EQ(address_list(" a:1, b:2 ,,c:3 "), (std::vector<std::string>{"a:1", "b:2", "c:3"}));
  EXPECT_TRUE(address_list(" , ").empty());
}
