// The exit record's text (exit_record.h): what the worker writes, what the
// supervisor appends, and what a next incarnation makes of it -- torn or
// foreign files included.
#include "baton/worker_core/exit_record.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

using namespace baton;
using namespace baton::worker_core;

namespace {
const protocol::AttemptRef ref{42, 2, "5b0c0000-0000-4000-8000-000000000001"};
int exited(int code) { return code << 8; }  // a wait status, as waitpid makes it
}  // namespace

TEST(ExitRecord, AStatusRecordedByTheSupervisorBecomesTheAttemptsFinish) {
  const std::string header = exit_record_header(ref, false);
  EXPECT_EQ(header, "run_id=42 attempt=2 lease_token=5b0c0000-0000-4000-8000-000000000001 any_exit=0\n");
  auto r = parse_exit_record(header + "exit_status=0\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ref, ref);
  EXPECT_EQ(r->wait_status, 0);
  auto f = finish_of(*r);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->ref, ref);
  EXPECT_EQ(f->outcome, protocol::Outcome::succeeded);
  EXPECT_EQ(f->exit_code, 0);
  EXPECT_TRUE(f->error.empty());

  f = finish_of(*parse_exit_record(header + "exit_status=" + std::to_string(exited(3)) + "\n"));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outcome, protocol::Outcome::failed);
  EXPECT_EQ(f->exit_code, 3);
  EXPECT_EQ(f->error, "exit code 3");
  f = finish_of(*parse_exit_record(header + "exit_status=9\n"));  // killed by SIGKILL
  ASSERT_TRUE(f);
  EXPECT_EQ(f->exit_code, 137);
  f = finish_of(*parse_exit_record(exit_record_header(ref, true) + "exit_status=" + std::to_string(exited(1)) + "\n"));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->outcome, protocol::Outcome::succeeded) << "an ignored error";
}

TEST(ExitRecord, ATaskThatDidNotEndOnItsOwnOrATornFileReportsNothing) {
  const std::string header = exit_record_header(ref, false);
  auto none = parse_exit_record(header);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->wait_status);
  EXPECT_FALSE(finish_of(*none)) << "killed with its worker: nothing to report";
  auto torn = parse_exit_record(header + "exit_stat");
  ASSERT_TRUE(torn);
  EXPECT_FALSE(torn->wait_status) << "a status not written whole is not one";
  EXPECT_FALSE(parse_exit_record(header.substr(0, 20)));
  EXPECT_FALSE(parse_exit_record(""));
  EXPECT_FALSE(parse_exit_record("not a record\n"));
  EXPECT_FALSE(parse_exit_record("run_id=0 attempt=1 lease_token=x any_exit=0\n"));
  EXPECT_FALSE(parse_exit_record("run_id=1 attempt=1 lease_token= any_exit=0\n"));
}
