#include "baton/node/node_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

using namespace baton;

namespace {

std::string write_config(const std::string& body) {
  char path[] = "/tmp/baton-node-config-XXXXXX.yaml";
  int fd = ::mkstemps(path, 5);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << body;
  return path;
}

}  // namespace

TEST(NodeConfig, ShippedExampleIsValid) {
  // Its admin token comes as a systemd credential, as under the packaged
  // unit; it names no worker token (workers enroll).
  const std::string creds = "/tmp/baton-node-config-creds-" + std::to_string(::getpid());
  std::filesystem::create_directories(creds);
  std::ofstream(creds + "/admin-token") << "0123456789abcdef0123456789abcdef\n";
  ::setenv("CREDENTIALS_DIRECTORY", creds.c_str(), 1);
  auto cfg = node::load_node_config(std::string(BATON_SOURCE_DIR) + "/configs/node.yaml");
  ::unsetenv("CREDENTIALS_DIRECTORY");
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->node_id, "n1");
  EXPECT_EQ(cfg->admin_token, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(cfg->worker_token, "");
  EXPECT_TRUE(consensus::validate(cfg->election).empty());
  // Out of systemd the path is left as written, and the error names it.
  auto outside = node::load_node_config(std::string(BATON_SOURCE_DIR) + "/configs/node.yaml");
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message.find("admin_token_file: cannot read '${CREDENTIALS_DIRECTORY}/admin-token'"),
            std::string::npos)
      << outside.error().message;
  std::filesystem::remove_all(creds);
}

TEST(NodeConfig, TokensPublishedAsExamplesOrShortAreRefused) {
  const std::string dir = "/tmp/baton-node-config-tokens-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/admin.token") << "example-admin-token-change-me\n";
  std::ofstream(dir + "/worker.token") << "example-worker-token-change-me\n";
  std::ofstream(dir + "/short.token") << "0123456789\n";
  auto published = node::load_node_config(write_config("node_id: n1\ninsecure: true\nadmin_token_file: " + dir +
                                                       "/admin.token\nworker_token_file: " + dir + "/worker.token\n"));
  ASSERT_FALSE(published);
  EXPECT_NE(published.error().message.find("admin_token_file: '" + dir +
                                           "/admin.token' holds a token published as an example"),
            std::string::npos)
      << published.error().message;
  EXPECT_NE(published.error().message.find("worker_token_file: '" + dir + "/worker.token' holds a token published"),
            std::string::npos)
      << published.error().message;
  auto shorter =
      node::load_node_config(write_config("node_id: n1\ninsecure: true\nadmin_token_file: " + dir + "/short.token\n"));
  ASSERT_FALSE(shorter);
  EXPECT_NE(shorter.error().message.find("must hold a secret of at least 16 characters"), std::string::npos)
      << shorter.error().message;
  std::filesystem::remove_all(dir);
}

TEST(NodeConfig, ReadsEveryKey) {
  auto file = write_config("worker_token_file: " + std::string(BATON_SOURCE_DIR) +
                           "/cmd/tests/tokens/worker.token\n"
                           "admin_token_file: " +
                           std::string(BATON_SOURCE_DIR) +
                           "/cmd/tests/tokens/admin.token\n"
                           "node_id: a-1\nlisten: 127.0.0.1:9000\nauto_migrate: false\nlog_level: debug\n"
                           "database: {url: 'postgresql://u@127.0.0.1:5/db', start_timeout: 2s}\n"
                           "election: {lease: 4s, renew_every: 700ms, safety_margin: 1s, poll_every: 300ms}\n"
                           "tls: {cert_file: tls/node.crt, key_file: /k/node.key, client_ca_file: ca.crt, "
                           "worker_certificates: required}\n");
  auto cfg = node::load_node_config(file);
  ASSERT_TRUE(cfg) << cfg.error().message;
  const std::string dir = file.substr(0, file.rfind('/'));
  EXPECT_EQ(cfg->tls.cert_file, dir + "/tls/node.crt");  // relative to the config file
  EXPECT_EQ(cfg->tls.key_file, "/k/node.key");
  EXPECT_EQ(cfg->tls.client_ca_file, dir + "/ca.crt");
  EXPECT_EQ(cfg->tls.worker_certificates, tls::WorkerCertificates::required);
  EXPECT_FALSE(cfg->insecure);
  EXPECT_EQ(cfg->node_id, "a-1");
  EXPECT_EQ(cfg->listen, "127.0.0.1:9000");
  EXPECT_FALSE(cfg->auto_migrate);
  EXPECT_EQ(cfg->database_start_timeout, Millis{2000});
  EXPECT_EQ(cfg->election.lease, Millis{4000});
  EXPECT_EQ(cfg->election.renew_every, Millis{700});
  EXPECT_EQ(cfg->election.poll_every, Millis{300});
}

