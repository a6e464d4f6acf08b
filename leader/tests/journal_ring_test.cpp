// The incident journal's ring of files (leader/journal_ring.h): a book per
// epoch, files past their size followed by others, the oldest removed past
// the bound, and an export of a window from each overlapping book's header;
// a flush while the control loop keeps writing returns.
#include "baton/leader/journal_ring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

namespace baton::leader {
namespace {

namespace fs = std::filesystem;

std::string line(const char* kind, std::int64_t wall, const std::string& pad = "") {
  return "{\"k\":\"" + std::string(kind) + "\",\"w\":" + std::to_string(wall) +
         (pad.empty() ? "" : ",\"p\":\"" + pad + "\"") + "}";
}

struct Dir {
  fs::path path = fs::temp_directory_path() / ("baton-ring-" + std::to_string(::getpid()) + "-" +
                                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Dir() { fs::remove_all(path); }
  ~Dir() { fs::remove_all(path); }
};

TEST(JournalRing, AnExportGivesEachOverlappingBookFromItsHeaderToTheWindowsEnd) {
  Dir d;
  JournalRing ring(d.path, 64 << 20);
  ring.begin_book(Epoch{1});
  ring.line(line("book", 1000));
  for (int w = 1001; w <= 1010; ++w) ring.line(line("tick", w));
  ring.begin_book(Epoch{2});
  ring.line(line("book", 2000));
  for (int w = 2001; w <= 2010; ++w) ring.line(line("tick", w));
  auto both = ring.export_window(1005, 2003);
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(both->rfind("{\"k\":\"window\",\"from_ms\":1005,\"to_ms\":2003}\n", 0), 0u);
  EXPECT_NE(both->find(line("book", 1000)), std::string::npos) << "epoch 1 from its header";
  EXPECT_NE(both->find(line("tick", 1010)), std::string::npos);
  EXPECT_NE(both->find(line("tick", 2003)), std::string::npos);
  EXPECT_EQ(both->find(line("tick", 2004)), std::string::npos) << "nothing after the window";
  auto second = ring.export_window(2005, 2005);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->find(line("book", 1000)), std::string::npos) << "epoch 1 does not overlap";
  EXPECT_NE(second->find(line("book", 2000)), std::string::npos);
  auto none = ring.export_window(5000, 6000);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no book of this node's journal overlaps the window"), std::string::npos);
  EXPECT_FALSE(ring.export_window(10, 5));
}

TEST(JournalRing, TheOldestFilesGoPastTheBoundAndABookWithoutItsBeginningIsNamed) {
  Dir d;
  // 1 MiB bound: files of 64 KiB; 300 lines of ~1 KiB each for epoch 7.
  JournalRing ring(d.path, 1 << 20);
  ring.begin_book(Epoch{7});
  ring.line(line("book", 1000));
  const std::string pad(1000, 'x');
  for (int i = 0; i < 3000; ++i) ring.line(line("tick", 1001 + i, pad));
  ring.flush();
  std::uintmax_t total = 0;
  int files = 0;
  for (const auto& e : fs::directory_iterator(d.path)) {
    total += fs::file_size(e.path());
    files++;
  }
  EXPECT_GT(files, 10);
  EXPECT_LE(total, (1u << 20) + (64u << 10) + 2048) << "the bound, give or take the file being written";
  auto gone = ring.export_window(3900, 4000);
  ASSERT_FALSE(gone);
  EXPECT_NE(gone.error().message.find("the journal of epoch 7 no longer holds its beginning"), std::string::npos)
      << gone.error().message;
}

TEST(JournalRing, AFlushWhileTheLoopKeepsWritingReturnsAndNeitherSideStalls) {
  Dir d;
  JournalRing ring(d.path, 64 << 20);
  ring.begin_book(Epoch{1});
  ring.line(line("book", 1));
  std::atomic<bool> stop{false};
  std::thread loop([&] {
    for (int w = 2; !stop.load(); ++w) ring.line(line("tick", w));
  });
  for (int i = 0; i < 20; ++i) {
    auto flushed = std::async(std::launch::async, [&] { ring.flush(); });
    ASSERT_EQ(flushed.wait_for(std::chrono::seconds(5)), std::future_status::ready) << "flush " << i;
  }
  stop = true;
  loop.join();
  // And with nothing queued (a writer that spun holding the lock here once
  // stalled both the export and the control loop).
  ring.flush();
  auto later = std::async(std::launch::async, [&] {
    ring.flush();
    ring.line(line("tick", 1));
  });
  ASSERT_EQ(later.wait_for(std::chrono::seconds(5)), std::future_status::ready);
}

}  // namespace
}  // namespace baton::leader
