#include "baton/protocol/codec.h"

#include <gtest/gtest.h>

#include <random>

using namespace baton::protocol;

namespace {

AttemptRef ref() { return {42, 2, "2b1c3f9e-0000-4000-8000-000000000001"}; }

Hello prefetching_hello() {
  Hello h;
  h.worker_id = "w2";
  h.token = "secret";
  h.capacity = 8;
  h.prefetch = 8;
  return h;
}

std::vector<Message> samples() {
  Task program{TaskKind::program,
               "p",
               {"/bin/echo", "hi"},
               {{"A", "1"}},
               "/tmp",
               "",
               "",
               Builtin::noop,
               "",
               true,
               TaskOnError::stop,
               TaskResources{64 << 20, 10, 250}};
  Task sql{TaskKind::sql, "q", {}, {}, "", "local", "SELECT 1", Builtin::noop, "", false, TaskOnError::continue_, {}};
  Task builtin{TaskKind::builtin, "", {}, {}, "", "", "", Builtin::sleep, "2s", false, TaskOnError::stop, {}};
  Finish fin{ref(), Outcome::failed, 3, "exit 3", "out", "err", 1234, {{"p", 3, 1200, false}}};
  Finish streamed = fin;
  streamed.stdout_bytes = 3;
  streamed.stderr_bytes = 0;
  return {Hello{"w1",
                "secret",
                8,
                {{"zone", "a"}},
                {ref()},
                {AttemptRef{44, 2, "f"}},
                "127.0.0.1:7001",
                "9f2c4e1a00b3d5e7",
                "0011223344556677"},
          Welcome{"n1", 7, 500, 3000, 20000, 5000, {ref()}},
          Redirect{"127.0.0.1:7002", 7},
          Error{"unauthenticated", "bad token"},
          Assign{ref(), {program, sql, builtin}, 60000, 45000, {{"region", "eu"}, {"count", "3"}}},
          Start{ref()},
          StartGranted{ref()},
          StartDenied{ref(), "lease token is stale"},
          Heartbeat{{ref(), AttemptRef{43, 1, "x"}}, {AttemptRef{44, 2, "f"}}, {AttemptRef{45, 1, "a"}}},
          fin,
          FinishAck{ref()},
          Cancel{ref(), "operator"},
          Drain{},
          streamed,
          Output{ref(), "stderr", 1 << 20, "line \u00e9\n"},
          prefetching_hello()};
}

std::string decode_error(std::string_view frame) {
  auto r = decode(frame);
  if (std::holds_alternative<Message>(r)) return "decoded";
  return std::get<DecodeError>(r).code + ": " + std::get<DecodeError>(r).message;
}

}  // namespace

TEST(Codec, EveryMessageRoundTrips) {
  for (const Message& m : samples()) {
    std::string frame = encode(m);
    auto back = decode(frame);
    ASSERT_TRUE(std::holds_alternative<Message>(back)) << frame << " -> " << std::get<DecodeError>(back).message;
    EXPECT_EQ(std::get<Message>(back), m) << frame;
  }
}

