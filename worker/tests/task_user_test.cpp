// Tasks under their own user and resource limits (task_user.h,
// docs/security.md "Task users and resources"): real processes, run as root
// as the suite is (switching users needs it).
#include "baton/worker/task_user.h"
#include "baton/worker/task_runner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

using namespace baton;
using namespace baton::worker;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr const char* user_name = "baton-task-test";

/// The test's task user, created once on this host (a system user with no
/// home and no login).
const TaskUser& task_user() {
  static const TaskUser user = [] {
    if (::geteuid() != 0) ADD_FAILURE() << "these tests switch users: run them as root (the suite does)";
    std::string why;
    if (!resolve_task_user(user_name, &why))
      (void)!std::system(
          "useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin baton-task-test");
    auto u = resolve_task_user(user_name, &why);
    if (!u) ADD_FAILURE() << why;
    return u.value_or(TaskUser{});
  }();
  return user;
}

protocol::Task program(std::vector<std::string> argv) {
  protocol::Task t;
  t.kind = protocol::TaskKind::program;
  t.command = std::move(argv);
  return t;
}

AttemptContext ctx(const TaskUser* user, std::chrono::milliseconds timeout = 10s) {
  AttemptContext c;
  c.ref = {5, 1, "11111111-2222-4333-8444-555555555555"};
  c.timeout = timeout;
  c.task_user = user;
  return c;
}

/// How many processes of `uid` exist now.
int processes_of(uid_t uid) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] < '0' || name[0] > '9') continue;
    std::ifstream status(entry.path() / "status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind("Uid:", 0) == 0) {
        std::istringstream fields(line.substr(4));
        uid_t real = 0;
        fields >> real;
        if (real == uid) ++n;
        break;
      }
  }
  return n;
}

/// A directory private to the worker's user, as its spool is, holding a
/// credential as the worker keeps it.
struct WorkerSecrets {
  std::string dir;
  WorkerSecrets() {
    char tmpl[] = "/tmp/baton-task-user-XXXXXX";
    dir = ::mkdtemp(tmpl);
    ::chmod(dir.c_str(), 0700);
    fs::create_directories(dir + "/outbox");
    std::ofstream(dir + "/credential") << "secret-worker-credential\n";
    ::chmod((dir + "/credential").c_str(), 0600);
  }
  ~WorkerSecrets() { fs::remove_all(dir); }
};

}  // namespace

TEST(TaskUser, ResolvingRefusesUnknownUsersRootAndTheWorkersOwnUser) {
  task_user();
  std::string why;
  EXPECT_TRUE(resolve_task_user(user_name, &why)) << why;
  EXPECT_FALSE(resolve_task_user("no-such-user-baton", &why));
  EXPECT_NE(why.find("no user named 'no-such-user-baton'"), std::string::npos) << why;
  EXPECT_FALSE(resolve_task_user("root", &why));
  EXPECT_NE(why.find("is root"), std::string::npos) << why;
  EXPECT_FALSE(resolve_task_user("", &why));
  EXPECT_EQ(task_user_switch_problem(), "");  // root may switch
}

TEST(TaskUser, ATaskRunsAsTheTaskUserWithItsOwnIdentity) {
  const TaskUser& u = task_user();
  TaskRunner r;
  auto f = r.run(ctx(&u), {program({"/bin/sh", "-c",
                                    "echo uid=$(id -u) gid=$(id -g) groups=$(id -G); "
                                    "echo home=$HOME user=$USER"})});
  ASSERT_EQ(f.outcome, protocol::Outcome::succeeded) << f.stderr_tail;
  EXPECT_NE(f.stdout_tail.find("uid=" + std::to_string(u.uid) + " gid=" + std::to_string(u.gid)), std::string::npos)
      << f.stdout_tail;
  EXPECT_EQ(f.stdout_tail.find(" 0\n"), std::string::npos) << "in the root group: " << f.stdout_tail;
  EXPECT_NE(f.stdout_tail.find("home=/nonexistent user=baton-task-test"), std::string::npos) << f.stdout_tail;
}

