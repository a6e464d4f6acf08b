// The journal's encoding of what a book is told: every field survives the
// round trip (fields.h walks them all; nothing is listed by hand), texts come
// back byte for byte whatever they hold, and a hello's token is never
// written.
#include <gtest/gtest.h>

#include "baton/journal/book_recorder.h"
#include "codec.h"
#include "fields.h"

namespace baton::journal {
namespace {
namespace json = boost::json;

template <class T>
std::string round_trip(const T& x) {
  std::string once;
  fields::write(once, x);
  json::parse_options bytes;
  bytes.allow_invalid_utf8 = true;
  T back{};
  fields::read(json::parse(once, {}, bytes), back);
  std::string twice;
  fields::write(twice, back);
  EXPECT_EQ(once, twice);
  return once;
}

TEST(JournalFields, ADueRunWithEveryFieldSetComesBackTheSame) {
  store::DueRun d;
  d.id = RunId{7};
  d.version = Version{3};
  d.state = RunState::orphaned;
  d.attempt = 2;
  d.job_name = "nightly";
  d.selector = {{"zone", "a"}};
  d.instance_limit = 2;
  d.keyed.concurrency_key = "customer-1";
  d.keyed.key_slots_held = {1, 3};
  d.parameters = {{"region", "eu"}};
  d.starts_in_ms = 250;
  d.previous = {"lost_contact", 1, "w1"};
  const auto text = round_trip(d);
  EXPECT_NE(text.find("\"customer-1\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"lost_contact\""), std::string::npos) << text;
  EXPECT_EQ(text.rfind("[7,3,", 0), 0u) << "an id is its number: " << text;
  store::DueRun back;
  fields::read(json::parse(text), back);
  EXPECT_EQ(back.previous, d.previous);
  EXPECT_EQ(back.keyed.key_slots_held, d.keyed.key_slots_held);
  EXPECT_EQ(back.parameters, d.parameters);
}

TEST(JournalFields, MapsByRunIdOptionalsVariantsAndErrorsComeBackTheSame) {
  store::BatchWriteResult b;
  b.current_epoch = Epoch{4};
  b.applied[12] = store::WriteResult{store::WriteOutcome::applied, Epoch{4}, Version{9}, "tok", 2};
  round_trip(b);
  store::HeartbeatBatchResult h;
  h.applied[5] = Version{6};
  round_trip(h);
  round_trip(Error{Errc::outcome_unknown, "commit reply lost"});
  round_trip(std::optional<store::RunRow>{});
  round_trip(std::optional<store::RunRow>{store::RunRow{}});
  protocol::Heartbeat hb;
  hb.running = {protocol::AttemptRef{3, 1, "lease"}};
  const auto text = round_trip(protocol::Message{hb});
  protocol::Message back;
  fields::read(json::parse(text), back);
  EXPECT_EQ(std::get<protocol::Heartbeat>(back), hb);
}

TEST(JournalFields, TextsComeBackByteForByteQuotesControlsAndAllAndAWrongRowIsRefused) {
  const std::string odd = std::string("say \"hi\"\\\n\t\x01 caf\xc3\xa9 and a broken \xff byte");
  std::string out;
  fields::write_string(out, odd);
  EXPECT_EQ(out.find('\n'), std::string::npos) << "one line: " << out;
  EXPECT_EQ(round_trip(odd), out);
  store::RunRow row;
  EXPECT_THROW(fields::read(json::parse("[1,2]"), row), std::exception);
  protocol::Message m;
  EXPECT_THROW(fields::read(json::parse("[999,[]]"), m), std::exception);
}

struct Lines final : LineSink {
  std::vector<std::string> all;
  void line(std::string text) override { all.push_back(std::move(text)); }
};

TEST(JournalFields, AHellosTokenIsNeverWrittenAndTheRestIs) {
  Lines sink;
  BookRecorder rec(
      BookHeader{Epoch{3}, "n1", {}, 42, MonoTime{}}, [] { return std::int64_t{1000}; }, sink);
  protocol::Hello h;
  h.worker_id = "w1";
  h.token = "secret-token-value";
  h.capacity = 4;
  h.instance = "i-1";
  rec.attached(9, h, MonoTime{std::chrono::seconds{2}});
  ASSERT_EQ(sink.all.size(), 2u);
  EXPECT_EQ(sink.all[0].rfind(R"({"k":"book","w":1000,"epoch":3,"node":"n1","seed":42,"started":0,"cfg":{)", 0), 0u)
      << sink.all[0];
  EXPECT_EQ(sink.all[1].find("secret-token-value"), std::string::npos) << sink.all[1];
  EXPECT_EQ(sink.all[1].rfind(R"({"k":"attached","w":1000,"now":2000000000,"link":9,"hello":[)", 0), 0u) << sink.all[1];
  protocol::Hello back;
  fields::read(json::parse(json::parse(sink.all[1]).at("hello").as_array().size() ? sink.all[1] : "{}").at("hello"),
               back);
  h.token.clear();
  EXPECT_EQ(back, h);
}

}  // namespace
}  // namespace baton::journal
