#include "baton/store/output_placement.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::store;

namespace {

OutputChunk chunk(std::int64_t offset, std::string data) { return {RunId{1}, 1, "stdout", offset, std::move(data)}; }

/// The log as a reader sees it, after placing `chunks` in order.
std::string log_of(const std::vector<OutputChunk>& chunks, std::int64_t cap = 1 << 20) {
  std::int64_t have = 0;
  std::string out;
  for (const auto& c : chunks)
    for (const auto& r : place_output(have, c, cap)) {
      out += r.text;
      if (r.end_offset) have = std::max(have, *r.end_offset);
    }
  return out;
}

}  // namespace

TEST(OutputPlacement, ContiguousChunksAreLoggedAsTheyCome) {
  EXPECT_EQ(log_of({chunk(0, "one\n"), chunk(4, "two\n")}), "one\ntwo\n");
}

TEST(OutputPlacement, ResentAndOverlappingTextIsLoggedOnce) {
  // A reconnect resends the last window, cut differently; a finish's tail
  // overlaps what streamed.
  EXPECT_EQ(log_of({chunk(0, "abcdef"), chunk(2, "cdefgh"), chunk(0, "abcdefgh"), chunk(5, "fghij")}), "abcdefghij");
  EXPECT_TRUE(place_output(10, chunk(0, "abcdefghij"), 100).empty());
}

TEST(OutputPlacement, OverlapEndingInsideACharacterResumesAtTheNextOne) {
  // "é" is two bytes at offsets 1-2; the log holds up to offset 2 (a row
  // cut by the cap, say): the rest starts after the character.
  const auto rows = place_output(2, chunk(0, "a\xC3\xA9z"), 100);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].text, "z");
  EXPECT_EQ(rows[0].start_offset, 3);
}

TEST(OutputPlacement, AGapIsNamedWithItsSize) {
  const auto rows = place_output(4, chunk(10, "late\n"), 100);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].text, "[baton: 6 bytes of stdout were lost]\n");
  EXPECT_FALSE(rows[0].start_offset);
  EXPECT_EQ(rows[1].text, "late\n");
  EXPECT_EQ(rows[1].start_offset, 10);
  EXPECT_EQ(rows[1].end_offset, 15);
}

TEST(OutputPlacement, TextPastTheCapIsLeftToTheArchiveWithOneNote) {
  const std::string log =
      log_of({chunk(0, "12345"), chunk(5, "67890"), chunk(10, "abc"), chunk(0, "1234567890abc")}, 8);
  EXPECT_EQ(log, "12345678\n[baton: stdout past 8 bytes is kept in the log archive only]\n");
  // The note's offsets end at the cap: nothing more is placed.
  EXPECT_TRUE(place_output(8, chunk(8, "more"), 8).empty());
}

TEST(OutputPlacement, TheCapIsNotCutInsideACharacter) {
  const auto rows = place_output(0, chunk(0, "ab\xE2\x82\xAC"), 4);  // the € spans offsets 2-4
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].text, "ab");
  EXPECT_EQ(rows[0].end_offset, 2);
  EXPECT_EQ(rows[1].end_offset, 4);
}
