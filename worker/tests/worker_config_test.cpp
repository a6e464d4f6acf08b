// The worker's configuration: defaults, and a clear error naming the key.
#include "baton/worker/worker_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

using namespace baton::worker;

namespace {

std::string write_config(const std::string& extra) {
  const std::string dir = "/tmp/baton-worker-config-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/token") << "secret\n";
  std::ofstream(dir + "/worker.yaml") << "worker_id: w1\ncoordinators: ['127.0.0.1:1']\ntoken_file: token\n"
                                         "spool_dir: spool\n"
                                      << (extra.find("tls:") == std::string::npos ? "insecure: true\n" : "") << extra;
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

/// configs/worker.yaml loaded with its two host paths (the bootstrap token,
/// the spool) moved into `dir`.
baton::Result<WorkerConfig> load_shipped_example(const std::string& dir) {
  std::ifstream in(std::string(BATON_SOURCE_DIR) + "/configs/worker.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/w1.bootstrap") << "bootstrap-token-0123456789abcdef\n";
  auto replace = [&](const std::string& from, const std::string& to) {
    if (auto at = text.find(from); at != std::string::npos) text.replace(at, from.size(), to);
  };
  replace("/etc/baton-worker/w1.bootstrap", dir + "/w1.bootstrap");
  replace("spool_dir: /var/lib/baton-worker", "spool_dir: " + dir + "/spool");
  std::ofstream(dir + "/worker.yaml") << text;
  return load_worker_config(dir + "/worker.yaml");
}

/// Every key of a worker's config with its value in `cfg` (or, for keys
/// without one, what the docs say instead).
std::map<std::string, std::string> key_values(const WorkerConfig& c) {
  const auto* cfg = &c;
  auto duration = [](baton::Millis m) {
    return m.count() % 1000 == 0 ? std::to_string(m.count() / 1000) + "s" : std::to_string(m.count()) + "ms";
  };
  auto empty_map = [](const std::map<std::string, std::string>& m) { return m.empty() ? "{}" : "(set)"; };
  return {
      {"worker_id", "(required)"},
      {"coordinators", "(required)"},
      {"token_file", "(or enrollment_token_file)"},
      {"enrollment_token_file", "(or token_file)"},
      {"credential_file", "(spool_dir/credential)"},
      {"capacity", std::to_string(cfg->capacity)},
      {"prefetch", cfg->prefetch == cfg->capacity ? "(capacity)" : std::to_string(cfg->prefetch)},
      {"labels", empty_map(cfg->labels)},
      {"spool_dir", "(required)"},
      {"task_cgroup", cfg->task_cgroup},
      {"task_user", cfg->task_user ? cfg->task_user->name : "(the worker's user)"},
      {"task_env_allowlist",
       [&] {
         std::string out = "[";
         for (const auto& n : cfg->task_env_allowlist) out += (out.size() > 1 ? ", " : "") + n;
         return out + "]";
       }()},
      {"sql_connections", empty_map(cfg->sql_connections)},
      {"endpoint_map", empty_map(cfg->endpoint_map)},
      {"drain_timeout", duration(cfg->drain_timeout)},
      {"reconnect.base", duration(cfg->reconnect_base)},
      {"reconnect.max", duration(cfg->reconnect_max)},
      {"log_level", cfg->log_level},
      {"log_format", cfg->log_format == baton::LogFormat::json ? "json" : "text"},
      {"metrics_listen", cfg->metrics_listen.empty() ? "(none)" : cfg->metrics_listen},
      {"tls.ca_file", "(required unless insecure)"},
      {"tls.cert_file", "(none)"},
      {"tls.key_file", "(none)"},
      {"insecure", "false"},
  };
}

// docs/operations.md lists every worker config key with its default; the
// defaults are the code's, and every key listed is one the parser reads.
TEST(WorkerConfig, TheDocumentedKeysAndDefaultsAreTheCodes) {
  std::ifstream in(std::string(BATON_SOURCE_DIR) + "/docs/operations.md");
  std::map<std::string, std::string> documented;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## Worker configuration (`configs/worker.yaml`)";
    if (!inside || line.rfind("| `", 0) != 0) continue;
    auto key_end = line.find("` | ");
    auto def_end = line.find(" | ", key_end + 4);
    std::string def = line.substr(key_end + 4, def_end - key_end - 4);
    def.erase(std::remove(def.begin(), def.end(), '`'), def.end());
    documented[line.substr(3, key_end - 3)] = def;
  }
  auto cfg = load_worker_config(write_config(""));
  ASSERT_TRUE(cfg) << cfg.error().message;
  const auto code = key_values(*cfg);
  EXPECT_EQ(documented, code);
  for (const auto& [key, value] : code) {
    if (value.front() == '(' || key == "insecure") continue;
    auto dot = key.find('.');
    auto loaded = load_worker_config(write_config(
        dot == std::string::npos ? key + ": " + value + "\n"
                                 : key.substr(0, dot) + ": {" + key.substr(dot + 1) + ": " + value + "}\n"));
    EXPECT_TRUE(loaded) << key << ": " << loaded.error().message;
  }
}