TEST(Codec, BadFramesAreNamedErrors) {
  struct Case {
    std::string frame;
    std::string expected;
  };
  for (const auto& c : std::vector<Case>{
           {"", "bad_frame: invalid JSON"},
           {"{", "bad_frame: invalid JSON"},
           {"[1,2]", "must be a JSON object"},
           {R"({"type":"hello"})", "frame.version: is required"},
           {R"({"type":"hello","version":8})",
            "bad_version: protocol version 8 is not supported (this binary speaks 1 to 7)"},
           {R"({"type":"hello","version":2,"worker_id":"w","token":"t","capacity":1})", "hello.protocol: is required"},
           {R"({"type":"hello","version":1,"worker_id":"w","token":"t","capacity":1,"protocol":{"min":2,"max":1}})",
            "hello.protocol.min: must not be more than max"},
           {R"({"version":1})", "frame.type: is required"},
           {R"({"type":"nope","version":1})", "unknown message type 'nope'"},
           {R"({"type":"hello","version":1,"worker_id":"w","token":"t"})", "hello.capacity: is required"},
           {R"({"type":"hello","version":1,"worker_id":"w\n2","token":"t","capacity":1})",
            "hello.worker_id: may hold only letters, digits, '-', '_' and '.'"},
           {R"({"type":"hello","version":1,"worker_id":"w 2","token":"t","capacity":1})",
            "hello.worker_id: may hold only letters"},
           {R"({"type":"hello","version":1,"worker_id":"w","token":"t","capacity":"8"})",
            "hello.capacity: must be an integer"},
           {R"({"type":"hello","version":1,"worker_id":"w","token":"t","capacity":-1})", "must be between 0"},
           {R"({"type":"hello","version":1,"worker_id":"w","token":"t","capacity":2,"prefetch":3})",
            "hello.prefetch: must not be more than capacity"},
           {R"({"type":"hello","version":1,"worker_id":"w","token":"t","capacity":2,"prefetch":-1})",
            "hello.prefetch: must be between 0"},
           {R"({"type":"start","version":1,"run_id":0,"attempt":1,"lease_token":"x"})",
            "start.run_id: must be between"},
           {R"({"type":"start","version":1,"run_id":1,"attempt":1})", "start.lease_token: is required"},
           {R"({"type":"finish","version":1,"run_id":1,"attempt":1,"lease_token":"x","outcome":"WON"})",
            "finish.outcome: must be"},
           {R"({"type":"assign","version":1,"run_id":1,"attempt":1,"lease_token":"x","tasks":[]})",
            "assign.tasks: must hold at least one task"},
           {R"({"type":"assign","version":1,"run_id":1,"attempt":1,"lease_token":"x","tasks":[{"kind":"SHELL"}]})",
            "assign.tasks[0].kind: must be PROGRAM, SQL or BUILTIN"},
           {R"({"type":"heartbeat","version":1,"running":[{"run_id":1}]})", "heartbeat.running[0].attempt"},
           {R"({"type":"heartbeat","version":1,"running":{}})", "heartbeat.running: must be an array"},
           {R"({"type":"output","version":1,"run_id":1,"attempt":1,"lease_token":"x","stream":"stdin",)"
            R"("offset":0,"data":""})",
            "output.stream: must be stdout or stderr, got 'stdin'"},
           {R"({"type":"output","version":1,"run_id":1,"attempt":1,"lease_token":"x","stream":"stdout",)"
            R"("offset":-1,"data":""})",
            "output.offset: must be between 0"},
           {R"({"type":"output","version":1,"run_id":1,"attempt":1,"lease_token":"x","stream":"stdout",)"
            R"("offset":0,"data":")" +
                std::string(output_chunk_bytes_max + 1, 'x') + "\"}",
            "output.data: is longer than 16384 bytes"},
           {std::string(2 << 20, ' '), "too_large"},
           {std::string(100, '[') + std::string(100, ']'), "bad_frame"},
       }) {
    EXPECT_NE(decode_error(c.frame).find(c.expected), std::string::npos)
        << c.frame.substr(0, 80) << " -> " << decode_error(c.frame);
  }
}

TEST(Codec, RandomBytesAndMutatedFramesNeverCrash) {
  std::mt19937 rng(1234);
  int decoded = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string frame;
    if (i % 2 == 0) {
      frame.resize(rng() % 200);
      for (char& ch : frame) ch = static_cast<char>(rng());
    } else if (i % 4 == 1) {
      auto all = samples();
      frame = encode(all[rng() % all.size()]);
      for (int k = 0; k < 3; ++k) frame[rng() % frame.size()] = static_cast<char>(rng() % 128);
    } else {
      auto all = samples();
      std::deque<std::string> q{encode(all[rng() % all.size()], 3), encode(all[rng() % all.size()], 3)};
      frame = next_frame(q, 3);
      for (int k = 0; k < 3; ++k) frame[rng() % frame.size()] = static_cast<char>(rng() % 128);
    }
    decoded += std::holds_alternative<Message>(decode(frame));
    decoded += std::holds_alternative<std::vector<Message>>(decode_frame(frame));
  }
  SUCCEED() << decoded << " mutated frames still decoded";
}

