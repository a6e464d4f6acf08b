#include "baton/worker_core/task_environment.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace baton::worker_core;

TEST(TaskEnvironment, OnlyAllowlistedWorkerVariablesThenBatonsThenTheJobs) {
  const std::vector<std::string> worker{
      "PATH=/usr/bin:/bin",      "HOME=/var/lib/baton", "LC_ALL=C.UTF-8", "PGPASSWORD=hunter2",
      "AWS_SECRET_ACCESS_KEY=k", "BATON_RUN_ID=999",    "=odd",           "NOEQUALS"};
  const auto env = task_environment(worker, default_task_env_allowlist(), {42, 3, "tok"}, {{"region", "eu"}},
                                    {{"PATH", "/opt/tool/bin"}, {"MODE", "fast"}});
  EXPECT_EQ(env, (std::vector<std::string>{"BATON_ATTEMPT=3", "BATON_FENCE_TOKEN=tok", "BATON_PARAM_REGION=eu",
                                           "BATON_RUN_ID=42", "HOME=/var/lib/baton", "LC_ALL=C.UTF-8", "MODE=fast",
                                           "PATH=/opt/tool/bin"}));
}

TEST(TaskEnvironment, AnOperatorsAllowlistCanPassMoreOrLess) {
  const std::vector<std::string> worker{"PATH=/bin", "HTTP_PROXY=http://proxy:3128", "HTTPS_PROXY=x", "HOME=/h"};
  const auto env = task_environment(worker, {"HTTP*", "PATH"}, {1, 1, "t"}, {}, {});
  EXPECT_EQ(env, (std::vector<std::string>{"BATON_ATTEMPT=1", "BATON_FENCE_TOKEN=t", "BATON_RUN_ID=1", "HTTPS_PROXY=x",
                                           "HTTP_PROXY=http://proxy:3128", "PATH=/bin"}));
}
