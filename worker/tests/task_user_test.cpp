// Tasks under their own user and resource limits (task_user.h,
// docs/security.md "Task users and resources"): real processes, run as root
// as the suite is (switching users needs it).
#include "baton/worker/task_user.h"
#include "baton/worker/task_runner.h"

#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
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

protocol::Task user_program(std::vector<std::string> argv) {
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
  auto f = r.run(ctx(&u), {user_program({"/bin/sh", "-c",
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
  auto f = as_task_user.run(ctx(&u), {user_program({"/bin/sh", "-c", probe})});
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
  auto g = as_worker.run(ctx(nullptr), {user_program({"/bin/sh", "-c", probe})});
  EXPECT_NE(g.stdout_tail.find("secret-worker-credential"), std::string::npos) << g.stdout_tail;
  EXPECT_NE(g.stdout_tail.find("credential=0"), std::string::npos) << g.stdout_tail;
}

// Security review N1: a worker that is not root but holds CAP_SETUID,
// CAP_SETGID and CAP_KILL (the packaged unit's ambient capabilities) and has
// no task user is refused at its config, naming the setting; and should one
// run all the same, its tasks hold no capability (they cannot become root).
TEST(TaskUser, AWorkerHoldingCapabilitiesWithoutATaskUserIsRefused) {
  constexpr unsigned long long all = (1ull << CAP_SETUID) | (1ull << CAP_SETGID) | (1ull << CAP_KILL);
  const std::string problem = capabilities_without_task_user_problem(998, all);
  EXPECT_NE(problem.find("is not set, but the worker (uid 998) holds CAP_SETUID, CAP_SETGID, CAP_KILL"),
            std::string::npos)
      << problem;
  EXPECT_NE(problem.find("set task_user"), std::string::npos) << problem;
  EXPECT_NE(capabilities_without_task_user_problem(998, 1ull << CAP_KILL), "") << "any one of them";
  EXPECT_EQ(capabilities_without_task_user_problem(998, 1ull << CAP_NET_BIND_SERVICE), "") << "not these";
  EXPECT_EQ(capabilities_without_task_user_problem(998, 0), "");
  EXPECT_EQ(capabilities_without_task_user_problem(0, all), "") << "root runs its tasks as root by choice";
}

TEST(TaskUser, WithoutATaskUserATaskOfAWorkerHoldingCapabilitiesHoldsNone) {
  const TaskUser& u = task_user();
  ASSERT_NE(u.uid, 0u);
  // A child becomes what the packaged unit makes the worker: a user other
  // than root with CAP_SETUID, CAP_SETGID and CAP_KILL, ambient too. It runs
  // a task without a task user, which reports its capabilities and tries
  // to become root; the child writes what it saw to the pipe.
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(out[0]);
    auto fail = [&](const char* what) {
      (void)!::write(out[1], what, std::strlen(what));
      ::_exit(3);
    };
    if (::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) fail("keepcaps");
    if (::setresgid(u.gid, u.gid, u.gid) != 0 || ::setresuid(u.uid, u.uid, u.uid) != 0) fail("setresuid");
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
    const unsigned bits = (1u << CAP_SETUID) | (1u << CAP_SETGID) | (1u << CAP_KILL);
    caps[0].effective = caps[0].permitted = caps[0].inheritable = bits;
    if (::syscall(SYS_capset, &header, caps) != 0) fail("capset");
    for (int cap : {CAP_SETUID, CAP_SETGID, CAP_KILL})
      if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0) fail("ambient");
    std::string report = "refused=[" + capabilities_without_task_user_problem() + "]\n";
    TaskRunner r;
    auto f = r.run(ctx(nullptr), {user_program({"/bin/sh", "-c",
                                                "grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status; "
                                                "setpriv --reuid=0 true 2>/dev/null; echo became_root=$?"})});
    report += f.stdout_tail;
    (void)!::write(out[1], report.data(), report.size());
    ::_exit(0);
  }
  ::close(out[1]);
  std::string seen;
  char buf[512];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) seen.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << seen;
  EXPECT_NE(seen.find("refused=[is not set, but the worker"), std::string::npos) << seen;
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapAmb"})
    EXPECT_NE(seen.find(std::string(set) + ":\t0000000000000000"), std::string::npos) << set << " of the task:\n"
                                                                                      << seen;
  EXPECT_NE(seen.find("became_root="), std::string::npos) << seen;
  EXPECT_EQ(seen.find("became_root=0"), std::string::npos) << "the task became root:\n" << seen;
}

TEST(TaskResources, AForkBombMeetsItsPidsLimitWhileTheWorkerAndAnotherTaskCarryOn) {
  const TaskUser& u = task_user();
  ASSERT_NE(u.uid, 0u);
  // Another task of the same user, already running (an exec, no fork).
  auto other = std::async(std::launch::async, [&] {
    TaskRunner r;
    return r.run(ctx(&u), {user_program({"/bin/sleep", "2"})});
  });
  std::this_thread::sleep_for(300ms);
  // A bounded bomb (100 children; unbounded would hurt this host if the
  // limit were missing): with pids 30 it cannot fork them all.
  auto bomb = user_program({"/bin/sh", "-c", "i=0; while [ $i -lt 100 ]; do /bin/sleep 5 & i=$((i+1)); done; wait"});
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
  auto t = user_program({"/usr/bin/python3", "-c", "b = bytearray(256 * 1024 * 1024); print('allocated')"});
  t.resources.memory_bytes = 64ll << 20;
  TaskRunner r;
  auto f = r.run(ctx(&u), {t});
  EXPECT_NE(f.outcome, protocol::Outcome::succeeded) << f.stdout_tail;
  EXPECT_EQ(f.stdout_tail.find("allocated"), std::string::npos);
  auto unlimited = user_program({"/usr/bin/python3", "-c", "b = bytearray(256 * 1024 * 1024); print('allocated')"});
  TaskRunner r2;
  auto g = r2.run(ctx(&u), {unlimited});
  EXPECT_EQ(g.outcome, protocol::Outcome::succeeded) << g.stderr_tail;
}
