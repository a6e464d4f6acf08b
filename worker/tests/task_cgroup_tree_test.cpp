// The cgroup v2 path of a task's group against a directory tree laid out as
// cgroupfs, its root injected as task_cgroup (issue 61's decision (b): this
// machine class has no delegated controllers). What the worker does to the
// files is checked as files: the group made and recorded, the job's limits
// written to memory.max, pids.max and cpu.max, a controller the hierarchy
// does not offer (its file cannot be written) reported as not in force, and
// every member the group lists killed. What the kernel does with them is
// TaskTree.*'s, on a real cgroup2 mount.
#include "baton/worker/task_cgroup.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace baton::worker;
namespace fs = std::filesystem;

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

struct Tree {
  std::string root = ::testing::TempDir() + "/cgroupfs-" + std::to_string(::getpid()) + "-" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::string base = root + "/baton-tasks";
  std::string records = root + "-records";
  Tree() {
    fs::remove_all(root);
    fs::remove_all(records);
    fs::create_directories(base);
    std::ofstream(base + "/cgroup.procs") << "";
  }
  ~Tree() {
    fs::remove_all(root);
    fs::remove_all(records);
  }
};

TEST(TaskCgroupsOnATree, AGroupIsMadeAndRecordedAndTheJobsLimitsWrittenToIt) {
  Tree t;
  TaskCgroups cgroups(t.base, t.records);
  ASSERT_TRUE(cgroups.available()) << cgroups.unavailable_reason();
  EXPECT_EQ(cgroups.base(), t.base);
  auto g = cgroups.create();
  ASSERT_FALSE(g.name.empty());
  EXPECT_TRUE(fs::is_directory(g.dir));
  EXPECT_EQ(fs::path(g.dir).parent_path(), fs::path(t.base));
  EXPECT_EQ(read(t.records + "/cg-" + g.name), g.dir) << "recorded before anything runs in it";
  EXPECT_EQ(TaskCgroups::procs_file(g), g.dir + "/cgroup.procs");
  const auto in_force = TaskCgroups::limit(g, 256LL << 20, 64, 500);
  EXPECT_TRUE(in_force.memory && in_force.pids && in_force.cpu);
  EXPECT_EQ(read(g.dir + "/memory.max"), "268435456");
  EXPECT_EQ(read(g.dir + "/pids.max"), "64");
  EXPECT_EQ(read(g.dir + "/cpu.max"), "50000 100000") << "half a CPU: 50 ms of every 100 ms";
  // A limit of 0 is no limit: its file is not touched.
  auto open = cgroups.create();
  const auto none = TaskCgroups::limit(open, 0, 0, 0);
  EXPECT_FALSE(none.memory || none.pids || none.cpu);
  EXPECT_FALSE(fs::exists(open.dir + "/memory.max"));
}

// Where the hierarchy does not delegate a controller, its file is not
// there to write (here: a directory in its place): that limit is reported
// as not in force, and the runner falls back to a per-process limit
// (task_runner.cpp); the others still hold.
TEST(TaskCgroupsOnATree, AControllerNotOfferedIsReportedAsNotInForce) {
  Tree t;
  TaskCgroups cgroups(t.base, t.records);
  auto g = cgroups.create();
  fs::create_directory(g.dir + "/memory.max");
  const auto in_force = TaskCgroups::limit(g, 1 << 20, 10, 100);
  EXPECT_FALSE(in_force.memory);
  EXPECT_TRUE(in_force.pids);
  EXPECT_TRUE(in_force.cpu);
}

// The whole leaf is killed: every member it lists gets SIGKILL (no
// cgroup.kill here, as on kernels before 5.14). A group that does not
// empty (a file tree never does) keeps its record for the next
// incarnation; one that is gone is forgotten.
TEST(TaskCgroupsOnATree, EveryMemberOfTheLeafIsKilledAndAGroupThatStaysKeepsItsRecord) {
  Tree t;
  TaskCgroups cgroups(t.base, t.records);
  auto g = cgroups.create();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  std::ofstream(g.dir + "/cgroup.procs") << child << "\n";
  EXPECT_FALSE(cgroups.kill_and_remove(g, std::chrono::milliseconds(50)));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_TRUE(fs::exists(t.records + "/cg-" + g.name)) << "not emptied: kept for the next incarnation";
  fs::remove_all(g.dir);
  EXPECT_TRUE(cgroups.kill_and_remove(g, std::chrono::milliseconds(50)));
  EXPECT_FALSE(fs::exists(t.records + "/cg-" + g.name));
}

// The operator's side of the same: a task_cgroup that is no cgroup v2
// directory is refused with what is wrong, and no group is made.
TEST(TaskCgroupsOnATree, ADirectoryThatIsNoCgroupIsRefusedWithTheReason) {
  Tree t;
  fs::remove(t.base + "/cgroup.procs");
  TaskCgroups cgroups(t.base, t.records);
  EXPECT_FALSE(cgroups.available());
  EXPECT_EQ(cgroups.unavailable_reason(),
            "cannot use '" + t.base + "' as a cgroup v2 directory: no cgroup.procs in it");
  std::string why;
  EXPECT_TRUE(cgroups.create(&why).name.empty());
  EXPECT_EQ(why, cgroups.unavailable_reason());
}

}  // namespace
