#include "baton/worker_core/task_environment.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::worker_core;

TEST(TaskEnvironment, OnlyAllowlistedWorkerVariablesThenBatonsThenTheJobs) {
  const std::vector<std::string> worker{
      "PATH=/usr/bin:/bin",      "HOME=/var/lib/baton", "LC_ALL=C.UTF-8", "PGPASSWORD=hunter2",
      "AWS_SECRET_ACCESS_KEY=k", "BATON_RUN_ID=999",    "=odd",           "NOEQUALS"};
  const auto env = task_environment(worker, default_task_env_allowlist(), {42, 3, "tok"}, {"failed", 2, "w7"},
                                    {{"region", "eu"}}, {{"PATH", "/opt/tool/bin"}, {"MODE", "fast"}});
  EXPECT_EQ(env, (std::vector<std::string>{"BATON_ATTEMPT=3", "BATON_FENCE_TOKEN=tok", "BATON_PARAM_REGION=eu",
                                           "BATON_PREVIOUS_ATTEMPT=2", "BATON_PREVIOUS_OUTCOME=failed",
                                           "BATON_PREVIOUS_WORKER=w7", "BATON_RUN_ID=42", "HOME=/var/lib/baton",
                                           "LC_ALL=C.UTF-8", "MODE=fast", "PATH=/opt/tool/bin"}));
}

TEST(TaskEnvironment, AnOperatorsAllowlistCanPassMoreOrLess) {
  const std::vector<std::string> worker{"PATH=/bin", "HTTP_PROXY=http://proxy:3128", "HTTPS_PROXY=x", "HOME=/h"};
  const auto env = task_environment(worker, {"HTTP*", "PATH"}, {1, 1, "t"}, {}, {}, {});
  EXPECT_EQ(env,
            (std::vector<std::string>{"BATON_ATTEMPT=1", "BATON_FENCE_TOKEN=t", "BATON_PREVIOUS_OUTCOME=none",
                                      "BATON_RUN_ID=1", "HTTPS_PROXY=x", "HTTP_PROXY=http://proxy:3128", "PATH=/bin"}));
}

// Issue 37, item 3: an attempt is told what became of the one before it; a
// first attempt that there was none, and an attempt after the first whose
// leader said nothing (an older one) that nobody knows -- never "none".
TEST(TaskEnvironment, AnAttemptIsToldWhatBecameOfThePreviousOne) {
  EXPECT_EQ(attempt_facts({9, 2, "t"}, {"succeeded_unacknowledged", 1, "w1"}),
            (std::map<std::string, std::string>{{"ATTEMPT", "2"},
                                                {"FENCE_TOKEN", "t"},
                                                {"PREVIOUS_ATTEMPT", "1"},
                                                {"PREVIOUS_OUTCOME", "succeeded_unacknowledged"},
                                                {"PREVIOUS_WORKER", "w1"},
                                                {"RUN_ID", "9"}}));
  EXPECT_EQ(attempt_facts({9, 1, "t"}, {}).at("PREVIOUS_OUTCOME"), "none");
  EXPECT_EQ(attempt_facts({9, 1, "t"}, {}).count("PREVIOUS_ATTEMPT"), 0u);
  EXPECT_EQ(attempt_facts({9, 3, "t"}, {}).at("PREVIOUS_OUTCOME"), "unknown");
}