// runtime.assign_ahead may be 0 (assigned when due: docs/operations.md);
// the other durations must be positive.
TEST(NodeConfig, AssignAheadMayBeZero) {
  const std::string base =
      "node_id: n1\ninsecure: true\ndatabase: {url: 'postgresql://u@h:1/d'}\n"
      "worker_token_file: " +
      std::string(BATON_SOURCE_DIR) +
      "/cmd/tests/tokens/worker.token\nadmin_token_file: " + std::string(BATON_SOURCE_DIR) +
      "/cmd/tests/tokens/admin.token\n";
  auto cfg = node::load_node_config(write_config(base + "runtime: {assign_ahead: 0ms}\n"));
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->runtime.assign_ahead, Millis{0});
  auto refused = node::load_node_config(write_config(base + "runtime: {dispatch_every: 0ms}\n"));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("runtime.dispatch_every: must be positive"), std::string::npos)
      << refused.error().message;
}

TEST(NodeConfig, EveryProblemNamesKeyAndFile) {
  struct Case {
    std::string body;
    std::string expected;
  };
  const std::string db =
      "database: {url: 'postgresql://u@h:1/d'}\nworker_token_file: " + std::string(BATON_SOURCE_DIR) +
      "/cmd/tests/tokens/worker.token\nadmin_token_file: " + std::string(BATON_SOURCE_DIR) +
      "/cmd/tests/tokens/admin.token\n";
  const std::string plain = db + "insecure: true\n";
  for (const auto& c : std::vector<Case>{
           {"node_id: n1\n" + db, ": tls: is required (cert_file and key_file), or `insecure: true`"},
           {"node_id: n1\n" + plain + "tls: {cert_file: a, key_file: b}\n", ": insecure: true together with a tls map"},
           {"node_id: n1\n" + db + "tls: {cert_file: a}\n", ": tls.key_file: is required"},
           {"node_id: n1\n" + db + "tls: {cert_file: a, key_file: b, worker_certificates: required}\n",
            ": tls.worker_certificates: required needs tls.client_ca_file"},
           {"node_id: n1\n" + db + "tls: {cert_file: a, key_file: b, client_ca_file: c, worker_certificates: maybe}\n",
            ": tls.worker_certificates: must be off, optional or required; got 'maybe'"},
           {"node_id: n1\n" + db + "tls: {cert_file: a, key_file: b, ca_file: c}\n", ": tls.ca_file: unknown key"},
           {"node_id: n1\n" + plain + "electon: {lease: 3s}\n", ": electon: unknown key"},
           {"node_id: n1\n" + plain + "election: {lease: 3 seconds}\n",
            ": election.lease: '3 seconds' has unknown unit"},
           {"node_id: n1\n" + plain + "election: {lease: 3}\n", ": election.lease: '3' has no unit"},
           {"node_id: n1\n", ": database.url: is required"},
           {"node_id: n1\ndatabase: {url: 'mysql://x'}\n", ": database.url: must be a postgresql:// URL"},
           {"node_id: n1\ndatabase: {url: 'postgresql://h/d'}\nworker_token_file: /nonexistent\n",
            ": worker_token_file: cannot read '/nonexistent'"},
           {"node_id: n1\n" + plain + "runtime: {heartbeat_timeout: 1s, heartbeat_interval: 2s}\n",
            ": runtime.heartbeat_timeout: must be greater than"},
           {"node_id: n1\n" + plain + "limits: {auth_throttle_hold: 30s}\n",
            ": limits.auth_throttle_hold: must be at most 10s (a held answer keeps its connection)"},
           {plain, ": node_id: is required"},
           {"node_id: 'bad id'\n" + plain, ": node_id: must be 1-64 characters"},
           {"node_id: n1\n" + plain + "auto_migrate: yes-please\n", ": auto_migrate: must be true or false"},
           {"node_id: n1\n" + plain + "election: {renew_every: 5s}\n", ": election.renew_every: must be less than"},
           {"node_id: n1\n" + plain + "listen: nowhere\n", ": listen: must be HOST:PORT"},
           {"node_id: [1\n", "line "},
           {"- a\n- b\n", "top level must be a mapping"},
       }) {
    auto file = write_config(c.body);
    auto cfg = node::load_node_config(file);
    ASSERT_FALSE(cfg) << c.body;
    EXPECT_NE(cfg.error().message.find(file), std::string::npos) << cfg.error().message;
    EXPECT_NE(cfg.error().message.find(c.expected), std::string::npos)
        << "wanted '" << c.expected << "' in: " << cfg.error().message;
    std::remove(file.c_str());
  }
}

