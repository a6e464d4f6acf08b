// The incident journal's ring of files (leader/journal_ring.h): a book per
// epoch, files past their size followed by others, the oldest removed past
// the bound, and an export of a window from each overlapping book's header;
// a flush while the control loop keeps writing returns.
#include "baton/leader/journal_ring.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

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
  auto one = ring.begin_book(Epoch{1});
  one->line(line("book", 1000));
  for (int w = 1001; w <= 1010; ++w) one->line(line("tick", w));
  auto two = ring.begin_book(Epoch{2});
  two->line(line("book", 2000));
  for (int w = 2001; w <= 2010; ++w) two->line(line("tick", w));
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

// The books hold task output, parameters and every decision's inputs: the
// node's user alone reads them (security review N-L3): a directory made
// 0700 and each book's files 0600, whatever the umask.
TEST(JournalRing, TheBooksAreTheNodesUsersAlone) {
  Dir d;
  const mode_t was = ::umask(0);
  {
    JournalRing ring(d.path, 64 << 20);
    auto one = ring.begin_book(Epoch{1});
    one->line(line("book", 1000));
    ASSERT_TRUE(ring.export_window(0, 5000));
  }
  ::umask(was);
  EXPECT_EQ(fs::status(d.path).permissions(), fs::perms::owner_all);
  int files = 0;
  for (const auto& f : fs::directory_iterator(d.path)) {
    ++files;
    EXPECT_EQ(f.status().permissions(), fs::perms::owner_read | fs::perms::owner_write) << f.path();
  }
  EXPECT_EQ(files, 1);
}

// A retiring loop's last lines and the next epoch's first ones, written at
// once on one node: each book gets its own, whole and in order.
TEST(JournalRing, TwoBooksWrittenAtOnceStayApart) {
  Dir d;
  JournalRing ring(d.path, 64 << 20);
  auto old_book = ring.begin_book(Epoch{4});
  old_book->line(line("book", 100));
  auto new_book = ring.begin_book(Epoch{5});
  new_book->line(line("book", 101));
  for (int w = 102; w < 140; ++w) {
    old_book->line(line("tick", w, "e4"));
    new_book->line(line("tick", w, "e5"));
  }
  auto both = ring.export_window(100, 200);
  ASSERT_TRUE(both) << both.error().message;
  const auto four = both->find(line("book", 100)), five = both->find(line("book", 101));
  ASSERT_NE(four, std::string::npos);
  ASSERT_NE(five, std::string::npos);
  const std::string book4 = both->substr(four, five > four ? five - four : std::string::npos);
  const std::string book5 = both->substr(five, four > five ? four - five : std::string::npos);
  EXPECT_EQ(book4.find("e5"), std::string::npos) << "epoch 5's lines in epoch 4's book";
  EXPECT_EQ(book5.find("e4"), std::string::npos) << "epoch 4's lines in epoch 5's book";
  EXPECT_NE(book4.find(line("tick", 139, "e4")), std::string::npos);
  EXPECT_NE(book5.find(line("tick", 139, "e5")), std::string::npos);
}

// Files past the journal's age go when the next one is opened, whatever
// the size (incident_journal_max_days; security review N-L3); the file
// being written stays.
TEST(JournalRing, FilesOlderThanTheAgeBoundGoWhenTheNextIsOpened) {
  Dir d;
  JournalRing ring(d.path, 64 << 20, std::chrono::hours(24));
  auto first = ring.begin_book(Epoch{1});
  first->line(line("book", 1000));
  ring.flush();
  std::vector<fs::path> before;
  for (const auto& f : fs::directory_iterator(d.path)) before.push_back(f.path());
  ASSERT_EQ(before.size(), 1u);
  fs::last_write_time(before[0], fs::file_time_type::clock::now() - std::chrono::hours(25));
  auto second = ring.begin_book(Epoch{2});
  second->line(line("book", 2000));
  ring.flush();
  EXPECT_FALSE(fs::exists(before[0])) << "a day and an hour old";
  int files = 0;
  for (const auto& f : fs::directory_iterator(d.path)) files += f.path() != before[0];
  EXPECT_EQ(files, 1);
  // Without an age bound the same file would have stayed.
  const fs::path kept = d.path.string() + "-unbounded";
  fs::remove_all(kept);
  {
    JournalRing unbounded(kept, 64 << 20);
    auto a = unbounded.begin_book(Epoch{1});
    a->line(line("book", 1000));
    unbounded.flush();
    const fs::path old_file = fs::directory_iterator(kept)->path();
    fs::last_write_time(old_file, fs::file_time_type::clock::now() - std::chrono::hours(25 * 365));
    auto b = unbounded.begin_book(Epoch{2});
    b->line(line("book", 2000));
    unbounded.flush();
    EXPECT_TRUE(fs::exists(old_file));
  }
  fs::remove_all(kept);
}

TEST(JournalRing, TheOldestFilesGoPastTheBoundAndABookWithoutItsBeginningIsNamed) {
  Dir d;
  // 1 MiB bound: files of 64 KiB; 300 lines of ~1 KiB each for epoch 7.
  JournalRing ring(d.path, 1 << 20);
  auto seven = ring.begin_book(Epoch{7});
  seven->line(line("book", 1000));
  const std::string pad(1000, 'x');
  for (int i = 0; i < 3000; ++i) seven->line(line("tick", 1001 + i, pad));
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
  auto book = ring.begin_book(Epoch{1});
  book->line(line("book", 1));
  std::atomic<bool> stop{false};
  std::thread loop([&] {
    for (int w = 2; !stop.load(); ++w) book->line(line("tick", w));
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
    book->line(line("tick", 1));
  });
  ASSERT_EQ(later.wait_for(std::chrono::seconds(5)), std::future_status::ready);
}

}  // namespace
}  // namespace baton::leader
