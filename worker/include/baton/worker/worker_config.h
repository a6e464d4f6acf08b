#pragma once
// The typed configuration of `baton worker` (configs/worker.yaml documents
// every key). A worker holds no credentials for the coordinator database.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/log.h"
#include "baton/base/result.h"
#include "baton/tls/tls_files.h"
#include "baton/worker_core/task_environment.h"

#include "baton/worker/task_user.h"

namespace baton::worker {

struct WorkerConfig {
  std::string worker_id;
  std::vector<std::string> coordinators;  ///< HOST:PORT of nodes, tried in order
  std::string token;                      ///< read from token_file: the cluster's shared worker token
  std::string token_path;                 ///< that file (`baton doctor`)
  /// Or a credential of this worker's own (enrollment.h): the bootstrap
  /// token's file, and where the credential is kept (default
  /// spool_dir/credential).
  std::string enrollment_token_path;
  std::string credential_path;
  int capacity = 4;
  /// Runs held assigned beyond the free slots (0..capacity), started one by
  /// one as slots free; default: the capacity (docs/operations.md).
  int prefetch = 4;
  std::map<std::string, std::string> labels;
  std::string spool_dir;
  std::map<std::string, std::string> sql_connections;  ///< name -> postgresql:// URL for SQL tasks
  /// Redirect targets to rewrite: advertised HOST:PORT -> the address this
  /// worker must use to reach it (NAT, proxies, the chaos harness).
  std::map<std::string, std::string> endpoint_map;
  /// SIGTERM: how long running attempts may go on finishing before they are
  /// killed (0: at once).
  Millis drain_timeout{60000};
  Millis reconnect_base{200};
  Millis reconnect_max{5000};
  std::string log_level = "info";
  LogFormat log_format = LogFormat::text;  ///< text (logfmt) or json lines (base/log.h)
  /// HOST:PORT where the worker serves GET /metrics (plain HTTP); empty:
  /// none (metrics_listener.h).
  std::string metrics_listen;
  /// "auto", "off" or a cgroup v2 directory: where each PROGRAM task's tree
  /// gets a group of its own (task_cgroup.h).
  std::string task_cgroup = "auto";
  /// The user PROGRAM tasks run as (`task_user`; task_user.h). Empty: the
  /// worker's own user.
  std::optional<TaskUser> task_user;
  /// The worker's environment variables a task inherits: NAME or PREFIX*
  /// (worker_core/task_environment.h).
  std::vector<std::string> task_env_allowlist = worker_core::default_task_env_allowlist();
  /// The cluster CA the nodes' certificates must chain to, and this
  /// worker's own certificate for mutual TLS (the `tls` map; read at each
  /// connection, so renewed files are used at the next one).
  tls::ClientFiles tls;
  bool insecure = false;  ///< plaintext WebSocket (ws://), said so in a warning at start
};

Result<WorkerConfig> load_worker_config(const std::string& file);

}  // namespace baton::worker
