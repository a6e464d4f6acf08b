#pragma once
// The typed configuration of `baton node`, parsed from YAML in one place.
// Every key is documented in configs/node.yaml.
#include <string>
#include <vector>

#include "baton/admin/admin_api.h"
#include "baton/admin/payload_denylist.h"
#include "baton/base/log.h"
#include "baton/base/result.h"
#include "baton/consensus/election.h"
#include "baton/leader/node_server.h"
#include "baton/leader_core/runtime_config.h"
#include "baton/notify/destination_policy.h"
#include "baton/tls/tls_files.h"

namespace baton::node {

struct NodeConfig {
  std::string node_id;
  std::string listen = "127.0.0.1:7001";  ///< admin HTTP + worker WebSocket
  std::string advertise;                  ///< endpoint others are sent to (redirects); default: listen
  std::string database_url;
  Millis database_start_timeout{5000};  ///< give up at start if the database stays unreachable this long
  bool auto_migrate = true;
  std::string log_level = "info";
  LogFormat log_format = LogFormat::text;  ///< text (logfmt) or json lines (base/log.h)
  consensus::ElectionConfig election;
  leader_core::RuntimeConfig runtime;
  std::string worker_token;  ///< read from worker_token_file
  std::string admin_token;   ///< read from admin_token_file: the bootstrap admin credential ("" = none)
  std::string worker_token_path, admin_token_path;  ///< the files they were read from (`baton doctor`)
  /// Keys the environment set instead of the file ("database.url=BATON_DATABASE_URL").
  std::vector<std::string> env_overrides;
  bool metrics_require_token = false;  ///< /metrics needs a token of any role
  /// Names and text refused in run parameters and event payloads (secrets);
  /// case-insensitive substrings (payload_denylist.h).
  std::vector<std::string> payload_denylist = admin::default_payload_denylist();
  /// Where full task output is archived (log_archive.h); "" = no archive.
  std::string log_archive_dir;
  /// Runs' output older than this is removed from this node's archive.
  int log_archive_retention_days = 30;
  /// Where this node's incident journal goes (leader/journal_ring.h,
  /// docs/assurance.md "Incident replay"); "" = none. At most
  /// incident_journal_max_mb of it is kept, the oldest removed first.
  std::string incident_journal_dir;
  int incident_journal_max_mb = 256;
  /// ...and for at most this many days (a file last written before is
  /// removed): the journal holds task output and run parameters.
  int incident_journal_max_days = 30;
  /// Denial-of-service bounds (the `limits` map; docs/security.md).
  leader::ServerLimits server_limits;
  admin::ApiLimits api_limits;
  /// The port's certificate, key and worker-certificate policy (the `tls`
  /// map; files are read when the node starts). Empty cert_file = plaintext,
  /// which needs `insecure: true`.
  tls::ServerFiles tls;
  bool insecure = false;  ///< plaintext HTTP and WebSocket, said so in a warning at start
  /// The `webhooks` map (docs/webhooks.md): whom the leader's sender trusts
  /// (a CA file; "" = the system's roots), how long one POST may take, and
  /// where one may go (allow_loopback, allow_link_local; never the node's
  /// own listen or advertise endpoint).
  struct Webhooks {
    std::string ca_file;
    Millis timeout{10000};
    notify::DestinationPolicy destinations;
  } webhooks;
  /// The `verify` map (docs/assurance.md): the leader's sweep of the
  /// history checker over the runs that finished since its cursor.
  struct Verify {
    bool enabled = true;
    Millis every{30000};         ///< between sweeps
    Millis settle{10000};        ///< a run is checked once it finished at least this long ago
    int slice_runs = 2000;       ///< runs read and judged together
    int slices_per_sweep = 100;  ///< at most; a sweep stops at the first slice that is not full
    /// The sweep yields to runs (verify::SweepPace): while this node
    /// finishes more runs a second than this (0: never yields), a sweep
    /// reads at most `slices_under_load` slices and its cursor may lag.
    double yield_above_runs_per_s = 500;
    int slices_under_load = 1;
    /// A RUNNING run on a worker detached this long, or CONFIRMING this long
    /// past its deadline and margin, is reported (running_has_owner).
    Millis owner_grace{60000};
  } verify;
};

/// Reads and validates FILE. The error lists every problem, each naming the
/// file and the key.
Result<NodeConfig> load_node_config(const std::string& file);

/// A secret from its file as the config reads it (trailing newlines and
/// spaces dropped, at least 16 characters); bad_config naming `key` and the
/// file otherwise. The node reads its admin token file again with it when
/// the file changes.
Result<std::string> read_secret_file(const std::string& path, const std::string& key);

}  // namespace baton::node
