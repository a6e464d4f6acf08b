#include "baton/base/lru_cache.h"

#include <gtest/gtest.h>

namespace baton {
namespace {

MonoTime at(int ms) { return MonoTime{std::chrono::milliseconds(ms)}; }

TEST(LruCache, AFullCacheForgetsTheLeastRecentlyUsedEntryOnly) {
  LruCache<int> c(3);
  c.put("a", 1, at(1000));
  c.put("b", 2, at(1000));
  c.put("c", 3, at(1000));
  ASSERT_EQ(c.find("a", at(0)), 1);  // "a" is used: "b" is now the oldest
  c.put("d", 4, at(1000));
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.find("b", at(0)), std::nullopt);
  EXPECT_EQ(c.find("a", at(0)), 1);
  EXPECT_EQ(c.find("c", at(0)), 3);
  EXPECT_EQ(c.find("d", at(0)), 4);
}

TEST(LruCache, AnEntryIsValidUntilItsTime) {
  LruCache<int> c(2);
  c.put("a", 1, at(100));
  EXPECT_EQ(c.find("a", at(99)), 1);
  EXPECT_EQ(c.find("a", at(100)), std::nullopt);
  EXPECT_EQ(c.size(), 0u) << "an expired entry is dropped when found";
  c.put("a", 2, at(200));
  c.put("a", 3, at(300));
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.find("a", at(250)), 3);
}

TEST(LruCache, EraseIfForgetsMatchingValues) {
  LruCache<int> c(4);
  for (int i = 0; i < 4; ++i) c.put(std::to_string(i), i, at(1000));
  c.erase_if([](int v) { return v % 2 == 0; });
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.find("0", at(0)), std::nullopt);
  EXPECT_EQ(c.find("1", at(0)), 1);
  c.put("5", 5, at(1000));
  c.put("6", 6, at(1000));
  c.put("7", 7, at(1000));  // full at 4: the least recently used ("3") goes
  EXPECT_EQ(c.find("3", at(0)), std::nullopt);
  EXPECT_EQ(c.find("1", at(0)), 1);
}

}  // namespace
}  // namespace baton
