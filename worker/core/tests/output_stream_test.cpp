#include "baton/worker_core/output_stream.h"

#include <gtest/gtest.h>

#include <random>

using namespace baton;
using namespace baton::worker_core;
using namespace std::chrono_literals;

namespace {

MonoTime stream_at(Millis ms) { return MonoTime{ms}; }

/// Reassembles chunks by offset, as the leader does, checking they are
/// contiguous or overlap consistently.
struct Receiver {
  std::string text;
  void take(const std::vector<OutputChunk>& chunks) {
    for (const auto& c : chunks) {
      ASSERT_LE(c.offset, static_cast<std::int64_t>(text.size())) << "a gap before offset " << c.offset;
      const auto overlap = text.size() - static_cast<std::size_t>(c.offset);
      const auto common = std::min(overlap, c.data.size());
      ASSERT_EQ(text.substr(static_cast<std::size_t>(c.offset), common), c.data.substr(0, common));
      if (c.data.size() > overlap) text += c.data.substr(overlap);
    }
  }
};

}  // namespace

TEST(OutputStream, AQuietStreamIsSentAfterTheFlushIntervalAndFullChunksAtOnce) {
  OutputStream s;
  s.append("hello\n", stream_at(0ms));
  EXPECT_TRUE(s.take(stream_at(500ms), false).empty());
  auto c = s.take(stream_at(1000ms), false);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], (OutputChunk{0, "hello\n"}));
  EXPECT_TRUE(s.take(stream_at(5000ms), false).empty());  // nothing new: nothing sent

  s.append(std::string(40 * 1024, 'x'), stream_at(5000ms));
  c = s.take(stream_at(5000ms), false);  // two full chunks now, the rest waits
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].offset, 6);
  EXPECT_EQ(c[0].data.size(), 16u * 1024);
  EXPECT_EQ(c[1].offset, 6 + 16 * 1024);
  c = s.take(stream_at(5000ms), true);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].data.size(), 8u * 1024);
  EXPECT_EQ(s.length(), 6 + 40 * 1024);
}

TEST(OutputStream, ACharacterSplitAcrossReadsIsSentWhole) {
  OutputStream s;
  const std::string e_acute = "\xC3\xA9";   // é
  const std::string euro = "\xE2\x82\xAC";  // €
  s.append("a" + e_acute.substr(0, 1), stream_at(0ms));
  s.append(e_acute.substr(1) + euro.substr(0, 2), stream_at(1ms));
  auto c = s.take(stream_at(2000ms), false);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].data, "a" + e_acute);  // the € waits for its last byte
  s.append(euro.substr(2), stream_at(2001ms));
  c = s.take(stream_at(4000ms), false);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], (OutputChunk{3, euro}));
}

TEST(OutputStream, InvalidBytesBecomeReplacementCharactersAndOffsetsCountTheText) {
  OutputStream s;
  s.append("x\xFFy", stream_at(0ms));
  s.append("\xE2\x82", stream_at(0ms));  // a character the task never finished
  auto c = s.take(stream_at(0ms), true);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].data.substr(0, 5), "x\xEF\xBF\xBDy");  // then U+FFFD for the unfinished one
  EXPECT_GT(c[0].data.size(), 5u);
  EXPECT_EQ(s.length(), static_cast<std::int64_t>(c[0].data.size()));
}

TEST(OutputStream, ChunksAreCutOnCharacterBoundaries) {
  OutputLimits l;
  l.chunk_bytes = 5;
  OutputStream s(l);
  s.append("ab\xE2\x82\xAC\xE2\x82\xAC", stream_at(0ms));  // ab€€: 8 bytes
  auto c = s.take(stream_at(0ms), true);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], (OutputChunk{0, "ab\xE2\x82\xAC"}));
  EXPECT_EQ(c[1], (OutputChunk{5, "\xE2\x82\xAC"}));
}

TEST(OutputStream, UnsentTextIsBoundedAndTheGapShowsInTheOffsets) {
  OutputLimits l;
  l.unsent_max = 100;
  OutputStream s(l);
  s.append(std::string(30, 'a'), stream_at(0ms));
  auto c = s.take(stream_at(0ms), true);
  ASSERT_EQ(c.size(), 1u);
  // Detached: nothing is taken while 250 bytes arrive.
  for (int i = 0; i < 5; ++i) s.append(std::string(50, static_cast<char>('b' + i)), stream_at(10ms));
  EXPECT_EQ(s.lost(), 150);
  s.rewind();  // the sent text no longer joins what is left: nothing resent
  c = s.take(stream_at(10ms), true);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].offset, 30 + 150);  // the leader sees 150 bytes missing
  EXPECT_EQ(c[0].data, std::string(50, 'e') + std::string(50, 'f'));
  EXPECT_EQ(s.length(), 280);
}

TEST(OutputStream, RewindSendsTheLastWindowAgainAndAReceiverRebuildsTheStreamExactly) {
  OutputLimits l;
  l.chunk_bytes = 64;
  l.resend_window = 200;
  OutputStream s(l);
  Receiver r;
  std::mt19937 rng(7);
  std::string printed;
  Millis t{0};
  for (int i = 0; i < 300; ++i) {
    std::string piece;
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) piece += (rng() % 5 == 0) ? std::string("\xC3\xA9") : std::string(1, 'a' + rng() % 26);
    printed += piece;
    // Split the piece at a random byte, inside a character or not.
    const std::size_t cut = piece.empty() ? 0 : rng() % piece.size();
    s.append(piece.substr(0, cut), MonoTime{t});
    s.append(piece.substr(cut), MonoTime{t});
    t += Millis(rng() % 300);
    if (rng() % 17 == 0) s.rewind();  // a new welcome: the window again
    r.take(s.take(MonoTime{t}, false));
  }
  r.take(s.take(MonoTime{t}, true));
  EXPECT_EQ(r.text, printed);
  EXPECT_EQ(s.length(), static_cast<std::int64_t>(printed.size()));
  EXPECT_EQ(s.lost(), 0);
  const OutputChunk tail = s.tail(100);
  EXPECT_EQ(tail.offset + static_cast<std::int64_t>(tail.data.size()), s.length());
  EXPECT_EQ(tail.data, printed.substr(static_cast<std::size_t>(tail.offset)));
}
