#include "baton/worker/outbox.h"

#include "baton/protocol/codec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace baton;
using namespace baton::worker;

namespace {
/// Time moves only when a test says so.
class ManualClock final : public Clock {
 public:
  MonoTime mono() const override { return now; }
  MonoTime now{std::chrono::seconds{100}};
};
const RealClock clock_;
}  // namespace

TEST(Outbox, AFinishIsDueForResendByTheClockItWasGiven) {
  std::string dir = "/tmp/baton-outbox-clock-test-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  ManualClock clock;
  Outbox o(dir, clock);
  ASSERT_TRUE(o.open());
  protocol::Finish a{{1, 1, "aaaa"}, protocol::Outcome::succeeded, 0, "", "", "", 5, {}};
  ASSERT_TRUE(o.put(a));
  EXPECT_TRUE(o.pending(std::chrono::seconds(3)).empty()) << "just written";
  clock.now = clock.now + std::chrono::seconds(3);
  ASSERT_EQ(o.pending(std::chrono::seconds(3)).size(), 1u) << "three seconds later by its clock";
  std::filesystem::remove_all(dir);
}

TEST(Outbox, KeepsFinishesUntilAcknowledgedAcrossReopen) {
  std::string dir = "/tmp/baton-outbox-test-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  protocol::Finish a{{1, 1, "aaaa"}, protocol::Outcome::succeeded, 0, "", "out", "", 5, {}};
  protocol::Finish b{{2, 3, "bbbb"}, protocol::Outcome::failed, 2, "exit 2", "", "err", 7, {}};
  {
    Outbox o(dir, clock_);
    ASSERT_TRUE(o.open());
    ASSERT_TRUE(o.put(a));
    ASSERT_TRUE(o.put(b));
    ASSERT_TRUE(o.put(a));  // idempotent: same attempt, one file
  }
  Outbox again(dir, clock_);
  ASSERT_TRUE(again.open());
  auto pending = again.pending();
  ASSERT_EQ(pending.size(), 2u);
  again.remove(a.ref);
  pending = again.pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0], b);
  EXPECT_TRUE(again.pending(std::chrono::seconds(60)).empty()) << "just written: not yet due for a resend";
  std::filesystem::remove_all(dir);
}

TEST(Outbox, AGroupIsOneAppendAndAcksSurviveARestart) {
  std::string dir = "/tmp/baton-outbox-group-test-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  auto lines = [&] {
    std::size_t finishes = 0, acks = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir + "/outbox")) {
      std::ifstream in(e.path());
      for (std::string l; std::getline(in, l);) {
        finishes += l.find("\"type\":\"finish\"") != std::string::npos;
        acks += l.rfind("{\"ack\":", 0) == 0;
      }
    }
    return std::pair{finishes, acks};
  };
  std::vector<protocol::Finish> group;
  for (int i = 1; i <= 3; ++i)
    group.push_back({{i, 1, "tok" + std::to_string(i)}, protocol::Outcome::succeeded, 0, "", "", "", 1, {}});
  {
    Outbox o(dir, clock_);
    ASSERT_TRUE(o.open());
    ASSERT_TRUE(o.put_all(group));
    EXPECT_EQ(lines(), (std::pair<std::size_t, std::size_t>{3, 0})) << "one append (one fdatasync) for the group";
    ASSERT_TRUE(o.put_all(group));
    EXPECT_EQ(lines().first, 3u) << "finishes already pending are not written again";
    // Two acks and one for an attempt never written: one append, two lines.
    o.remove_all({group[0].ref, group[1].ref, protocol::AttemptRef{99, 1, "unknown"}});
    EXPECT_EQ(lines().second, 2u);
    EXPECT_EQ(o.size(), 1u);
  }
  Outbox again(dir, clock_);
  ASSERT_TRUE(again.open());
  auto pending = again.pending();
  ASSERT_EQ(pending.size(), 1u) << "acknowledged finishes are not resent after a restart";
  EXPECT_EQ(pending[0], group[2]);
  again.remove(group[2].ref);
  Outbox third(dir, clock_);
  ASSERT_TRUE(third.open());
  EXPECT_TRUE(third.pending().empty());
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir + "/outbox")) files++;
  EXPECT_LE(files, 2u) << "fully acknowledged logs are deleted once a newer one is current";
  std::filesystem::remove_all(dir);
}

