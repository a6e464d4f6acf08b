// Who may attach as which worker (worker_auth.h), with a fake credential
// table and a fake clock.
#include "baton/leader/worker_auth.h"

#include <gtest/gtest.h>

#include "baton/testing/fake_clock.h"
#include "baton/tls/token_digest.h"

namespace baton::leader {
namespace {

using namespace std::chrono_literals;

struct FakeCredentials {
  std::map<std::string, store::WorkerCredential> by_hash;
  int lookups = 0;
  bool down = false;
  WorkerAuthenticator::Lookup lookup() {
    return [this](const std::string& hash) -> Result<std::optional<store::WorkerCredential>> {
      ++lookups;
      if (down) return make_error(Errc::db_unavailable, "connection refused");
      auto it = by_hash.find(hash);
      if (it == by_hash.end()) return std::optional<store::WorkerCredential>{};
      return std::optional<store::WorkerCredential>{it->second};
    };
  }
};

const std::string w1_token = "baton_" + std::string(63, 'a') + "1";
const std::string w2_token = "baton_" + std::string(63, 'a') + "2";
const std::string w3_token = "baton_" + std::string(63, 'a') + "3";

protocol::Hello hello(const std::string& id, const std::string& token, int capacity = 1,
                      std::map<std::string, std::string> labels = {}) {
  protocol::Hello h;
  h.worker_id = id;
  h.token = token;
  h.capacity = capacity;
  h.labels = std::move(labels);
  return h;
}

class WorkerAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    table.by_hash[tls::sha256_hex(w1_token)] = store::WorkerCredential{11, "w1", {{"zone", "a"}, {"gpu", "1"}}, 4};
    table.by_hash[tls::sha256_hex(w2_token)] = store::WorkerCredential{12, "w2", {}, 1};
  }
  FakeCredentials table;
  testing::FakeClock clock;
};

TEST_F(WorkerAuthTest, ACredentialAttachesOnlyItsOwnIdWithinItsGrant) {
  WorkerAuthenticator auth("", table.lookup(), clock);
  auto ok = auth.admit(hello("w1", w1_token, 4, {{"zone", "a"}}));
  EXPECT_TRUE(ok.admitted) << ok.message;
  EXPECT_EQ(ok.credential_id, 11);
  EXPECT_TRUE(auth.admit(hello("w1", w1_token, 0)).admitted);  // fewer labels, less capacity: fine

  auto other = auth.admit(hello("w1", w2_token));
  EXPECT_FALSE(other.admitted);
  EXPECT_EQ(other.code, "forbidden");
  EXPECT_EQ(other.message, "this credential belongs to worker \"w2\", not \"w1\"");

  auto greedy = auth.admit(hello("w1", w1_token, 5));
  EXPECT_EQ(greedy.message, "capacity 5 is more than the 4 granted to worker \"w1\"");
  auto unknown_label = auth.admit(hello("w1", w1_token, 1, {{"region", "eu"}}));
  EXPECT_EQ(unknown_label.message, "label \"region\" is not granted to worker \"w1\"");
  auto other_value = auth.admit(hello("w1", w1_token, 1, {{"zone", "b"}}));
  EXPECT_EQ(other_value.message, "label \"zone\" is granted as \"a\", not \"b\"");
}

TEST_F(WorkerAuthTest, UnknownAndSharedTokens) {
  WorkerAuthenticator without_shared("", table.lookup(), clock);
  auto bad = without_shared.admit(hello("w1", "suite-worker-token-not-for-production"));
  EXPECT_FALSE(bad.admitted);
  EXPECT_EQ(bad.code, "unauthenticated");
  EXPECT_EQ(bad.message, "bad worker token");
  EXPECT_FALSE(without_shared.admit(hello("w1", "")).admitted);
  EXPECT_FALSE(without_shared.admit(hello("w1", std::string(500, 'x'))).admitted);
  // Tokens of another shape are refused without asking the database.
  const int asked = table.lookups;
  EXPECT_FALSE(without_shared.admit(hello("w1", "baton_" + std::string(64, 'g'))).admitted);
  EXPECT_FALSE(without_shared.admit(hello("w1", "baton_" + std::string(63, 'a'))).admitted);
  EXPECT_FALSE(without_shared.admit(hello("w1", "baton_" + std::string(64, 'A'))).admitted);
  EXPECT_EQ(table.lookups, asked);
  EXPECT_FALSE(without_shared.admit(hello("w1", "baton_" + std::string(64, 'b'))).admitted);
  EXPECT_EQ(table.lookups, asked + 1) << "a well-formed unknown token is looked up";

  // With a shared token, its holder may be anyone (the legacy mode), and
  // credentials work beside it.
  WorkerAuthenticator with_shared("suite-worker-token-not-for-production", table.lookup(), clock);
  auto any = with_shared.admit(hello("whoever", "suite-worker-token-not-for-production", 99, {{"gpu", "8"}}));
  EXPECT_TRUE(any.admitted);
  EXPECT_EQ(any.credential_id, 0);
  EXPECT_TRUE(with_shared.admit(hello("w2", w2_token)).admitted);
}

TEST_F(WorkerAuthTest, LookupsAreCachedForgottenOnRevocationAndADownDatabaseRefuses) {
  WorkerAuthenticator auth("", table.lookup(), clock, 5000ms);
  EXPECT_TRUE(auth.admit(hello("w1", w1_token)).admitted);
  EXPECT_TRUE(auth.admit(hello("w1", w1_token)).admitted);
  EXPECT_EQ(table.lookups, 1);
  // Revoked in the database: the cache still says yes until forgotten...
  table.by_hash.erase(tls::sha256_hex(w1_token));
  EXPECT_TRUE(auth.admit(hello("w1", w1_token)).admitted);
  auth.forget({11});
  EXPECT_FALSE(auth.admit(hello("w1", w1_token)).admitted);
  EXPECT_EQ(table.lookups, 2);
  // ... or until the cache time passes.
  table.by_hash[tls::sha256_hex(w2_token)].capacity = 1;
  EXPECT_TRUE(auth.admit(hello("w2", w2_token)).admitted);
  table.by_hash.erase(tls::sha256_hex(w2_token));
  clock.advance(5001ms);
  EXPECT_FALSE(auth.admit(hello("w2", w2_token)).admitted);

  table.down = true;
  auto down = auth.admit(hello("w3", w3_token));
  EXPECT_FALSE(down.admitted);
  EXPECT_EQ(down.code, "unavailable");
  EXPECT_NE(down.message.find("connection refused"), std::string::npos);
}

}  // namespace
}  // namespace baton::leader
