#include "baton/leader/job_files.h"

#include <gtest/gtest.h>

#include <fstream>

using namespace baton;

namespace {
std::string write(const std::string& name, const std::string& body) {
  std::string path = "/tmp/baton-jobs-test-" + name + ".yaml";
  std::ofstream(path) << body;
  return path;
}
}  // namespace

TEST(JobFiles, ShippedSampleJobsAreValid) {
  auto jobs = leader::load_job_files(std::string(BATON_SOURCE_DIR) + "/configs/jobs");
  ASSERT_TRUE(jobs) << jobs.error().message;
  EXPECT_GE(jobs->size(), 3u);
}

TEST(JobFiles, ReadsTasksAndSettings) {
  auto f = write("ok",
                 "jobs:\n"
                 "  - name: nightly\n    schedule: '*/5 * * * * *'\n    max_attempts: 3\n    timeout: 30s\n"
                 "    retry: {base: 2s, cap: 1m}\n    selector: {zone: a}\n    misfire_policy: skip\n"
                 "    tasks:\n      - kind: PROGRAM\n        command: [/bin/echo, hi]\n        env: {A: '1'}\n"
                 "      - {kind: BUILTIN, builtin: SLEEP, argument: 1s, ignore_error: true}\n");
  auto jobs = leader::load_job_file(f);
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 1u);
  const auto& j = jobs->front();
  EXPECT_EQ(j.name, "nightly");
  EXPECT_EQ(j.schedule, "*/5 * * * * *");
  EXPECT_EQ(j.max_attempts, 3);
  EXPECT_EQ(j.timeout_ms, 30000);
  EXPECT_EQ(j.retry_base_ms, 2000);
  EXPECT_EQ(j.selector_json, "{\"zone\":\"a\"}");
  EXPECT_NE(j.tasks_json.find("\"command\":[\"/bin/echo\",\"hi\"]"), std::string::npos) << j.tasks_json;
  EXPECT_NE(j.tasks_json.find("\"ignore_error\":true"), std::string::npos) << j.tasks_json;
}

TEST(JobFiles, ErrorsNameFileKeyAndCronPosition) {
  auto f = write("bad",
                 "jobs:\n  - name: x\n    schedule: '61 * * * *'\n    tasks: [{kind: SHELL}]\n"
                 "  - name: y\n    tasks: []\n    colour: red\n");
  auto jobs = leader::load_job_file(f);
  ASSERT_FALSE(jobs);
  const auto& m = jobs.error().message;
  EXPECT_NE(m.find(f + ": jobs[0].schedule: '61 * * * *' at position 0"), std::string::npos) << m;
  EXPECT_NE(m.find("jobs[0].tasks[0].kind: must be PROGRAM, SQL or BUILTIN"), std::string::npos) << m;
  EXPECT_NE(m.find("jobs[1].tasks: must be a non-empty list"), std::string::npos) << m;
  EXPECT_NE(m.find("jobs[1].colour: unknown key"), std::string::npos) << m;
}
