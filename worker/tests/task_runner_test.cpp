#include "baton/worker/task_runner.h"
#include "baton/protocol/vocabulary.h"
#include "baton/worker/exit_records.h"
#include "baton/worker/task_supervisor.h"
#include "task_test_support.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace baton;
using namespace baton::worker;
using namespace std::chrono_literals;

using namespace baton::worker::testing;

TEST(TaskRunner, ProgramGetsFenceEnvironmentAndOutputIsCaptured) {
  TaskRunner r;
  auto t = program({"/bin/sh", "-c",
                    "echo run=$BATON_RUN_ID attempt=$BATON_ATTEMPT fence=$BATON_FENCE_TOKEN x=$X; "
                    "pwd; echo oops >&2; exit 3"});
  t.env["X"] = "42";
  t.cwd = "/tmp";
  auto f = r.run(ctx(), {t});
  EXPECT_EQ(f.outcome, protocol::Outcome::failed);
  EXPECT_EQ(f.exit_code, 3);
  EXPECT_NE(f.stdout_tail.find("run=77 attempt=2 fence=11111111-2222-4333-8444-555555555555 x=42"), std::string::npos)
      << f.stdout_tail;
  EXPECT_NE(f.stdout_tail.find("/tmp"), std::string::npos);
  EXPECT_EQ(f.stderr_tail, "oops\n");
  EXPECT_NE(f.error.find("exit code 3"), std::string::npos);
}

TEST(TaskRunner, OutputReachesTheCallbackWhileTheTaskRuns) {
  TaskRunner r;
  std::mutex m;
  std::string out, err;
  std::atomic<bool> first_seen{false};
  AttemptContext c = ctx();
  c.on_output = [&](int stream, const char* data, std::size_t n) {
    std::lock_guard lock(m);
    (stream == 0 ? out : err).append(data, n);
    if (out.find("first") != std::string::npos) first_seen = true;
  };
  // The task waits until its first line was seen by the callback: output is
  // delivered as it is printed, not at the end.
  auto marker = std::filesystem::temp_directory_path() / ("baton-output-" + std::to_string(::getpid()));
  std::filesystem::remove(marker);
  bool seen_while_running = false;
  std::thread watcher([&] {
    for (int i = 0; i < 500 && !first_seen; ++i) std::this_thread::sleep_for(10ms);
    seen_while_running = first_seen;
    std::ofstream(marker.string()) << "seen";
  });
  auto f = r.run(c, {program({"/bin/sh", "-c",
                              "echo first; echo warn >&2; i=0; while [ ! -e " + marker.string() +
                                  " ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; echo second"}),
                     builtin("LOG", "from a builtin")});
  watcher.join();
  std::filesystem::remove(marker);
  EXPECT_EQ(f.outcome, protocol::Outcome::succeeded);
  EXPECT_TRUE(seen_while_running);
  std::lock_guard lock(m);
  EXPECT_EQ(out, "first\nsecond\nfrom a builtin\n");
  EXPECT_EQ(err, "warn\n");
}

TEST(TaskRunner, NoShellUnlessAsked) {
  TaskRunner r;
  auto f = r.run(ctx(), {program({"/bin/echo", "$HOME;", "rm", "-rf", "/"})});
  EXPECT_EQ(f.outcome, protocol::Outcome::succeeded);
  EXPECT_EQ(f.stdout_tail, "$HOME; rm -rf /\n");
}

// Parameters reach a task as BATON_PARAM_* variables and {{param.NAME}} in
// its arguments and env values, each value one argument (no shell); a
// reference to a parameter the run does not have fails the task clearly.
TEST(TaskRunner, ParametersReachTheTask) {
  TaskRunner r;
  auto c = ctx();
  c.parameters = {{"region", "eu-west"}, {"note", "a b; $(id)"}};
  auto t = program(
      {"/bin/sh", "-c", "echo env=$BATON_PARAM_REGION arg=$0 note=$1 e=$E", "{{param.region}}", "{{param.note}}"});
  t.env["E"] = "<{{param.region}}>";
  auto f = r.run(c, {t, builtin("LOG", "region {{param.region}}")});
  EXPECT_EQ(f.outcome, protocol::Outcome::succeeded) << f.error;
  EXPECT_NE(f.stdout_tail.find("env=eu-west arg=eu-west note=a b; $(id) e=<eu-west>"), std::string::npos)
      << f.stdout_tail;
  EXPECT_NE(f.stdout_tail.find("region eu-west"), std::string::npos) << f.stdout_tail;

  TaskRunner missing;
  auto bad = missing.run(c, {program({"/bin/echo", "{{param.zone}}"})});
  EXPECT_EQ(bad.outcome, protocol::Outcome::failed);
  EXPECT_NE(bad.error.find("{{param.zone}} names a parameter the run does not have"), std::string::npos) << bad.error;
}

