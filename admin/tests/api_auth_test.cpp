// Who may call the admin API (api_auth.h), with a fake token table and a
// fake clock: what a request with a made-up token costs, and what a flood of
// them leaves of the cache.
#include "baton/admin/api_auth.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "baton/testing/fake_clock.h"

namespace baton::admin {
namespace {

using namespace std::chrono_literals;

struct FakeTokens {
  std::map<std::string, store::TokenGrant> by_hash;
  std::map<std::string, int> lookups;  ///< by hash
  int total = 0;
  Authenticator::Lookup lookup() {
    return [this](const std::string& hash) -> Result<std::optional<store::TokenGrant>> {
      ++total;
      ++lookups[hash];
      auto it = by_hash.find(hash);
      if (it == by_hash.end()) return std::optional<store::TokenGrant>{};
      return std::optional<store::TokenGrant>{it->second};
    };
  }
};

std::string shaped(int n) {
  char tail[17];
  std::snprintf(tail, sizeof tail, "%016x", n);
  return "baton_" + std::string(48, 'a') + tail;
}

class ApiAuth : public ::testing::Test {
 protected:
  ApiAuth() { tokens.by_hash[sha256_hex(reader)] = store::TokenGrant{1, "reader", "read"}; }
  std::optional<Principal> who(const std::string& token) {
    auto r = auth.authenticate("Bearer " + token);
    EXPECT_TRUE(r);
    return r ? *r : std::nullopt;
  }

  const std::string reader = shaped(1);
  FakeTokens tokens;
  testing::FakeClock clock;
  std::map<AuthFailure, int> failures;
  Authenticator auth{"config-admin-token", tokens.lookup(), clock, 5000ms, [this](AuthFailure f) { ++failures[f]; }};
};

TEST_F(ApiAuth, ATokenOfNoIssuedShapeCostsNoLookup) {
  for (const std::string& bad :
       std::vector<std::string>{"x", "baton_", "baton_" + std::string(64, 'A'), "baton_" + std::string(63, 'a'),
                                "baton_" + std::string(64, 'g'), std::string(70, 'a'), "config-admin-token2"})
    EXPECT_EQ(who(bad), std::nullopt) << bad;
  EXPECT_EQ(tokens.total, 0) << "a made-up token must not reach the database";
  EXPECT_EQ(failures[AuthFailure::malformed], 7);
  EXPECT_EQ(auth.authenticate("")->has_value(), false);
  EXPECT_EQ(auth.authenticate("Basic abc")->has_value(), false);
  EXPECT_EQ(failures[AuthFailure::missing], 2);
  EXPECT_TRUE(issued_token_shaped(new_api_token()));
}

// The scheme's name is case-insensitive (RFC 7235; security review L9):
// a client that sends "bearer" is answered as one that sends "Bearer".
TEST_F(ApiAuth, TheBearerSchemeIsNamedInAnyCase) {
  for (const char* scheme : {"Bearer ", "bearer ", "BEARER ", "bEaReR  "}) {
    auto admin = auth.authenticate(std::string(scheme) + "config-admin-token");
    ASSERT_TRUE(admin) << scheme;
    ASSERT_TRUE(admin->has_value()) << scheme;
    EXPECT_EQ((*admin)->role, Role::admin) << scheme;
  }
  EXPECT_EQ(bearer_credentials("Bearer x"), "x");
  EXPECT_EQ(bearer_credentials("Bearerx"), "");
  EXPECT_EQ(bearer_credentials("Bearer"), "");
  EXPECT_EQ(bearer_credentials("Basic abc"), "");
  EXPECT_EQ(bearer_credentials("Bearer2 abc"), "");
  EXPECT_EQ(failures[AuthFailure::missing], 0);
}

TEST_F(ApiAuth, TheConfiguredTokenAndAnIssuedOneAreRecognised) {
  auto admin = who("config-admin-token");
  ASSERT_TRUE(admin);
  EXPECT_EQ(admin->role, Role::admin);
  auto r = who(reader);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->name, "reader");
  EXPECT_EQ(r->role, Role::read);
  EXPECT_TRUE(who(reader));
  EXPECT_EQ(tokens.lookups[sha256_hex(reader)], 1) << "cached";
  clock.advance(5001ms);
  EXPECT_TRUE(who(reader));
  EXPECT_EQ(tokens.lookups[sha256_hex(reader)], 2) << "looked up again once the cache entry expired";
  EXPECT_EQ(who(shaped(2)), std::nullopt);
  EXPECT_EQ(who(shaped(2)), std::nullopt);
  EXPECT_EQ(tokens.lookups[sha256_hex(shaped(2))], 1) << "an unknown token is cached too";
  EXPECT_EQ(failures[AuthFailure::unknown], 2);
}

TEST_F(ApiAuth, AFloodOfUnknownTokensLeavesTheCallersInUseCached) {
  ASSERT_TRUE(who(reader));
  // 30,000 well-shaped made-up tokens (three times the cache), the reader
  // calling between them: its entry is used, so it is never the one evicted.
  for (int i = 0; i < 30000; ++i) {
    EXPECT_EQ(who(shaped(1000 + i)), std::nullopt);
    if (i % 1000 == 0) {
      ASSERT_TRUE(who(reader));
    }
  }
  EXPECT_EQ(tokens.lookups[sha256_hex(reader)], 1) << "the flood must not evict a token in use";
  EXPECT_EQ(failures[AuthFailure::unknown], 30000);
}

}  // namespace
}  // namespace baton::admin
