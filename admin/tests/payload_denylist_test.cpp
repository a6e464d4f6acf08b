#include "baton/admin/payload_denylist.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

using namespace baton::admin;
namespace json = boost::json;

namespace {
std::optional<std::string> denied(const char* payload) {
  return find_denied(json::parse(payload), default_payload_denylist(), "parameters");
}
}  // namespace

TEST(PayloadDenylist, TheDefaultRefusesSecretsByNameAtAnyDepthAndByValue) {
  auto name = denied(R"({"db":{"Password":"x"}})");
  ASSERT_TRUE(name);
  EXPECT_NE(name->find("parameters.db.Password: the name contains \"password\""), std::string::npos) << *name;
  auto value = denied(R"({"key":["-----BEGIN PRIVATE KEY-----"]})");
  ASSERT_TRUE(value);
  EXPECT_NE(value->find("parameters.key[0]: the value contains"), std::string::npos) << *value;
  EXPECT_TRUE(denied(R"({"github_token":"x"})"));
  EXPECT_FALSE(denied(R"({"region":"eu","count":3})"));
}

TEST(PayloadDenylist, TheDefaultRefusesTheBareKeyTokenButNotWordsThatContainIt) {
  auto bare = denied(R"({"Token":"abc"})");
  ASSERT_TRUE(bare);
  EXPECT_NE(bare->find("parameters.Token: the name is \"token\""), std::string::npos) << *bare;
  EXPECT_TRUE(denied(R"({"nested":{"token":"abc"}})"));
  // An exact entry matches names only, and whole names only.
  EXPECT_FALSE(denied(R"({"tokens_used":12})"));
  EXPECT_FALSE(denied(R"({"step":"token"})"));
  EXPECT_FALSE(denied(R"({"analyzer":"tokenize"})"));
}

TEST(PayloadDenylist, AnOperatorsListMayMixSubstringsAndExactNames) {
  const std::vector<std::string> list{"region", "=id"};
  EXPECT_TRUE(find_denied(json::parse(R"({"subregion":1})"), list, "p"));
  EXPECT_TRUE(find_denied(json::parse(R"({"ID":1})"), list, "p"));
  EXPECT_FALSE(find_denied(json::parse(R"({"idle":1,"v":"id"})"), list, "p"));
  // "=" alone is no entry: it matches nothing.
  EXPECT_FALSE(find_denied(json::parse(R"({"":1,"=":2})"), std::vector<std::string>{"="}, "p"));
}