TEST(TaskRunner, TimeoutKillsTheWholeProcessGroup) {
  TaskRunner r;
  std::string marker = "/tmp/baton-runner-grandchild-" + std::to_string(::getpid());
  std::filesystem::remove(marker);
  auto t0 = std::chrono::steady_clock::now();
  // The grandchild would write the marker after 2 s if it survived.
  auto f = r.run(ctx(300ms), {program({"/bin/sh", "-c", "(sleep 2; touch " + marker + ") & sleep 30"})});
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(f.outcome, protocol::Outcome::timed_out);
  EXPECT_LT(took, 2s);
  std::this_thread::sleep_for(2500ms);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a grandchild outlived the timeout";
}

TEST(TaskRunner, CancelStopsTheProcessWithinASecond) {
  TaskRunner r;
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);
    r.cancel("operator", false);
  });
  auto t0 = std::chrono::steady_clock::now();
  auto f = r.run(ctx(), {program({"/bin/sleep", "30"}), builtin("LOG", "must not run")});
  auto took = std::chrono::steady_clock::now() - t0;
  canceller.join();
  EXPECT_EQ(f.outcome, protocol::Outcome::canceled);
  EXPECT_LT(took, 1200ms);
  EXPECT_EQ(f.stdout_tail.find("must not run"), std::string::npos);
}

// on_error continue: the chain goes on and the run fails at its end with the
// first such error; ignore: the failure does not count.
TEST(TaskRunner, OnErrorContinueRunsTheRestAndFailsAtTheEnd) {
  TaskRunner r;
  auto first = builtin("FAIL", "first problem");
  first.on_error = protocol::TaskOnError::continue_;
  auto second = builtin("FAIL", "second problem");
  second.on_error = protocol::TaskOnError::continue_;
  auto f = r.run(ctx(), {first, second, builtin("LOG", "cleanup ran")});
  EXPECT_EQ(f.outcome, protocol::Outcome::failed);
  EXPECT_EQ(f.stdout_tail, "cleanup ran\n");
  ASSERT_EQ(f.tasks.size(), 3u);
  EXPECT_FALSE(f.tasks[0].ok);
  EXPECT_FALSE(f.tasks[1].ok);
  EXPECT_TRUE(f.tasks[2].ok);
  EXPECT_NE(f.error.find("first problem"), std::string::npos) << f.error;

  TaskRunner ignoring;
  auto tolerated = builtin("FAIL", "tolerated");
  tolerated.on_error = protocol::TaskOnError::ignore;
  auto ok = ignoring.run(ctx(), {tolerated, builtin("LOG", "after")});
  EXPECT_EQ(ok.outcome, protocol::Outcome::succeeded);
  EXPECT_FALSE(ok.tasks[0].ok) << "recorded as failed, not counted";
}

TEST(TaskRunner, ChainStopsAtFirstFailureUnlessIgnored) {
  TaskRunner r;
  auto ignored = builtin("FAIL", "tolerated");
  ignored.ignore_error = true;
  auto f = r.run(ctx(), {builtin("LOG", "one"), ignored, builtin("SLEEP", "10ms"), builtin("FAIL", "boom"),
                         builtin("LOG", "never")});
  EXPECT_EQ(f.outcome, protocol::Outcome::failed);
  EXPECT_EQ(f.stdout_tail, "one\n");
  ASSERT_EQ(f.tasks.size(), 4u);
  EXPECT_FALSE(f.tasks[1].ok);
  EXPECT_NE(f.error.find("boom"), std::string::npos);
  TaskRunner ok;
  EXPECT_EQ(ok.run(ctx(), {builtin("NOOP"), ignored}).outcome, protocol::Outcome::succeeded);
}

