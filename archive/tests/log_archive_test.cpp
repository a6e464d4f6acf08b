#include "baton/archive/log_archive.h"
#include "baton/archive/archive_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace baton;
using namespace baton::archive;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("baton-archive-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { fs::remove_all(path); }
  ~TempDir() { fs::remove_all(path); }
};

store::OutputChunk chunk(std::int64_t run, int attempt, const std::string& stream, std::int64_t offset,
                         const std::string& data) {
  return {RunId{run}, attempt, stream, offset, data};
}

}  // namespace

TEST(LogArchive, ChunksLandAtTheirOffsetsAndAResendChangesNothing) {
  TempDir d;
  LogArchive a(d.path.string());
  ASSERT_TRUE(a.write({chunk(1234, 1, "stdout", 0, "hello "), chunk(1234, 1, "stderr", 0, "warn\n")}));
  // Out of order, resent with another cut, and from a second leader.
  ASSERT_TRUE(a.write({chunk(1234, 1, "stdout", 9, "ld\n"), chunk(1234, 1, "stdout", 3, "lo wor")}));
  ASSERT_TRUE(a.write({chunk(1234, 1, "stdout", 0, "hello world\n")}));
  auto s = a.read(1234, 1, "stdout", 0, 1 << 20);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->data, "hello world\n");
  EXPECT_EQ(s->size, 12);
  EXPECT_TRUE(fs::exists(d.path / "runs/1/1234/attempt-1.stdout.log"));
  auto streams = a.streams(1234);
  ASSERT_EQ(streams.size(), 2u);
  EXPECT_EQ(streams[0].stream, "stderr");
  EXPECT_EQ(streams[1].size, 12);
  EXPECT_FALSE(a.read(1234, 2, "stdout", 0, 10)) << "an attempt the archive does not hold";
  EXPECT_TRUE(a.streams(99).empty());
}

TEST(LogArchive, ReadsArePagedOnCharacterBoundaries) {
  TempDir d;
  LogArchive a(d.path.string());
  const std::string text =
      "ab\xE2\x82\xAC"
      "cd";  // ab€cd: the € is bytes 2-4
  ASSERT_TRUE(a.write({chunk(7, 1, "stdout", 0, text)}));
  auto first = a.read(7, 1, "stdout", 0, 4);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->data, "ab");  // the € would be cut: left for the next page
  auto second = a.read(7, 1, "stdout", 2, 4);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->data,
            "\xE2\x82\xAC"
            "c");
  auto last = a.read(7, 1, "stdout", 6, 100);
  EXPECT_EQ(last->data, "d");
  EXPECT_EQ(a.read(7, 1, "stdout", 99, 100)->data, "");
}

TEST(LogArchive, TheSweepRemovesOnlyRunsOlderThanTheRetention) {
  TempDir d;
  LogArchive a(d.path.string());
  ASSERT_TRUE(a.write({chunk(5, 1, "stdout", 0, "old"), chunk(5, 2, "stdout", 0, "old too"),
                       chunk(2005, 1, "stdout", 0, "recent"), chunk(6, 1, "stderr", 0, "mixed")}));
  ASSERT_TRUE(a.write({chunk(6, 2, "stdout", 0, "newer attempt")}));
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(24 * 40);
  fs::last_write_time(d.path / "runs/0/5/attempt-1.stdout.log", old);
  fs::last_write_time(d.path / "runs/0/5/attempt-2.stdout.log", old);
  fs::last_write_time(d.path / "runs/0/6/attempt-1.stderr.log", old);  // its other file is recent
  std::ofstream(d.path / "runs/README") << "not a run";                // never touched
  EXPECT_EQ(a.sweep(std::chrono::hours(24 * 30)), 1);
  EXPECT_FALSE(fs::exists(d.path / "runs/0/5"));
  EXPECT_TRUE(fs::exists(d.path / "runs/0/6/attempt-1.stderr.log"));
  EXPECT_TRUE(fs::exists(d.path / "runs/2/2005"));
  EXPECT_TRUE(fs::exists(d.path / "runs/README"));
  EXPECT_EQ(a.sweep(std::chrono::hours(24 * 30)), 0);
}

TEST(LogArchive, AnUnwritableDirectoryIsAnErrorNamingThePath) {
  LogArchive a("/proc/baton-cannot-write-here");
  auto r = a.write({chunk(1, 1, "stdout", 0, "x")});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("/proc/baton-cannot-write-here"), std::string::npos) << r.error().message;
}

TEST(ArchiveWriter, WritesOnItsOwnThreadAndDropsWhatDoesNotFitTheQueue) {
  TempDir d;
  LogArchive a(d.path.string());
  {
    ArchiveWriter w(a, 16);
    w.push({chunk(9, 1, "stdout", 0, "0123456789"), chunk(9, 1, "stdout", 10, "abcdef")});
    w.push({chunk(9, 1, "stderr", 0, std::string(17, 'x'))});  // larger than the whole queue may hold
    w.flush();
    EXPECT_EQ(a.read(9, 1, "stdout", 0, 100)->data, "0123456789abcdef");
    EXPECT_EQ(w.dropped_chunks(), 1u);
    EXPECT_FALSE(a.read(9, 1, "stderr", 0, 100));
    w.push({chunk(9, 2, "stdout", 0, "last")});
  }  // destroyed: what was queued is written first
  EXPECT_EQ(a.read(9, 2, "stdout", 0, 100)->data, "last");
}
