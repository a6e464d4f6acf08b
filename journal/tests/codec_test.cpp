// The journal's JSON of what a book reads: every member survives the round
// trip (codec.cpp checks at compile time that every member is described),
// and a hello's token is never written.
#include "codec.h"

#include <gtest/gtest.h>

namespace baton::journal {
namespace {
namespace json = boost::json;

template <class T>
std::string round_trip(const T& x) {
  const auto once = json::serialize(json::value_from(x));
  const auto twice = json::serialize(json::value_from(json::value_to<T>(json::parse(once))));
  EXPECT_EQ(once, twice);
  return once;
}

TEST(JournalCodec, ADueRunWithEveryMemberSetComesBackTheSame) {
  store::DueRun d;
  d.id = RunId{7};
  d.version = Version{3};
  d.state = RunState::orphaned;
  d.attempt = 2;
  d.selector = {{"zone", "a"}};
  d.instance_limit = 2;
  d.keyed.concurrency_key = "customer-1";
  d.keyed.key_slots_held = {1, 3};
  d.parameters = {{"region", "eu"}};
  d.starts_in_ms = 250;
  d.previous = {"lost_contact", 1, "w1"};
  const auto text = round_trip(d);
  EXPECT_NE(text.find(R"("state":"orphaned")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("fate":"lost_contact")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("concurrency_key":"customer-1")"), std::string::npos) << text;
}

TEST(JournalCodec, MapsByRunIdAndErrorsComeBackTheSame) {
  store::BatchWriteResult b;
  b.current_epoch = Epoch{4};
  b.applied[12] = store::WriteResult{store::WriteOutcome::applied, Epoch{4}, Version{9}, "tok", 2};
  const auto text = round_trip(b);
  EXPECT_NE(text.find(R"("applied":[[12,)"), std::string::npos) << text;
  store::HeartbeatBatchResult h;
  h.applied[5] = Version{6};
  round_trip(h);
  round_trip(Error{Errc::outcome_unknown, "commit reply lost"});
  leader_core::RuntimeConfig cfg;
  cfg.payload_denylist = {"password"};
  cfg.assign_ahead = Millis{0};
  EXPECT_NE(round_trip(cfg).find(R"("assign_ahead":0)"), std::string::npos);
}

TEST(JournalCodec, AHellosTokenIsLeftOutAndEverythingElseKept) {
  protocol::Hello h;
  h.worker_id = "w1";
  h.token = "secret-token-value";
  h.capacity = 4;
  h.labels = {{"zone", "b"}};
  h.instance = "i-1";
  h.protocol_min = 1;
  h.protocol_max = protocol::protocol_version_max;
  const auto text = message_text(protocol::Message{h});
  EXPECT_EQ(text.find("secret-token-value"), std::string::npos) << text;
  auto back = message_of(text);
  ASSERT_TRUE(back);
  h.token.clear();
  EXPECT_EQ(std::get<protocol::Hello>(*back), h);
  EXPECT_FALSE(message_of("{not a frame"));
}

}  // namespace
}  // namespace baton::journal