TEST(Outbox, ATornLastLineIsQuarantinedNotSilentlyDropped) {
  std::string dir = "/tmp/baton-outbox-torn-test-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  protocol::Finish a{{7, 1, "aaaa"}, protocol::Outcome::succeeded, 0, "", "", "", 5, {}};
  {
    Outbox o(dir, clock_);
    ASSERT_TRUE(o.open());
    ASSERT_TRUE(o.put(a));
  }
  {
    std::ofstream out(dir + "/outbox/log-99.jsonl", std::ios::app);
    out << "{\"type\":\"finish\",\"version\":1,\"run_id\":8";  // a crash mid-append
  }
  Outbox again(dir, clock_);
  ASSERT_TRUE(again.open());
  auto pending = again.pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0], a);
  EXPECT_EQ(again.quarantined(), 1);
  std::ifstream q(dir + "/outbox/quarantine.txt");
  std::string kept((std::istreambuf_iterator<char>(q)), std::istreambuf_iterator<char>());
  EXPECT_NE(kept.find("\"run_id\":8"), std::string::npos) << "the unreadable record is kept aside";
  std::filesystem::remove_all(dir);
}

// A record that cannot be decoded in the middle of a log does not take the
// records after it down with it.
TEST(Outbox, AnUnreadableRecordDoesNotHideTheOnesAfterIt) {
  std::string dir = "/tmp/baton-outbox-bad-test-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/outbox");
  protocol::Finish b{{9, 2, "bbbb"}, protocol::Outcome::succeeded, 0, "", "", "", 5, {}};
  {
    std::ofstream out(dir + "/outbox/log-1.jsonl");
    out << "{\"type\":\"finish\",\"version\":1,\"run_id\":\"not a number\"}\n" << protocol::encode(b) << "\n";
  }
  Outbox o(dir, clock_);
  ASSERT_TRUE(o.open());
  auto pending = o.pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0], b);
  EXPECT_EQ(o.quarantined(), 1);
  std::filesystem::remove_all(dir);
}

// Only a spool of the worker's own is made private (security review L14):
// a link, a shared directory like /tmp, or another user's directory is
// refused with what to do, and keeps its mode.
TEST(Outbox, OnlyADirectoryOfTheWorkersOwnIsTakenAsItsSpool) {
  namespace fs = std::filesystem;
  const std::string base = "/tmp/baton-outbox-owner-test-" + std::to_string(::getpid());
  fs::remove_all(base);
  fs::create_directories(base + "/real");
  ManualClock clock;
  auto refusal = [&](const std::string& spool) {
    Outbox o(spool, clock);
    auto r = o.open();
    return r ? std::string() : r.error().message;
  };
  fs::permissions(base + "/real", fs::perms::all);
  fs::create_directory_symlink(base + "/real", base + "/link");
  EXPECT_EQ(refusal(base + "/link"),
            "spool_dir: " + base +
                "/link is not a directory (a symbolic link is not followed): name the directory "
                "itself");
  EXPECT_EQ(fs::status(base + "/real").permissions() & fs::perms::all, fs::perms::all) << "left as it was";
  fs::create_directories(base + "/shared");
  fs::permissions(base + "/shared", fs::perms::all | fs::perms::sticky_bit);
  EXPECT_EQ(refusal(base + "/shared"), "spool_dir: " + base +
                                           "/shared is a shared directory (sticky bit, like /tmp): name a directory "
                                           "of the worker's own under it");
  EXPECT_EQ(fs::status(base + "/shared").permissions() & fs::perms::mask, fs::perms::all | fs::perms::sticky_bit);
  if (::geteuid() == 0) {  // root can give a directory away; the suite runs as root
    fs::create_directories(base + "/theirs");
    ASSERT_EQ(::chown((base + "/theirs").c_str(), 65534, 65534), 0);
    EXPECT_EQ(refusal(base + "/theirs"), "spool_dir: " + base +
                                             "/theirs belongs to uid 65534, not to this worker's user (uid 0): name a "
                                             "directory the worker owns");
  }
  EXPECT_EQ(refusal(base + "/real"), "");
  fs::remove_all(base);
}

TEST(Outbox, TheSpoolIsPrivateToTheWorkersUser) {
  namespace fs = std::filesystem;
  std::string dir = "/tmp/baton-outbox-private-test-" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);  // as a permissive umask or an operator left it
  ManualClock clock;
  Outbox o(dir, clock);
  ASSERT_TRUE(o.open());
  EXPECT_EQ(fs::status(dir).permissions() & fs::perms::all, fs::perms::owner_all);
  protocol::Finish a{{1, 1, "aaaa"}, protocol::Outcome::succeeded, 0, "", "secret output", "", 5, {}};
  ASSERT_TRUE(o.put(a));
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.status().permissions() & (fs::perms::group_all | fs::perms::others_all), fs::perms::none) << e.path();
  fs::remove_all(dir);
}