TEST(TaskRunner, SqlNeedsANamedConnectionAndMissingProgramsFail) {
  TaskRunner r;
  protocol::Task sql;
  sql.kind = protocol::TaskKind::sql;
  sql.connection = "nope";
  sql.sql = "SELECT 1";
  auto f = r.run(ctx(), {sql});
  EXPECT_EQ(f.outcome, protocol::Outcome::failed);
  EXPECT_NE(f.error.find("no connection named 'nope'"), std::string::npos) << f.error;
  TaskRunner r2;
  auto g = r2.run(ctx(), {program({"/nonexistent/binary"})});
  EXPECT_EQ(g.outcome, protocol::Outcome::failed);
  EXPECT_EQ(g.exit_code, 127);
}

// ---- task trees (task_supervisor.h) ----------------------------------------
namespace {

/// A shell command that leaves a detached grandchild (own session, re-parented
/// away from the task) sleeping for a long time, and writes its pid to `file`.
std::vector<std::string> leaves_grandchild(const std::string& file, const std::string& then = "exit 0") {
  return {"/bin/sh", "-c", "setsid sh -c 'echo $$ > " + file + "; exec sleep 60' & sleep 0.2; " + then};
}

pid_t read_pid(const std::string& file) {
  for (int i = 0; i < 100; ++i) {
    std::ifstream in(file);
    pid_t pid = 0;
    if (in >> pid && pid > 0) return pid;
    std::this_thread::sleep_for(20ms);
  }
  return 0;
}

/// True if `pid` is gone (or a zombie nobody reaps) within `within`.
bool dies(pid_t pid, std::chrono::milliseconds within) {
  for (auto end = std::chrono::steady_clock::now() + within; std::chrono::steady_clock::now() < end;) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto close = all.rfind(')');
    if (all.empty() || (close != std::string::npos && all[close + 2] == 'Z')) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

std::string temp_file(const char* name) {
  return "/tmp/baton-tree-" + std::string(name) + "-" + std::to_string(::getpid());
}

}  // namespace

// A detached grandchild does not outlive the attempt that started it.
TEST(TaskTree, DetachedGrandchildDiesWhenTheTaskEnds) {
  const std::string file = temp_file("ends");
  std::filesystem::remove(file);
  TaskRunner r;
  auto fin = r.run(ctx(), {program(leaves_grandchild(file))});
  EXPECT_EQ(fin.outcome, protocol::Outcome::succeeded) << fin.error;
  const pid_t grandchild = read_pid(file);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dies(grandchild, 2s)) << "pid " << grandchild << " outlived its attempt";
  std::filesystem::remove(file);
}

// Cancel kills the whole tree, not only the task's process group.
TEST(TaskTree, CancelKillsTheDetachedGrandchild) {
  const std::string file = temp_file("cancel");
  std::filesystem::remove(file);
  TaskRunner r;
  std::thread canceller([&] {
    read_pid(file);
    r.cancel("test", false);
  });
  auto fin = r.run(ctx(), {program(leaves_grandchild(file, "sleep 60"))});
  canceller.join();
  EXPECT_EQ(fin.outcome, protocol::Outcome::canceled);
  const pid_t grandchild = read_pid(file);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dies(grandchild, 2s));
  std::filesystem::remove(file);
}

// Nobody renews the dead-man's switch (a paused or stalled worker): the tree
// kills itself after the switch timeout.
TEST(TaskTree, MissedRenewalsKillTheTree) {
  const std::string file = temp_file("switch");
  std::filesystem::remove(file);
  TaskRunner r;
  auto c = ctx();
  c.switch_timeout = 400ms;
  const auto t0 = std::chrono::steady_clock::now();
  auto fin = r.run(c, {program(leaves_grandchild(file, "sleep 60"))});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(fin.outcome, protocol::Outcome::failed);
  const pid_t grandchild = read_pid(file);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dies(grandchild, 2s));
  std::filesystem::remove(file);
}

// ... while renewals keep it alive for as long as they come.
TEST(TaskTree, RenewalsKeepTheTaskRunning) {
  TaskRunner r;
  auto c = ctx();
  c.switch_timeout = 300ms;
  std::atomic<bool> done{false};
  std::thread renewer([&] {
    while (!done) {
      r.renew();
      std::this_thread::sleep_for(50ms);
    }
  });
  auto fin = r.run(c, {program({"/bin/sleep", "1"})});
  done = true;
  renewer.join();
  EXPECT_EQ(fin.outcome, protocol::Outcome::succeeded) << fin.error;
}

