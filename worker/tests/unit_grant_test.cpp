// What a systemd unit gives the worker, read as systemd reads it
// (`baton doctor`; security review N1): the packaged unit, drop-ins that
// add, reset or invert, and the search order of unit directories.
#include "baton/worker/unit_grant.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace baton::worker {
namespace {

namespace fs = std::filesystem;

TEST(UnitGrant, ThePackagedUnitGivesTheWorkerItsUserAndThreeCapabilities) {
  const auto g = read_unit_grant("baton-worker.service", {std::string(BATON_SOURCE_DIR) + "/packaging/systemd"});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->user, "baton-worker");
  EXPECT_EQ(g->ambient, (std::set<std::string>{"CAP_KILL", "CAP_SETGID", "CAP_SETUID"}));
  EXPECT_FALSE(g->ambient_inverted);
}

TEST(UnitGrant, LinesMergeAnEmptyAssignmentResetsAndATildeInverts) {
  UnitGrant g;
  apply_unit_text(
      "[Unit]\nAmbientCapabilities=CAP_SYS_ADMIN\n"  // not the service's section: ignored
      "[Service]\n# AmbientCapabilities=CAP_NET_RAW\nAmbientCapabilities=cap_setuid \\\n  CAP_SETGID\n"
      "AmbientCapabilities=CAP_KILL\nUser=w\n",
      g);
  EXPECT_EQ(g.ambient, (std::set<std::string>{"CAP_KILL", "CAP_SETGID", "CAP_SETUID"}));
  EXPECT_EQ(g.user, "w");
  apply_unit_text("[Service]\nAmbientCapabilities=\nAmbientCapabilities=CAP_NET_BIND_SERVICE\n", g);
  EXPECT_EQ(g.ambient, (std::set<std::string>{"CAP_NET_BIND_SERVICE"}));
  apply_unit_text("[Service]\nAmbientCapabilities=~CAP_SYS_ADMIN CAP_NET_BIND_SERVICE\n", g);
  EXPECT_TRUE(g.ambient_inverted);
  EXPECT_EQ(g.ambient, (std::set<std::string>{"CAP_SYS_ADMIN"})) << "everything but SYS_ADMIN: NET_BIND was granted";
  apply_unit_text("[Service]\nAmbientCapabilities=CAP_SYS_ADMIN\n", g);
  EXPECT_TRUE(g.ambient_inverted);
  EXPECT_TRUE(g.ambient.empty()) << "everything";
}

TEST(UnitGrant, TheFirstDirectoryHoldingTheUnitWinsAndDropInsApplyInNameOrder) {
  const fs::path root = fs::temp_directory_path() / ("unit-grant-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "etc/baton-worker.service.d");
  fs::create_directories(root / "lib/baton-worker.service.d");
  std::ofstream(root / "lib/baton-worker.service") << "[Service]\nUser=baton-worker\nAmbientCapabilities=CAP_KILL\n";
  std::ofstream(root / "lib/baton-worker.service.d/10-more.conf") << "[Service]\nAmbientCapabilities=CAP_SYS_PTRACE\n";
  std::ofstream(root / "etc/baton-worker.service.d/10-more.conf") << "[Service]\nAmbientCapabilities=CAP_NET_RAW\n";
  std::ofstream(root / "etc/baton-worker.service.d/20-root.conf") << "[Service]\nUser=\n";
  std::ofstream(root / "etc/baton-worker.service.d/notes.txt") << "[Service]\nUser=nobody\n";
  const auto g = read_unit_grant("baton-worker.service", {(root / "etc").string(), (root / "lib").string()});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->files.size(), 3u);
  EXPECT_EQ(g->ambient, (std::set<std::string>{"CAP_KILL", "CAP_NET_RAW"})) << "etc's 10-more.conf hides lib's";
  EXPECT_EQ(g->user, "") << "20-root.conf comes last and resets User= (root)";
  EXPECT_FALSE(read_unit_grant("other.service", {(root / "etc").string(), (root / "lib").string()}));
  fs::remove_all(root);
}

}  // namespace
}  // namespace baton::worker