TEST(WorkerConfig, PrefetchDefaultsToTheCapacityAndMayNotExceedIt) {
  auto dflt = load_worker_config(write_config("capacity: 16\n"));
  ASSERT_TRUE(dflt) << dflt.error().message;
  EXPECT_EQ(dflt->prefetch, 16);
  auto off = load_worker_config(write_config("capacity: 16\nprefetch: 0\n"));
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_EQ(off->prefetch, 0);
  auto over = load_worker_config(write_config("capacity: 2\nprefetch: 3\n"));
  ASSERT_FALSE(over);
  EXPECT_NE(over.error().message.find("prefetch: must not be more than capacity (2)"), std::string::npos)
      << over.error().message;
}

TEST(WorkerConfig, ABadSqlConnectionIsNamedWithoutItsPassword) {
  auto cfg = load_worker_config(write_config("sql_connections: {reports: 'postgress://ro:s3cr3t@db1/reports'}\n"));
  ASSERT_FALSE(cfg);
  EXPECT_NE(cfg.error().message.find("sql_connections.reports: must be a postgresql:// URL"), std::string::npos)
      << cfg.error().message;
  EXPECT_EQ(cfg.error().message.find("s3cr3t"), std::string::npos) << cfg.error().message;
}

TEST(WorkerConfig, TlsOrAnExplicitInsecureIsRequired) {
  auto tls = load_worker_config(write_config("tls: {ca_file: tls/ca.crt, cert_file: /c/w1.crt, key_file: w1.key}\n"));
  ASSERT_TRUE(tls) << tls.error().message;
  const std::string dir = "/tmp/baton-worker-config-" + std::to_string(::getpid());
  EXPECT_EQ(tls->tls.ca_file, dir + "/tls/ca.crt");  // relative to the config file
  EXPECT_EQ(tls->tls.cert_file, "/c/w1.crt");
  EXPECT_EQ(tls->tls.key_file, dir + "/w1.key");
  EXPECT_FALSE(tls->insecure);
  for (const auto& [extra, expected] : std::vector<std::pair<std::string, std::string>>{
           {"tls: {}\n", "tls.ca_file: is required"},
           {"tls: {cert_file: a}\n", "tls.ca_file: is required"},
           {"tls: {ca_file: a, cert_file: b}\n", "tls.cert_file: and tls.key_file go together"},
           {"tls: {ca_file: a}\ninsecure: true\n", "insecure: true together with a tls map"},
           {"tls: {ca: a}\n", "tls.ca: unknown key"},
       }) {
    auto cfg = load_worker_config(write_config(extra));
    ASSERT_FALSE(cfg) << extra;
    EXPECT_NE(cfg.error().message.find(expected), std::string::npos)
        << "wanted '" << expected << "' in " << cfg.error().message;
  }
  // Neither: refused, saying what to do.
  const std::string bare = "/tmp/baton-worker-config-" + std::to_string(::getpid()) + "/bare.yaml";
  std::ofstream(bare) << "worker_id: w1\ncoordinators: ['127.0.0.1:1']\ntoken_file: token\nspool_dir: spool\n";
  auto none = load_worker_config(bare);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("tls: is required (ca_file: the CA of the nodes' certificates), or `insecure: "
                                      "true`"),
            std::string::npos)
      << none.error().message;
}