// A finish carrying whatever bytes a task printed still encodes into a frame
// that decodes (it used to make every replay fail: a poison record).
TEST(Codec, FinishWithInvalidUtf8TailsRoundTripsAsValidText) {
  Finish f;
  f.ref = {7, 1, "tok"};
  f.outcome = Outcome::succeeded;
  f.stdout_tail = "binary:\xff\xfe";
  f.stderr_tail = std::string(20000, '\xe9');
  f.error = "bad \xc3";
  auto decoded = decode(encode(f));
  ASSERT_TRUE(std::holds_alternative<Message>(decoded)) << std::get<DecodeError>(decoded).message;
  const auto& back = std::get<Finish>(std::get<Message>(decoded));
  EXPECT_EQ(back.stdout_tail, "binary:\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_LE(back.stderr_tail.size(), output_tail_bytes_max);
  EXPECT_EQ(back.error, "bad \xEF\xBF\xBD");
}

// Two protocol versions side by side (docs/protocol.md, "Versions").
TEST(Codec, VersionsAreNegotiatedAndAVersionOnePeerSeesNothingNew) {
  // The ranges meet at the highest version both speak, or not at all.
  EXPECT_EQ(negotiate_version(1, 2, 1, 1), 1);
  EXPECT_EQ(negotiate_version(1, 2, 1, 2), 2);
  EXPECT_EQ(negotiate_version(1, 1, 1, 2), 1);
  EXPECT_EQ(negotiate_version(1, 2, 2, 5), 2);
  EXPECT_FALSE(negotiate_version(2, 2, 1, 1));
  EXPECT_FALSE(negotiate_version(1, 2, 3, 3));

  // A version-1 worker's hello (no range) speaks version 1 only.
  auto old_hello = decode(R"({"type":"hello","version":1,"worker_id":"w","token":"t","capacity":1,"labels":{},)"
                          R"("running":[]})");
  ASSERT_TRUE(std::holds_alternative<Message>(old_hello));
  const auto& h = std::get<Hello>(std::get<Message>(old_hello));
  EXPECT_EQ(h.protocol_min, 1);
  EXPECT_EQ(h.protocol_max, 1);

  // Version-1 frames carry nothing version 1 did not have: a welcome has no
  // `protocol` (the worker then speaks 1) and an error no retry_after_ms.
  Welcome w{"n1", 7, 500, 3000, 20000, 5000, {}};
  w.protocol = 2;
  EXPECT_EQ(encode(w, 1),
            R"({"type":"welcome","version":1,"node_id":"n1","epoch":7,"heartbeat_interval_ms":500,)"
            R"("heartbeat_timeout_ms":3000,"continuation_timeout_ms":20000,"continuation_margin_ms":5000})");
  auto old_welcome = std::get<Message>(decode(encode(w, 1)));
  EXPECT_EQ(std::get<Welcome>(old_welcome).protocol, 1);
  auto new_welcome = std::get<Message>(decode(encode(w, 2)));
  EXPECT_EQ(std::get<Welcome>(new_welcome).protocol, 2);
  const Error refusal{"forbidden", "no", 30000};
  EXPECT_EQ(encode(refusal, 1), R"({"type":"error","version":1,"code":"forbidden","message":"no"})");
  EXPECT_EQ(std::get<Error>(std::get<Message>(decode(encode(refusal, 2)))).retry_after_ms, 30000);
  // The same message in either version is the same message.
  const Message start = Start{ref()};
  EXPECT_EQ(std::get<Message>(decode(encode(start, 1))), start);
  EXPECT_EQ(std::get<Message>(decode(encode(start, 2))), start);
}

// Version 4: an assign may carry the start grant. It round-trips at 4, an
// older peer never sees it (its decoder would refuse the frame), and a frame
// of an older version that carries it is refused by name.
TEST(Codec, AnAssignCarriesTheStartFromVersionFour) {
  Assign a{ref(), {Task{}}, 0, 45000, {}, true};
  const std::string v4 = encode(a, 4);
  EXPECT_NE(v4.find(R"("start_granted":true)"), std::string::npos) << v4;
  EXPECT_EQ(std::get<Message>(decode(v4)), Message{a});
  const std::string v3 = encode(a, 3);
  EXPECT_EQ(v3.find("start_granted"), std::string::npos) << v3;
  EXPECT_FALSE(std::get<Assign>(std::get<Message>(decode(v3))).start_granted);
  std::string forged = v4;
  forged.replace(forged.find(R"("version":4)"), 11, R"("version":3)");
  EXPECT_EQ(decode_error(forged), "bad_frame: assign.start_granted: needs protocol version 4 or later, got 3");
  std::string not_bool = v4;
  not_bool.replace(not_bool.find("true"), 4, "1");
  EXPECT_EQ(decode_error(not_bool), "bad_frame: assign.start_granted: must be true or false");
}

// Version 5: a heartbeat carries what running tasks last reported of their
// progress. It round-trips at 5, an older peer never sees it, a frame of an
// older version that carries it is refused by name, and a text longer than
// the bound is refused.
TEST(Codec, AHeartbeatCarriesProgressFromVersionFive) {
  Heartbeat h;
  h.running = {ref()};
  h.progress = {Progress{ref(), "42% (420/1000 rows)"}};
  const std::string v5 = encode(h, 5);
  EXPECT_NE(v5.find(R"x("text":"42% (420/1000 rows)")x"), std::string::npos) << v5;
  EXPECT_EQ(std::get<Message>(decode(v5)), Message{h});
  const std::string v4 = encode(h, 4);
  EXPECT_EQ(v4.find("progress"), std::string::npos) << v4;
  EXPECT_TRUE(std::get<Heartbeat>(std::get<Message>(decode(v4))).progress.empty());
  std::string forged = v5;
  forged.replace(forged.find(R"("version":5)"), 11, R"("version":4)");
  EXPECT_EQ(decode_error(forged), "bad_frame: heartbeat.progress: needs protocol version 5 or later, got 4");
  std::string too_long = v5;
  too_long.replace(too_long.find("42% (420/1000 rows)"), 19, std::string(300, 'x'));
  EXPECT_NE(decode_error(too_long).find("heartbeat.progress[0].text"), std::string::npos) << decode_error(too_long);
}

// Version 6: a task carries its own timeout, parameters and role; they
// round-trip, a task without them encodes as before, and a role on a task
// that is not SQL is refused by name.
TEST(Codec, ATaskCarriesItsOwnKnobs) {
  Task sql{TaskKind::sql, "q", {}, {}, "", "local", "SELECT 1", Builtin::noop, "", false, TaskOnError::continue_, {}};
  sql.timeout_ms = 1500;
  sql.parameters = {{"table", "invoices"}};
  sql.run_as = "reporting";
  EXPECT_TRUE(sql.needs_knobs());
  Assign a{ref(), {sql}, 0, 0, {}};
  const std::string frame = encode(a, 6);
  EXPECT_NE(frame.find(R"("timeout_ms":1500)"), std::string::npos) << frame;
  EXPECT_NE(frame.find(R"("run_as":"reporting")"), std::string::npos) << frame;
  EXPECT_EQ(std::get<Message>(decode(frame)), Message{a});
  Task plain{TaskKind::builtin, "", {}, {}, "", "", "", Builtin::noop, "", false, TaskOnError::stop, {}};
  EXPECT_FALSE(plain.needs_knobs());
  EXPECT_EQ(encode_tasks({plain}), R"([{"kind":"BUILTIN","builtin":"NOOP"}])");
  auto bad = decode_tasks(R"([{"kind":"BUILTIN","builtin":"NOOP","run_as":"x"}])");
  ASSERT_TRUE(std::holds_alternative<DecodeError>(bad));
  EXPECT_EQ(std::get<DecodeError>(bad).message, "tasks[0].run_as: applies to a SQL task only");
}

// Version 7: an assignment names what became of the run's previous
// attempt; it round-trips, never goes to an older peer, is refused in an
// older frame and with a fate the reader does not know.
TEST(Codec, AnAssignmentCarriesWhatBecameOfThePreviousAttempt) {
  Task noop{TaskKind::builtin, "", {}, {}, "", "", "", Builtin::noop, "", false, TaskOnError::stop, {}};
  Assign a{ref(), {noop}, 0, 0, {}};
  a.previous = {"lost_contact", 1, "w1"};
  const std::string frame = encode(a, 7);
  EXPECT_NE(frame.find(R"("previous":{"fate":"lost_contact","attempt":1,"worker":"w1"})"), std::string::npos) << frame;
  EXPECT_EQ(std::get<Message>(decode(frame)), Message{a});
  EXPECT_EQ(encode(a, 6).find("previous"), std::string::npos) << "never to an older peer";
  Assign first{ref(), {noop}, 0, 0, {}};
  EXPECT_EQ(encode(first, 7).find("previous"), std::string::npos) << "a first attempt has none";
  std::string forged = frame;
  forged.replace(forged.find(R"("version":7)"), 11, R"("version":6)");
  EXPECT_EQ(decode_error(forged), "bad_frame: assign.previous: needs protocol version 7 or later, got 6");
  std::string unknown = frame;
  unknown.replace(unknown.find("lost_contact"), 12, "vanished");
  EXPECT_NE(decode_error(unknown).find("assign.previous.fate: must be one of"), std::string::npos)
      << decode_error(unknown);
}

// Version 3: frames queued together leave as one batch frame and are read
// back as the same messages in the same order.
TEST(Codec, FramesQueuedTogetherLeaveAsOneBatchAndComeBackInOrder) {
  std::vector<Message> sent;
  std::deque<std::string> queue;
  for (const Message& m : samples()) {
    if (std::holds_alternative<Hello>(m)) continue;  // never batched: always a connection's first frame
    sent.push_back(m);
    queue.push_back(encode(m, 3));
  }
  const std::string frame = next_frame(queue, 3);
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(frame.rfind(R"({"type":"batch","version":3,"messages":[)", 0), 0u) << frame.substr(0, 80);
  auto back = decode_frame(frame);
  ASSERT_TRUE(std::holds_alternative<std::vector<Message>>(back)) << std::get<DecodeError>(back).message;
  EXPECT_EQ(std::get<std::vector<Message>>(back), sent);

  // One message alone, and any frame of versions 1 and 2, leaves as it is.
  for (int version : {1, 2, 3}) {
    std::deque<std::string> q{encode(Start{ref()}, version), encode(FinishAck{ref()}, version)};
    const std::string first = next_frame(q, version);
    if (version < 3) {
      EXPECT_EQ(first, encode(Start{ref()}, version));
      EXPECT_EQ(next_frame(q, version), encode(FinishAck{ref()}, version));
      EXPECT_EQ(std::get<std::vector<Message>>(decode_frame(first)), std::vector<Message>{Start{ref()}});
    } else {
      EXPECT_EQ(std::get<std::vector<Message>>(decode_frame(first)),
                (std::vector<Message>{Start{ref()}, FinishAck{ref()}}));
    }
    EXPECT_TRUE(q.empty());
  }
  std::deque<std::string> alone{encode(Start{ref()}, 3)};
  EXPECT_EQ(next_frame(alone, 3), encode(Start{ref()}, 3));
}

TEST(Codec, ABatchStaysWithinItsByteAndMessageLimits) {
  // Many small frames: batches of at most batch_messages_max messages.
  std::deque<std::string> small;
  for (std::size_t i = 0; i < batch_messages_max + 10; ++i) small.push_back(encode(FinishAck{ref()}, 3));
  auto first = std::get<std::vector<Message>>(decode_frame(next_frame(small, 3)));
  EXPECT_EQ(first.size(), batch_messages_max);
  EXPECT_EQ(small.size(), 10u);

  // Large frames: batches of at most batch_bytes_max bytes, and a frame
  // larger than that alone, as it is.
  const Output big{ref(), "stdout", 0, std::string(output_chunk_bytes_max, 'x')};
  std::deque<std::string> large;
  for (int i = 0; i < 40; ++i) large.push_back(encode(big, 3));
  std::size_t frames = 0, messages = 0;
  while (!large.empty()) {
    const std::string f = next_frame(large, 3);
    EXPECT_LE(f.size(), batch_bytes_max + 64);
    messages += std::get<std::vector<Message>>(decode_frame(f)).size();
    frames++;
  }
  EXPECT_EQ(messages, 40u);
  EXPECT_GE(frames, 3u);
  std::deque<std::string> huge{std::string(batch_bytes_max + 1, ' '), encode(Start{ref()}, 3)};
  EXPECT_EQ(next_frame(huge, 3).size(), batch_bytes_max + 1);
  EXPECT_EQ(huge.size(), 1u);
}

TEST(Codec, BadBatchesAreNamedErrors) {
  const std::string start = encode(Start{ref()}, 3);
  auto error_of = [](const std::string& frame) {
    auto r = decode_frame(frame);
    if (!std::holds_alternative<DecodeError>(r)) return std::string("decoded");
    return std::get<DecodeError>(r).code + ": " + std::get<DecodeError>(r).message;
  };
  std::string many = R"({"type":"batch","version":3,"messages":[)";
  for (std::size_t i = 0; i <= batch_messages_max; ++i) many += (i ? "," : "") + start;
  many += "]}";
  struct Case {
    std::string frame;
    std::string expected;
  };
  for (const auto& c : std::vector<Case>{
           {R"({"type":"batch","version":2,"messages":[)" + start + "]}",
            "bad_frame: batch.version: a batch needs protocol version 3 or later, got 2"},
           {R"({"type":"batch","version":8,"messages":[]})", "bad_version: protocol version 8 is not supported"},
           {R"({"type":"batch","version":3})", "bad_frame: batch.messages: is required"},
           {R"({"type":"batch","version":3,"messages":[]})", "bad_frame: batch.messages: must not be empty"},
           {R"({"type":"batch","version":3,"messages":{}})", "bad_frame: batch.messages: must be an array"},
           {many, "batch.messages: has more than 1024 entries"},
           {R"({"type":"batch","version":3,"messages":[)" + start + ",7]}",
            "bad_frame: batch.messages[1]: must be an object"},
           {R"({"type":"batch","version":3,"messages":[)" + start +
                R"(,{"type":"start","version":3,"run_id":0,"attempt":1,"lease_token":"x"}]})",
            "bad_frame: batch.messages[1]: start.run_id: must be between"},
           {R"({"type":"batch","version":3,"messages":[{"type":"batch","version":3,"messages":[)" + start + "]}]}",
            "bad_frame: batch.messages[0]: unknown message type 'batch'"},
           {R"({"type":"batch","version":3,"messages":[)" + encode(prefetching_hello(), 1) + "]}",
            "bad_frame: batch.messages[0]: a hello is never batched"},
           {R"({"type":"batch","version":3,"messages":[{"type":"start","version":9}]})",
            "bad_version: batch.messages[0]: protocol version 9 is not supported"},
       }) {
    EXPECT_NE(error_of(c.frame).find(c.expected), std::string::npos)
        << c.frame.substr(0, 100) << " -> " << error_of(c.frame);
  }
  // decode() reads one message: a batch is not one.
  EXPECT_NE(decode_error(R"({"type":"batch","version":3,"messages":[)" + start + "]}").find("unknown message type"),
            std::string::npos);
}