namespace {

/// The `| key | default | meaning |` rows of the table under `heading` in
/// docs/operations.md: key -> default, backticks removed.
std::map<std::string, std::string> documented_defaults(const std::string& heading) {
  std::ifstream in(std::string(BATON_SOURCE_DIR) + "/docs/operations.md");
  std::map<std::string, std::string> out;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == heading;
    if (!inside || line.rfind("| `", 0) != 0) continue;
    auto cells = std::vector<std::string>{};
    for (std::size_t at = 1; at < line.size();) {
      auto next = line.find(" | ", at);
      if (next == std::string::npos) break;
      cells.push_back(line.substr(at + 1, next - at - 1));
      at = next + 2;
    }
    if (cells.size() < 2) continue;
    auto strip = [](std::string v) {
      v.erase(std::remove(v.begin(), v.end(), '`'), v.end());
      return v;
    };
    out[strip(cells[0])] = strip(cells[1]);
  }
  return out;
}

std::string duration(Millis m) {
  if (m.count() % 1000 == 0) return std::to_string(m.count() / 1000) + "s";
  return std::to_string(m.count()) + "ms";
}

}  // namespace

/// Every key of a node's config with its value in `cfg` (or, for keys
/// without one, what the docs say instead).
std::map<std::string, std::string> key_values(const node::NodeConfig& cfg) {
  const auto& r = cfg.runtime;
  return {
      {"node_id", "(required)"},
      {"listen", cfg.listen},
      {"advertise", "listen"},
      {"auto_migrate", cfg.auto_migrate ? "true" : "false"},
      {"log_level", cfg.log_level},
      {"log_format", cfg.log_format == baton::LogFormat::json ? "json" : "text"},
      {"webhooks.ca_file", "(the system's roots)"},
      {"webhooks.timeout", duration(cfg.webhooks.timeout)},
      {"webhooks.allow_loopback", cfg.webhooks.destinations.allow_loopback ? "true" : "false"},
      {"webhooks.allow_link_local", cfg.webhooks.destinations.allow_link_local ? "true" : "false"},
      {"verify.enabled", cfg.verify.enabled ? "true" : "false"},
      {"verify.every", duration(cfg.verify.every)},
      {"verify.settle", duration(cfg.verify.settle)},
      {"verify.slice_runs", std::to_string(cfg.verify.slice_runs)},
      {"verify.slices_per_sweep", std::to_string(cfg.verify.slices_per_sweep)},
      {"verify.yield_above", std::to_string(static_cast<long long>(cfg.verify.yield_above_runs_per_s))},
      {"verify.slices_under_load", std::to_string(cfg.verify.slices_under_load)},
      {"verify.owner_grace", duration(cfg.verify.owner_grace)},
      {"database.url", "(required)"},
      {"database.start_timeout", duration(cfg.database_start_timeout)},
      {"election.lease", duration(cfg.election.lease)},
      {"election.renew_every", duration(cfg.election.renew_every)},
      {"election.safety_margin", duration(cfg.election.safety_margin)},
      {"election.poll_every", duration(cfg.election.poll_every)},
      {"worker_token_file", "(none)"},
      {"admin_token_file", "(required)"},
      {"metrics_require_token", cfg.metrics_require_token ? "true" : "false"},
      {"payload_denylist", "(see docs/scheduling.md)"},
      {"jobs_dir", "(refused)"},
      {"runtime.heartbeat_interval", duration(r.heartbeat_interval)},
      {"runtime.heartbeat_timeout", duration(r.heartbeat_timeout)},
      {"runtime.reassign_after", duration(r.reassign_after)},
      {"runtime.reassign_detached_after", duration(r.reassign_detached_after)},
      {"runtime.continuation_timeout", duration(r.continuation_timeout)},
      {"runtime.continuation_margin", duration(r.continuation_margin)},
      {"runtime.timeout_grace", duration(r.timeout_grace)},
      {"runtime.dispatch_every", duration(r.dispatch_every)},
      {"runtime.assign_ahead", duration(r.assign_ahead)},
      {"runtime.assign_with_start", r.assign_with_start ? "true" : "false"},
      {"runtime.dispatch_batch", std::to_string(r.dispatch_batch)},
      {"runtime.controls_every", duration(r.controls_every)},
      {"runtime.reassign_rate", std::to_string(r.reassign_rate)},
      {"runtime.prune_every", duration(r.prune_every)},
      {"runtime.reassign_burst", std::to_string(r.reassign_burst)},
      {"runtime.output_db_bytes", std::to_string(r.output_db_bytes)},
      {"runtime.max_heartbeats_per_second", std::to_string(r.max_heartbeats_per_second)},
      {"runtime.workers_seen_rows_per_second", std::to_string(r.workers_seen_rows_per_second)},
      {"log_archive_dir", cfg.log_archive_dir.empty() ? "(none)" : cfg.log_archive_dir},
      {"log_archive_retention_days", std::to_string(cfg.log_archive_retention_days)},
      {"incident_journal_dir", cfg.incident_journal_dir.empty() ? "(none)" : cfg.incident_journal_dir},
      {"incident_journal_max_mb", std::to_string(cfg.incident_journal_max_mb)},
      {"incident_journal_max_days", std::to_string(cfg.incident_journal_max_days)},
      {"limits.max_connections", std::to_string(cfg.server_limits.max_connections)},
      {"limits.max_connections_per_address", std::to_string(cfg.server_limits.max_connections_per_address)},
      {"limits.request_deadline", duration(cfg.server_limits.request_deadline)},
      {"limits.hello_deadline", duration(cfg.server_limits.hello_deadline)},
      {"limits.trigger_rate", std::to_string(static_cast<int>(cfg.api_limits.trigger_rate))},
      {"limits.trigger_burst", std::to_string(static_cast<int>(cfg.api_limits.trigger_burst))},
      {"limits.read_rate", std::to_string(static_cast<int>(cfg.api_limits.read_rate))},
      {"limits.read_burst", std::to_string(static_cast<int>(cfg.api_limits.read_burst))},
      {"limits.auth_failure_rate", std::to_string(static_cast<int>(cfg.server_limits.auth_failure_rate))},
      {"limits.auth_failure_burst", std::to_string(static_cast<int>(cfg.server_limits.auth_failure_burst))},
      {"limits.auth_throttle_hold", duration(cfg.server_limits.auth_throttle_hold)},
      {"limits.admin_queue_max", std::to_string(cfg.server_limits.admin_queue_max)},
      {"limits.pre_auth_body_bytes", std::to_string(cfg.server_limits.pre_auth_body_bytes_max)},
      {"limits.pre_hello_frame_bytes", std::to_string(cfg.server_limits.pre_auth_frame_bytes_max)},
      {"tls.cert_file", "(required unless insecure)"},
      {"tls.key_file", "(required unless insecure)"},
      {"tls.client_ca_file", "(none)"},
      {"tls.worker_certificates", "off, or optional with tls.client_ca_file"},
      {"insecure", "false"},
  };
}