// The worker dies (kill -9): the supervisor sees its end of the control
// socket close and kills the tree at once.
TEST(TaskTree, WorkerDeathKillsTheTree) {
  const std::string file = temp_file("death");
  std::filesystem::remove(file);
  const pid_t worker = ::fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    TaskRunner r;
    r.run(ctx(), {program(leaves_grandchild(file, "sleep 60"))});
    ::_exit(0);
  }
  const pid_t grandchild = read_pid(file);
  ASSERT_GT(grandchild, 0);
  ::kill(worker, SIGKILL);
  ::waitpid(worker, nullptr, 0);
  EXPECT_TRUE(dies(grandchild, 2s)) << "pid " << grandchild << " outlived its killed worker";
  std::filesystem::remove(file);
}

// A new incarnation of a worker finds the supervisors its predecessor left
// alive (here: the old worker is stopped, so its control socket never
// closes and, without a switch, nothing else would end the tree) and kills
// their whole trees, detached grandchildren included, before it attaches.
TEST(TaskTree, NewIncarnationKillsTreesLeftByThePreviousOne) {
  const std::string file = temp_file("leftover");
  const std::string trees = temp_file("leftover-trees");
  std::filesystem::remove(file);
  std::filesystem::remove_all(trees);
  const pid_t old_worker = ::fork();
  ASSERT_GE(old_worker, 0);
  if (old_worker == 0) {
    TaskRunner r;
    AttemptContext c = ctx();
    c.on_process = [&](int pid, bool started) {
      if (started) record_supervisor(trees, pid);
    };
    r.run(c, {program(leaves_grandchild(file, "sleep 60"))});
    ::_exit(0);
  }
  const pid_t grandchild = read_pid(file);
  ASSERT_GT(grandchild, 0);
  ::kill(old_worker, SIGSTOP);
  EXPECT_FALSE(dies(grandchild, 300ms));
  EXPECT_EQ(kill_leftover_supervisors(trees, 3s), 1);
  EXPECT_TRUE(dies(grandchild, 2s)) << "pid " << grandchild << " outlived the cleanup";
  EXPECT_TRUE(std::filesystem::is_empty(trees));
  ::kill(old_worker, SIGKILL);
  ::waitpid(old_worker, nullptr, 0);
  std::filesystem::remove(file);
  std::filesystem::remove_all(trees);
}

// A record whose pid now names another process (pid reuse: the start time
// differs) is dropped, and that process is left alone.
TEST(TaskTree, LeftoverRecordOfAReusedPidIsIgnored) {
  const std::string trees = temp_file("reused-trees");
  std::filesystem::remove_all(trees);
  std::filesystem::create_directories(trees);
  std::ofstream(trees + "/" + std::to_string(::getpid())) << "1\n";
  EXPECT_EQ(kill_leftover_supervisors(trees, 1s), 0);
  EXPECT_TRUE(std::filesystem::is_empty(trees));
  std::filesystem::remove_all(trees);
}

namespace {

/// Where the cgroup tests make their groups: the worker's own "auto" when
/// this host has a writable cgroup v2 hierarchy; otherwise a cgroup2 file
/// system this test mounts itself (it runs as root, like CI), so a host
/// that merely lacks the mount still runs the tests.
std::string cgroup_setting() {
  if (TaskCgroups("auto", "/tmp").available()) return "auto";
  const std::string mount = "/tmp/baton-test-cgroup2";
  std::filesystem::create_directories(mount);
  if (!std::filesystem::exists(mount + "/cgroup.procs"))
    (void)!std::system(("mount -t cgroup2 cgroup2 " + mount + " 2>/dev/null").c_str());
  return mount + "/baton-tasks-test";
}

/// The supervisor of the attempt running in `r`'s thread, once started.
struct SupervisorPid {
  std::atomic<int> pid{0};
  std::function<void(int, bool)> hook() {
    return [this](int p, bool started) {
      if (started) pid = p;
    };
  }
};

}  // namespace