TEST(TaskUser, ATaskCannotReadTheWorkersCredentialSpoolOrEnvironmentNorSignalIt) {
  const TaskUser& u = task_user();
  WorkerSecrets secrets;
  const std::string me = std::to_string(::getpid());
  const std::string probe = "cat " + secrets.dir + "/credential; echo credential=$?; " +    //
                            "ls " + secrets.dir + "; echo spool=$?; " +                     //
                            "touch " + secrets.dir + "/outbox/forged; echo outbox=$?; " +   //
                            "cat /proc/" + me + "/environ >/dev/null; echo environ=$?; " +  //
                            "kill -0 " + me + "; echo signal=$?";
  TaskRunner as_task_user;
  auto f = as_task_user.run(ctx(&u), {program({"/bin/sh", "-c", probe})});
  for (const char* what : {"credential=", "spool=", "outbox=", "environ=", "signal="}) {
    EXPECT_NE(f.stdout_tail.find(what), std::string::npos) << f.stdout_tail;
    EXPECT_EQ(f.stdout_tail.find(std::string(what) + "0\n"), std::string::npos)
        << "the task user got through: " << what << "\n"
        << f.stdout_tail;
  }
  EXPECT_EQ(f.stdout_tail.find("secret-worker-credential"), std::string::npos);
  EXPECT_FALSE(fs::exists(secrets.dir + "/outbox/forged"));
  // The same task as the worker's own user reads all of it: what the task
  // user is for.
  TaskRunner as_worker;
  auto g = as_worker.run(ctx(nullptr), {program({"/bin/sh", "-c", probe})});
  EXPECT_NE(g.stdout_tail.find("secret-worker-credential"), std::string::npos) << g.stdout_tail;
  EXPECT_NE(g.stdout_tail.find("credential=0"), std::string::npos) << g.stdout_tail;
}

TEST(TaskResources, AForkBombMeetsItsPidsLimitWhileTheWorkerAndAnotherTaskCarryOn) {
  const TaskUser& u = task_user();
  ASSERT_NE(u.uid, 0u);
  // Another task of the same user, already running (an exec, no fork).
  auto other = std::async(std::launch::async, [&] {
    TaskRunner r;
    return r.run(ctx(&u), {program({"/bin/sleep", "2"})});
  });
  std::this_thread::sleep_for(300ms);
  // A bounded bomb (100 children; unbounded would hurt this host if the
  // limit were missing): with pids 30 it cannot fork them all.
  auto bomb = program({"/bin/sh", "-c", "i=0; while [ $i -lt 100 ]; do /bin/sleep 5 & i=$((i+1)); done; wait"});
  bomb.resources.pids = 30;
  TaskRunner r;
  auto bombed = std::async(std::launch::async, [&] { return r.run(ctx(&u, 20s), {bomb}); });
  std::this_thread::sleep_for(300ms);
  // The worker (another user) still forks and runs programs.
  const pid_t child = ::fork();
  if (child == 0) {
    ::execl("/bin/true", "true", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto f = bombed.get();
  EXPECT_EQ(f.outcome, protocol::Outcome::failed) << f.stdout_tail << f.stderr_tail;
  EXPECT_NE(f.stderr_tail.find("fork"), std::string::npos) << "the bomb forked freely: " << f.stderr_tail;
  auto o = other.get();
  EXPECT_EQ(o.outcome, protocol::Outcome::succeeded) << o.stderr_tail;
  // Nothing of either task is left.
  for (int i = 0; i < 100 && processes_of(u.uid) > 0; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(processes_of(u.uid), 0);
}

TEST(TaskResources, AMemoryLimitStopsATaskThatAllocatesPastIt) {
  const TaskUser& u = task_user();
  // 64 MiB of address space cannot hold a 256 MiB buffer (as a cgroup's
  // memory.max, or RLIMIT_AS where the host delegates no memory controller).
  auto t = program({"/usr/bin/python3", "-c", "b = bytearray(256 * 1024 * 1024); print('allocated')"});
  t.resources.memory_bytes = 64ll << 20;
  TaskRunner r;
  auto f = r.run(ctx(&u), {t});
  EXPECT_NE(f.outcome, protocol::Outcome::succeeded) << f.stdout_tail;
  EXPECT_EQ(f.stdout_tail.find("allocated"), std::string::npos);
  auto unlimited = program({"/usr/bin/python3", "-c", "b = bytearray(256 * 1024 * 1024); print('allocated')"});
  TaskRunner r2;
  auto g = r2.run(ctx(&u), {unlimited});
  EXPECT_EQ(g.outcome, protocol::Outcome::succeeded) << g.stderr_tail;
}
