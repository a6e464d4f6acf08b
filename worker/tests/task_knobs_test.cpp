// A task's own knobs (docs/scheduling.md, "Chains"): its timeout is a
// failure of that task (its on_error decides what follows), within the
// run's; its parameter values go over the run's, for it alone.
#include <gtest/gtest.h>

#include "baton/protocol/vocabulary.h"
#include "baton/worker/task_runner.h"
#include "task_test_support.h"

using namespace baton;
using namespace baton::worker;
using namespace std::chrono_literals;

using namespace baton::worker::testing;

TEST(TaskKnobs, ATasksTimeoutFailsThatTaskAndItsOnErrorDecides) {
  auto slow = builtin("SLEEP", "5s");
  slow.name = "slow";
  slow.timeout_ms = 200;
  slow.on_error = protocol::TaskOnError::continue_;
  TaskRunner r;
  const auto t0 = std::chrono::steady_clock::now();
  auto f = r.run(ctx(), {slow, builtin("LOG", "cleanup ran")});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(f.outcome, protocol::Outcome::failed) << "a task's timeout is its failure, not the run's timeout";
  EXPECT_NE(f.error.find("slow: timed out after its timeout of 200ms"), std::string::npos) << f.error;
  EXPECT_EQ(f.stdout_tail, "cleanup ran\n") << "on_error continue: the chain went on";
  ASSERT_EQ(f.tasks.size(), 2u);
  EXPECT_FALSE(f.tasks[0].ok);

  slow.on_error = protocol::TaskOnError::ignore;
  TaskRunner ignoring;
  EXPECT_EQ(ignoring.run(ctx(), {slow, builtin("NOOP")}).outcome, protocol::Outcome::succeeded);
}

TEST(TaskKnobs, TheRunsTimeoutStillEndsTheRunWhenItComesFirst) {
  auto slow = builtin("SLEEP", "5s");
  slow.timeout_ms = 3000;
  TaskRunner r;
  auto f = r.run(ctx(200ms), {slow});
  EXPECT_EQ(f.outcome, protocol::Outcome::timed_out);
}

TEST(TaskKnobs, ATasksParametersGoOverTheRunsForItAlone) {
  auto c = ctx();
  c.parameters = {{"table", "orders"}, {"day", "2026-11-28"}};
  auto first = builtin("LOG", "{{param.table}} {{param.day}}");
  first.parameters = {{"table", "invoices"}};
  auto second = builtin("LOG", "{{param.table}} {{param.day}}");
  TaskRunner r;
  auto f = r.run(c, {first, second});
  EXPECT_EQ(f.outcome, protocol::Outcome::succeeded) << f.error;
  EXPECT_EQ(f.stdout_tail, "invoices 2026-11-28\norders 2026-11-28\n");
}