// The supervisor itself is killed (kill -9, the OOM killer): the task's main
// process dies with it (parent-death signal), and its detached descendants,
// re-parented to init, die because the tree's cgroup is emptied before the
// attempt finishes.
TEST(TaskTree, KilledSupervisorsDetachedDescendantsDieWithTheirCgroup) {
  const std::string file = temp_file("cg-sup");
  const std::string trees = temp_file("cg-sup-trees");
  std::filesystem::remove(file);
  std::filesystem::remove_all(trees);
  TaskCgroups cgroups(cgroup_setting(), trees);
  ASSERT_TRUE(cgroups.available()) << cgroups.unavailable_reason();
  TaskRunner r;
  AttemptContext c = ctx();
  c.cgroups = &cgroups;
  SupervisorPid sup;
  c.on_process = sup.hook();
  std::thread killer([&] {
    read_pid(file);
    ::kill(sup.pid.load(), SIGKILL);
  });
  auto fin = r.run(c, {program(leaves_grandchild(file, "sleep 60"))});
  killer.join();
  EXPECT_EQ(fin.outcome, protocol::Outcome::failed);
  const pid_t grandchild = read_pid(file);
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(dies(grandchild, 200ms)) << "pid " << grandchild << " outlived the finish of its attempt";
  EXPECT_TRUE(std::filesystem::is_empty(trees)) << "the group's record is removed with the group";
  std::filesystem::remove(file);
  std::filesystem::remove_all(trees);
}

// Without a cgroup the same grandchild survives: the gap the group closes.
TEST(TaskTree, WithoutACgroupAKilledSupervisorsGrandchildSurvives) {
  const std::string file = temp_file("nocg-sup");
  std::filesystem::remove(file);
  TaskRunner r;
  AttemptContext c = ctx();
  SupervisorPid sup;
  c.on_process = sup.hook();
  std::thread killer([&] {
    read_pid(file);
    ::kill(sup.pid.load(), SIGKILL);
  });
  r.run(c, {program(leaves_grandchild(file, "sleep 60"))});
  killer.join();
  const pid_t grandchild = read_pid(file);
  ASSERT_GT(grandchild, 0);
  EXPECT_FALSE(dies(grandchild, 500ms));
  ::kill(grandchild, SIGKILL);
  std::filesystem::remove(file);
}

// A worker stopped while its task's supervisor was killed leaves a group
// holding the task's detached descendants; its next incarnation kills the
// group, from the record in the spool, before it attaches.
TEST(TaskTree, NewIncarnationKillsTheCgroupsItsPredecessorLeft) {
  const std::string file = temp_file("cg-left");
  const std::string trees = temp_file("cg-left-trees");
  const std::string sup_file = temp_file("cg-left-sup");
  std::filesystem::remove(file);
  std::filesystem::remove(sup_file);
  std::filesystem::remove_all(trees);
  const pid_t old_worker = ::fork();
  ASSERT_GE(old_worker, 0);
  if (old_worker == 0) {
    TaskCgroups cgroups(cgroup_setting(), trees);
    TaskRunner r;
    AttemptContext c = ctx();
    c.cgroups = &cgroups;
    c.on_process = [&](int pid, bool started) {
      if (started) std::ofstream(sup_file) << pid << '\n';
    };
    r.run(c, {program(leaves_grandchild(file, "sleep 60"))});
    ::_exit(0);
  }
  const pid_t grandchild = read_pid(file);
  const pid_t supervisor = read_pid(sup_file);
  ASSERT_GT(grandchild, 0);
  ASSERT_GT(supervisor, 0);
  ::kill(old_worker, SIGSTOP);
  ::kill(supervisor, SIGKILL);
  EXPECT_FALSE(dies(grandchild, 300ms)) << "nothing else should have killed it";
  TaskCgroups next(cgroup_setting(), trees);
  EXPECT_EQ(next.kill_leftovers(3s), 1);
  EXPECT_TRUE(dies(grandchild, 200ms)) << "pid " << grandchild << " outlived the cleanup";
  EXPECT_TRUE(std::filesystem::is_empty(trees));
  ::kill(old_worker, SIGKILL);
  ::waitpid(old_worker, nullptr, 0);
  for (const auto& f : {file, sup_file}) std::filesystem::remove(f);
  std::filesystem::remove_all(trees);
}

// A damaged record never makes the cleanup write outside a task group.
TEST(TaskTree, LeftoverCgroupRecordNamingAnotherDirectoryIsDropped) {
  const std::string trees = temp_file("cg-bad-trees");
  std::filesystem::remove_all(trees);
  std::filesystem::create_directories(trees);
  std::ofstream(trees + "/cg-w1-0") << "/sys/fs/cgroup\n";
  TaskCgroups cgroups(cgroup_setting(), trees);
  EXPECT_EQ(cgroups.kill_leftovers(1s), 0);
  EXPECT_TRUE(std::filesystem::is_empty(trees));
  std::filesystem::remove_all(trees);
}

