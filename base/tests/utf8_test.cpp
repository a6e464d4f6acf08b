// Output tails and frames must be valid UTF-8 whatever a task printed.
#include "baton/base/utf8.h"

#include <gtest/gtest.h>

using baton::to_valid_utf8;
using baton::utf8_tail;

namespace {
bool valid(const std::string& s) { return to_valid_utf8(s) == s; }
}  // namespace

TEST(Utf8, ValidTextIsUnchanged) {
  const std::string s = "plain, \xC3\xA9t\xC3\xA9, \xE6\x97\xA5\xE6\x9C\xAC, \xF0\x9F\x98\x80";
  EXPECT_EQ(to_valid_utf8(s), s);
}

TEST(Utf8, InvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(to_valid_utf8("a\xFF"
                          "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(to_valid_utf8("\xC3("), "\xEF\xBF\xBD(");                                // truncated sequence
  EXPECT_EQ(to_valid_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(to_valid_utf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(to_valid_utf8("\xF4\x90\x80\x80").size(), 12u);                          // past U+10FFFF
  EXPECT_EQ(to_valid_utf8("\x80"), "\xEF\xBF\xBD");
}

TEST(Utf8, TailOfMultiByteTextIsCutOnACharacterBoundary) {
  std::string s;
  for (int i = 0; i < 20 * 1024; ++i) s += "\xC3\xA9";  // 40 KiB of 'é'
  s += "\xE2\x82";                                      // ends mid-character
  const std::string t = utf8_tail(s, 16 * 1024 + 1);    // an odd cut
  EXPECT_TRUE(valid(t));
  EXPECT_LE(t.size(), 16u * 1024 + 1);
  EXPECT_GE(t.size(), 16u * 1024 - 8);
}

TEST(Utf8, TailOfBinaryStaysWithinTheLimit) {
  const std::string s(1000, '\xFF');
  const std::string t = utf8_tail(s, 100);
  EXPECT_TRUE(valid(t));
  EXPECT_LE(t.size(), 100u);
  EXPECT_EQ(t.size(), 99u);  // 33 replacement characters
}
