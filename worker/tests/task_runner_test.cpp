#include "baton/worker/task_runner.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

using namespace baton;
using namespace baton::worker;
using namespace std::chrono_literals;

namespace {

protocol::Task program(std::vector<std::string> argv) {
  protocol::Task t;
  t.kind = protocol::TaskKind::program;
  t.command = std::move(argv);
  return t;
}
protocol::Task builtin(const std::string& b, const std::string& arg = "") {
  protocol::Task t;
  t.kind = protocol::TaskKind::builtin;
  t.builtin = b;
  t.argument = arg;
  return t;
}
AttemptContext ctx(std::chrono::milliseconds timeout = 0ms) {
  AttemptContext c;
  c.ref = {77, 2, "11111111-2222-4333-8444-555555555555"};
  c.timeout = timeout;
  return c;
}

}  // namespace

TEST(TaskRunner, ProgramGetsFenceEnvironmentAndOutputIsCaptured) {
  TaskRunner r;
  auto t = program({"/bin/sh", "-c",
                    "echo run=$BATON_RUN_ID attempt=$BATON_ATTEMPT fence=$BATON_FENCE_TOKEN x=$X; "
                    "pwd; echo oops >&2; exit 3"});
  t.env["X"] = "42";
  t.cwd = "/tmp";
  auto f = r.run(ctx(), {t});
  EXPECT_EQ(f.outcome, "FAILED");
  EXPECT_EQ(f.exit_code, 3);
  EXPECT_NE(f.stdout_tail.find("run=77 attempt=2 fence=11111111-2222-4333-8444-555555555555 x=42"), std::string::npos)
      << f.stdout_tail;
  EXPECT_NE(f.stdout_tail.find("/tmp"), std::string::npos);
  EXPECT_EQ(f.stderr_tail, "oops\n");
  EXPECT_NE(f.error.find("exit code 3"), std::string::npos);
}

TEST(TaskRunner, NoShellUnlessAsked) {
  TaskRunner r;
  auto f = r.run(ctx(), {program({"/bin/echo", "$HOME;", "rm", "-rf", "/"})});
  EXPECT_EQ(f.outcome, "SUCCEEDED");
  EXPECT_EQ(f.stdout_tail, "$HOME; rm -rf /\n");
}

TEST(TaskRunner, TimeoutKillsTheWholeProcessGroup) {
  TaskRunner r;
  std::string marker = "/tmp/baton-runner-grandchild-" + std::to_string(::getpid());
  std::filesystem::remove(marker);
  auto t0 = std::chrono::steady_clock::now();
  // The grandchild would write the marker after 2 s if it survived.
  auto f = r.run(ctx(300ms), {program({"/bin/sh", "-c", "(sleep 2; touch " + marker + ") & sleep 30"})});
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(f.outcome, "TIMED_OUT");
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
  EXPECT_EQ(f.outcome, "CANCELED");
  EXPECT_LT(took, 1200ms);
  EXPECT_EQ(f.stdout_tail.find("must not run"), std::string::npos);
}

TEST(TaskRunner, ChainStopsAtFirstFailureUnlessIgnored) {
  TaskRunner r;
  auto ignored = builtin("FAIL", "tolerated");
  ignored.ignore_error = true;
  auto f = r.run(ctx(), {builtin("LOG", "one"), ignored, builtin("SLEEP", "10ms"), builtin("FAIL", "boom"),
                         builtin("LOG", "never")});
  EXPECT_EQ(f.outcome, "FAILED");
  EXPECT_EQ(f.stdout_tail, "one\n");
  ASSERT_EQ(f.tasks.size(), 4u);
  EXPECT_FALSE(f.tasks[1].ok);
  EXPECT_NE(f.error.find("boom"), std::string::npos);
  TaskRunner ok;
  EXPECT_EQ(ok.run(ctx(), {builtin("NOOP"), ignored}).outcome, "SUCCEEDED");
}

TEST(TaskRunner, SqlNeedsANamedConnectionAndMissingProgramsFail) {
  TaskRunner r;
  protocol::Task sql;
  sql.kind = protocol::TaskKind::sql;
  sql.connection = "nope";
  sql.sql = "SELECT 1";
  auto f = r.run(ctx(), {sql});
  EXPECT_EQ(f.outcome, "FAILED");
  EXPECT_NE(f.error.find("no connection named 'nope'"), std::string::npos) << f.error;
  TaskRunner r2;
  auto g = r2.run(ctx(), {program({"/nonexistent/binary"})});
  EXPECT_EQ(g.outcome, "FAILED");
  EXPECT_EQ(g.exit_code, 127);
}