// docs/operations.md lists every key of a node's config with its default;
// the defaults are the code's, and every key listed is one the parser reads.
TEST(NodeConfig, AnErrorAboutTheDatabaseUrlNeverEchoesItsPassword) {
  auto cfg = node::load_node_config(write_config("node_id: n1\ndatabase: {url: 'postgres:/baton:s3cr3t@db1/baton'}\n"));
  ASSERT_FALSE(cfg);
  EXPECT_NE(cfg.error().message.find("database.url: must be a postgresql:// URL, got 'postgres:/baton:***@db1/baton'"),
            std::string::npos)
      << cfg.error().message;
  EXPECT_EQ(cfg.error().message.find("s3cr3t"), std::string::npos);
}

TEST(NodeConfig, TheDocumentedKeysAndDefaultsAreTheCodes) {
  const std::string required = "worker_token_file: " + std::string(BATON_SOURCE_DIR) +
                               "/cmd/tests/tokens/worker.token\nadmin_token_file: " + std::string(BATON_SOURCE_DIR) +
                               "/cmd/tests/tokens/admin.token\nnode_id: n1\ninsecure: true\n";
  auto cfg = node::load_node_config(write_config(required + "database: {url: 'postgresql://u@127.0.0.1/db'}\n"));
  ASSERT_TRUE(cfg) << cfg.error().message;
  const auto code = key_values(*cfg);
  EXPECT_EQ(documented_defaults("## Configuration (`configs/node.yaml`)"), code);
  // Each key with a default is read: set to its default, the config loads.
  for (const auto& [key, value] : code) {
    if (value.front() == '(' || key == "advertise" || key.rfind("tls.", 0) == 0 || key == "insecure" ||
        key.rfind("database.", 0) == 0)
      continue;
    auto dot = key.find('.');
    std::string line = dot == std::string::npos
                           ? key + ": " + value + "\n"
                           : key.substr(0, dot) + ": {" + key.substr(dot + 1) + ": " + value + "}\n";
    auto loaded =
        node::load_node_config(write_config(required + "database: {url: 'postgresql://u@127.0.0.1/db'}\n" + line));
    EXPECT_TRUE(loaded) << key << ": " << loaded.error().message;
  }
}

