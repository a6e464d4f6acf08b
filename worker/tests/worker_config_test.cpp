// The worker's configuration: defaults, and a clear error naming the key.
#include "baton/worker/worker_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace baton::worker;

namespace {

std::string write_config(const std::string& extra) {
  const std::string dir = "/tmp/baton-worker-config-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/token") << "secret\n";
  std::ofstream(dir + "/worker.yaml") << "worker_id: w1\ncoordinators: ['127.0.0.1:1']\ntoken_file: token\n"
                                         "spool_dir: spool\n"
                                      << extra;
  return dir + "/worker.yaml";
}

}  // namespace

TEST(WorkerConfig, TaskCgroupDefaultsToAuto) {
  auto cfg = load_worker_config(write_config(""));
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->task_cgroup, "auto");
  EXPECT_EQ(cfg->token, "secret");
}

TEST(WorkerConfig, TaskCgroupTakesOffOrAnAbsolutePath) {
  auto off = load_worker_config(write_config("task_cgroup: off\n"));
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_EQ(off->task_cgroup, "off");
  auto path = load_worker_config(write_config("task_cgroup: /sys/fs/cgroup/baton\n"));
  ASSERT_TRUE(path) << path.error().message;
  EXPECT_EQ(path->task_cgroup, "/sys/fs/cgroup/baton");
}

TEST(WorkerConfig, RelativeTaskCgroupIsRefusedByName) {
  auto cfg = load_worker_config(write_config("task_cgroup: baton\n"));
  ASSERT_FALSE(cfg);
  EXPECT_NE(cfg.error().message.find("task_cgroup"), std::string::npos) << cfg.error().message;
  EXPECT_NE(cfg.error().message.find("'baton'"), std::string::npos) << cfg.error().message;
}