TEST(TaskRunner, ATaskGetsOnlyTheAllowlistedPartOfTheWorkersEnvironment) {
  ::setenv("BATON_TEST_WORKER_SECRET", "hunter2", 1);
  TaskRunner r;
  auto t = program({"/bin/sh", "-c", "echo secret=${BATON_TEST_WORKER_SECRET:-absent} path=${PATH:+set} x=$X"});
  t.env["X"] = "declared";
  auto f = r.run(ctx(), {t});
  ::unsetenv("BATON_TEST_WORKER_SECRET");
  EXPECT_EQ(f.outcome, protocol::Outcome::succeeded);
  EXPECT_EQ(f.stdout_tail, "secret=absent path=set x=declared\n");
}

// The supervisor reports its task's status on the control socket as it
// reaps it, before it tears the tree down and exits: a supervisor killed in
// between (OOM killer, operator) no longer takes a success with it. The
// worker reads the report when its supervisor died of a signal.
TEST(TaskTree, TheSupervisorReportsItsTasksStatusBeforeItExits) {
  std::vector<std::string> words = {"/bin/sh", "-c", "exit 3"};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  int out[2], err[2];
  ASSERT_EQ(::pipe(out), 0);
  ASSERT_EQ(::pipe(err), 0);
  const SupervisedTask sup = start_supervised(argv.data(), envp, nullptr, out[1], err[1], 0ms);
  ::close(out[1]);
  ::close(err[1]);
  ASSERT_GT(sup.supervisor, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(sup.supervisor, &status, 0), sup.supervisor);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3);
  const auto reported = reported_task_status(sup.control_fd);
  ASSERT_TRUE(reported.has_value()) << "no status on the control socket";
  EXPECT_TRUE(WIFEXITED(*reported) && WEXITSTATUS(*reported) == 3) << *reported;
  ::close(sup.control_fd);
  ::close(out[0]);
  ::close(err[0]);
}

// Issue 37, item 3: the last task's supervisor records how the task ended in
// the attempt's exit record, before the worker hears of it; a task killed
// by its worker (here: cancelled) ends with no status recorded; an earlier
// task of a chain gets no record.
TEST(TaskRunner, TheLastTasksSupervisorRecordsItsEndInTheExitRecord) {
  const auto dir = std::filesystem::temp_directory_path() / ("baton-exits-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  AttemptContext c = ctx();
  c.exit_record_dir = dir.string();
  auto read = [&] { return read_exit_records(dir.string()); };
  {
    TaskRunner r;
    auto f = r.run(c, {program({"/bin/sh", "-c", "exit 3"})});
    EXPECT_EQ(f.exit_code, 3);
    auto records = read();
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].ref, c.ref);
    ASSERT_TRUE(records[0].wait_status.has_value());
    EXPECT_TRUE(WIFEXITED(*records[0].wait_status));
    EXPECT_EQ(WEXITSTATUS(*records[0].wait_status), 3);
    auto fin = worker_core::finish_of(records[0]);
    ASSERT_TRUE(fin);
    EXPECT_EQ(fin->outcome, protocol::Outcome::failed);
    EXPECT_EQ(fin->exit_code, 3);
    forget_exit_record(dir.string(), c.ref);
    EXPECT_TRUE(read().empty());
  }
  {
    TaskRunner r;
    std::thread canceller([&] {
      std::this_thread::sleep_for(300ms);
      r.cancel("operator", false);
    });
    r.run(c, {program({"/bin/sleep", "30"})});
    canceller.join();
    auto records = read();
    ASSERT_EQ(records.size(), 1u);
    EXPECT_FALSE(records[0].wait_status.has_value()) << "the worker ended it: no end of its own to report";
    forget_exit_record(dir.string(), c.ref);
  }
  {
    TaskRunner r;
    // The first task's end is not the attempt's; the last one is a builtin.
    auto f = r.run(c, {program({"/bin/true"}), protocol::Task{protocol::TaskKind::builtin,
                                                              "",
                                                              {},
                                                              {},
                                                              "",
                                                              "",
                                                              "",
                                                              protocol::Builtin::noop,
                                                              "",
                                                              false,
                                                              protocol::TaskOnError::stop,
                                                              {}}});
    EXPECT_EQ(f.outcome, protocol::Outcome::succeeded);
    EXPECT_TRUE(read().empty());
  }
  std::filesystem::remove_all(dir);
}
