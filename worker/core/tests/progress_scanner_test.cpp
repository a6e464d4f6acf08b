#include "baton/worker_core/progress_scanner.h"

#include <gtest/gtest.h>

using baton::worker_core::progress_text_max;
using baton::worker_core::ProgressScanner;

TEST(ProgressScanner, TheLastProgressLineWinsAndOtherOutputIsNotProgress) {
  ProgressScanner s;
  s.append("starting\n");
  EXPECT_FALSE(s.progress());
  s.append("::progress:: 10% (100/1000 rows)\nsome output\n::progress::  42%  \n");
  ASSERT_TRUE(s.progress());
  EXPECT_EQ(*s.progress(), "42%");
  s.append("  ::progress:: indented lines are output\nprefix ::progress:: too\n");
  EXPECT_EQ(*s.progress(), "42%");
}

TEST(ProgressScanner, ALineSplitAcrossReadsCountsOnlyOnceItEnds) {
  ProgressScanner s;
  s.append("::prog");
  s.append("ress:: 7");
  EXPECT_FALSE(s.progress()) << "not before its end";
  s.append("5%\r\n");
  ASSERT_TRUE(s.progress());
  EXPECT_EQ(*s.progress(), "75%");
  s.append("::progress::\n");
  EXPECT_EQ(*s.progress(), "") << "an empty progress line clears the text";
}

TEST(ProgressScanner, TheTextIsBoundedAndValidUtf8WhateverTheTaskPrints) {
  ProgressScanner s;
  std::string long_line = "::progress::" + std::string(10000, 'x') + "\n";
  s.append(long_line);
  ASSERT_TRUE(s.progress());
  EXPECT_EQ(s.progress()->size(), progress_text_max);
  // A cut through a multi-byte character drops the partial character, and
  // invalid bytes become U+FFFD.
  std::string euros;
  for (int i = 0; i < 200; ++i) euros += "\xE2\x82\xAC";  // 600 bytes of "€"
  s.append("::progress::" + euros + "\n");
  ASSERT_TRUE(s.progress());
  EXPECT_LE(s.progress()->size(), progress_text_max);
  EXPECT_EQ(s.progress()->size() % 3, 0u);
  s.append("::progress:: \xFF ok\n");
  EXPECT_EQ(*s.progress(), "\xEF\xBF\xBD ok");
  // A long line that is not progress costs nothing and changes nothing.
  s.append(std::string(100000, 'y') + "\n");
  EXPECT_EQ(*s.progress(), "\xEF\xBF\xBD ok");
}