// A worker authenticates one way: the shared token, or enrollment; the
// errors name both keys.
TEST(WorkerConfig, OneWayToAuthenticate) {
  const std::string dir = "/tmp/baton-worker-auth-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/token") << "secret\n";
  std::ofstream(dir + "/bootstrap") << "baton_x\n";
  auto load = [&](const std::string& auth) {
    std::ofstream(dir + "/w.yaml") << "worker_id: w1\ncoordinators: ['127.0.0.1:1']\nspool_dir: spool\ninsecure: true\n"
                                   << auth;
    return load_worker_config(dir + "/w.yaml");
  };
  auto neither = load("");
  ASSERT_FALSE(neither);
  EXPECT_NE(neither.error().message.find("enrollment_token_file: is required"), std::string::npos)
      << neither.error().message;
  auto both = load("token_file: token\nenrollment_token_file: bootstrap\n");
  ASSERT_FALSE(both);
  EXPECT_NE(both.error().message.find("give one"), std::string::npos) << both.error().message;
  auto enrolls = load("enrollment_token_file: bootstrap\n");
  ASSERT_TRUE(enrolls) << enrolls.error().message;
  EXPECT_EQ(enrolls->enrollment_token_path, dir + "/bootstrap");
  EXPECT_EQ(enrolls->credential_path, dir + "/spool/credential");
  // The bootstrap file may be gone once a credential exists.
  auto missing = load("enrollment_token_file: gone\n");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("no credential at '" + dir + "/spool/credential'"), std::string::npos)
      << missing.error().message;
  std::filesystem::create_directories(dir + "/spool");
  std::ofstream(dir + "/spool/credential") << "baton_y\n";
  EXPECT_TRUE(load("enrollment_token_file: gone\n"));
  std::filesystem::remove_all(dir);
}

TEST(WorkerConfig, TaskUserIsResolvedAndRootOrAnUnknownUserIsRefused) {
  auto none = load_worker_config(write_config(""));
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_FALSE(none->task_user);
  auto nobody = load_worker_config(write_config("task_user: nobody\n"));
  ASSERT_TRUE(nobody) << nobody.error().message;
  ASSERT_TRUE(nobody->task_user);
  EXPECT_EQ(nobody->task_user->name, "nobody");
  EXPECT_NE(nobody->task_user->uid, 0u);
  auto root = load_worker_config(write_config("task_user: root\n"));
  ASSERT_FALSE(root);
  EXPECT_NE(root.error().message.find("task_user: 'root' is root"), std::string::npos) << root.error().message;
  auto unknown = load_worker_config(write_config("task_user: no-such-user-here\n"));
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("task_user: no user named 'no-such-user-here'"), std::string::npos)
      << unknown.error().message;
}

TEST(WorkerConfig, ShippedExampleIsValidAndEnrolls) {
  std::ifstream in(std::string(BATON_SOURCE_DIR) + "/configs/worker.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // It enrolls and keeps its spool where the packaged unit lets it write;
  // it holds no shared token.
  for (const char* line :
       {"\nenrollment_token_file: /etc/baton-worker/w1.bootstrap\n", "\nspool_dir: /var/lib/baton-worker\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line;
  EXPECT_EQ(text.find("\ntoken_file:"), std::string::npos);
  const std::string dir = "/tmp/baton-worker-example-" + std::to_string(::getpid());
  auto cfg = load_shipped_example(dir);
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->enrollment_token_path, dir + "/w1.bootstrap");
  EXPECT_EQ(cfg->token, "");
  std::filesystem::remove_all(dir);
}

// configs/worker.yaml says it lists every key with its default: it does,
// but for what a worker must be told (who it is, where the nodes are, its
// credential and spool, and its TLS files).
TEST(WorkerConfig, TheExampleConfigHoldsTheCodesDefaults) {
  const std::string dir = "/tmp/baton-worker-example-defaults-" + std::to_string(::getpid());
  auto example = load_shipped_example(dir);
  ASSERT_TRUE(example) << example.error().message;
  auto dflt = load_worker_config(write_config(""));
  ASSERT_TRUE(dflt) << dflt.error().message;
  auto in_example = key_values(*example), by_default = key_values(*dflt);
  for (const auto& [key, value] : by_default) {
    // Labels are this worker's own, like its id: the example's zone: local
    // is what the sample jobs' selectors ask for.
    if (key == "labels") continue;
    EXPECT_EQ(in_example.at(key), value) << "configs/worker.yaml sets " << key << " to another value than the default";
  }
  std::filesystem::remove_all(dir);
}
