#pragma once
// One HTTP request to a coordinator the way the worker reaches it when it
// runs: TCP, then TLS with the node's certificate verified against the
// worker's CA and the address dialed (or plaintext with `insecure`). For
// `baton doctor` (GET /healthz, no token) and for enrollment (POST
// /api/v1/enroll with the bootstrap token). Blocking, bounded by a timeout.
#include <map>
#include <string>

#include "baton/base/clock.h"
#include "baton/base/result.h"
#include "baton/worker/worker_config.h"

namespace baton::worker {

struct CoordinatorReply {
  int status = 0;
  std::string body;
};

/// Sends `method target` with `headers` and `body` (JSON) to `endpoint`
/// (HOST:PORT) and reads the answer, all within `timeout` per step. An
/// error names the step that failed ("tls: certificate verify failed: ...").
Result<CoordinatorReply> ask_coordinator(const WorkerConfig& cfg, const std::string& endpoint,
                                         const std::string& method, const std::string& target,
                                         const std::map<std::string, std::string>& headers, const std::string& body,
                                         Millis timeout);

/// "" when `endpoint` answered GET /healthz with 200 within `timeout`; else
/// why not, in words.
std::string probe_coordinator(const WorkerConfig& cfg, const std::string& endpoint, Millis timeout);

}  // namespace baton::worker
