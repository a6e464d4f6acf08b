// incident_replay_identical judged on hand-made run directories: what
// `baton-sim --replay` left of each node (replay-<node>.txt) beside the
// database's epoch history (db/epochs.jsonl). A node that led no epoch has
// no book to replay; one that led must replay identically.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "harness.h"

namespace {

namespace fs = std::filesystem;
using baton::chaos::harness::incident_replay_checker;

const std::string identical =
    "replay: 120 lines, 1 books, 100 inputs, 30 batches of effects (41 effects) replayed, every batch identical to "
    "the record\nexit=0\n";
const std::string no_book = "exit=2\n";

class IncidentReplayChecker : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("baton-replay-checker-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "db");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  void led(const std::string& nodes) {
    std::string all;
    int epoch = 0;
    for (char n : nodes)
      all += "{\"epoch\" : " + std::to_string(++epoch) + ", \"node\" : \"n" + std::string(1, n) +
             "\", \"incarnation\" : \"x\", \"commit_us\" : 1, \"end_reason\" : \"released\"}\n";
    write("db/epochs.jsonl", all);
  }
  fs::path dir_;
};

TEST_F(IncidentReplayChecker, NodesThatLedNoEpochNeedNoBook) {
  // One epoch, n3's: n1 and n2 kept empty journals (baton-sim exits 2).
  led("3");
  write("replay-n1.txt", no_book);
  write("replay-n2.txt", no_book);
  write("replay-n3.txt", identical);
  const auto r = incident_replay_checker(dir_.string());
  EXPECT_EQ(r.violations, 0) << (r.evidence.empty() ? "" : r.evidence.front());
  EXPECT_EQ(r.examined, 30);
}

TEST_F(IncidentReplayChecker, ANodeThatLedWithoutABookIsAViolation) {
  led("31");
  write("replay-n1.txt", no_book);
  write("replay-n2.txt", no_book);
  write("replay-n3.txt", identical);
  const auto r = incident_replay_checker(dir_.string());
  ASSERT_EQ(r.violations, 1);
  EXPECT_EQ(r.evidence.front(), "n1: baton-sim --replay exit=2");
}

TEST_F(IncidentReplayChecker, ADifferingReplayIsAViolationWhoeverLed) {
  led("3");
  write("replay-n1.txt", "replay: line 7: effects differ\nexit=1\n");
  write("replay-n3.txt", identical);
  const auto r = incident_replay_checker(dir_.string());
  EXPECT_EQ(r.violations, 2);  // the differing line, and the exit
}

TEST_F(IncidentReplayChecker, ALeaderWhoseJournalWasNotReplayedIsAViolation) {
  led("32");
  write("replay-n3.txt", identical);
  const auto r = incident_replay_checker(dir_.string());
  ASSERT_EQ(r.violations, 1);
  EXPECT_EQ(r.evidence.front(), "n2: led an epoch, but its journal was not replayed");
}

TEST_F(IncidentReplayChecker, NoBookAnywhereIsAViolation) {
  // The epoch history lost (an export that failed): no node is excused from
  // the whole run's having replayed nothing.
  write("replay-n1.txt", no_book);
  write("replay-n2.txt", no_book);
  const auto r = incident_replay_checker(dir_.string());
  ASSERT_EQ(r.violations, 1);
  EXPECT_EQ(r.evidence.front(), "no node's journal holds an epoch it led");
}

}  // namespace