// The environment sets the database URL and the secret files instead of
// the file (a unit's Environment=, a container's variables); a bad value
// is named by its variable.
TEST(NodeConfig, TheEnvironmentOverridesTheDatabaseUrlAndTheSecretFiles) {
  const std::string dir = "/tmp/baton-node-config-env-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/admin.token") << "0123456789abcdef0123456789abcdef\n";
  std::ofstream(dir + "/file-admin.token") << "fedcba9876543210fedcba9876543210\n";
  const std::string file = write_config("node_id: n1\ninsecure: true\nadmin_token_file: " + dir +
                                        "/file-admin.token\ndatabase: {url: 'postgresql://from-the-file/baton'}\n");
  ::setenv("BATON_DATABASE_URL", "postgresql://baton_node@db1,db2/baton", 1);
  ::setenv("BATON_ADMIN_TOKEN_FILE", (dir + "/admin.token").c_str(), 1);
  auto cfg = node::load_node_config(file);
  ASSERT_TRUE(cfg) << cfg.error().message;
  EXPECT_EQ(cfg->database_url, "postgresql://baton_node@db1,db2/baton");
  EXPECT_EQ(cfg->admin_token, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(cfg->env_overrides,
            (std::vector<std::string>{"admin_token_file=BATON_ADMIN_TOKEN_FILE", "database.url=BATON_DATABASE_URL"}));
  // Neither key in the file at all: the environment is enough.
  auto bare = node::load_node_config(write_config("node_id: n1\ninsecure: true\n"));
  EXPECT_TRUE(bare) << bare.error().message;
  ::setenv("BATON_DATABASE_URL", "mysql://nope", 1);
  auto bad = node::load_node_config(file);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("BATON_DATABASE_URL: must be a postgresql:// URL"), std::string::npos)
      << bad.error().message;
  ::unsetenv("BATON_DATABASE_URL");
  ::unsetenv("BATON_ADMIN_TOKEN_FILE");
  auto from_file = node::load_node_config(file);
  ASSERT_TRUE(from_file) << from_file.error().message;
  EXPECT_EQ(from_file->database_url, "postgresql://from-the-file/baton");
  EXPECT_EQ(from_file->admin_token, "fedcba9876543210fedcba9876543210");
  EXPECT_TRUE(from_file->env_overrides.empty());
  std::filesystem::remove_all(dir);
}

// configs/node.yaml says it lists every key with its default: it does. A
// key it sets otherwise on purpose is named here with why.
TEST(NodeConfig, TheExampleConfigHoldsTheCodesDefaults) {
  const std::string creds = "/tmp/baton-node-config-example-" + std::to_string(::getpid());
  std::filesystem::create_directories(creds);
  std::ofstream(creds + "/admin-token") << "0123456789abcdef0123456789abcdef\n";
  ::setenv("CREDENTIALS_DIRECTORY", creds.c_str(), 1);
  auto example = node::load_node_config(std::string(BATON_SOURCE_DIR) + "/configs/node.yaml");
  ::unsetenv("CREDENTIALS_DIRECTORY");
  std::filesystem::remove_all(creds);
  ASSERT_TRUE(example) << example.error().message;
  auto dflt = node::load_node_config(write_config(
      "admin_token_file: " + std::string(BATON_SOURCE_DIR) +
      "/cmd/tests/tokens/admin.token\nnode_id: n1\ninsecure: true\ndatabase: {url: 'postgresql://u@h/d'}\n"));
  ASSERT_TRUE(dflt) << dflt.error().message;
  auto in_example = key_values(*example), by_default = key_values(*dflt);
  for (const auto& [key, value] : by_default) {
    // On purpose: a packaged node keeps an incident journal in the
    // service's own directory (docs/assurance.md, "Incident replay").
    if (key == "incident_journal_dir") {
      EXPECT_EQ(in_example.at(key), "/var/lib/baton/journal");
      continue;
    }
    EXPECT_EQ(in_example.at(key), value) << "configs/node.yaml sets " << key << " to another value than the default";
  }
}
