#pragma once
// Whether this worker can reach a coordinator the way it will when it runs:
// TCP, then TLS with the node's certificate verified against the worker's
// CA and the address dialed (or plaintext with `insecure`), then GET
// /healthz. For `baton doctor`; sends no token.
#include <string>

#include "baton/core/clock.h"
#include "baton/worker/worker_config.h"

namespace baton::worker {

/// "" when `endpoint` (HOST:PORT) answered /healthz with 200 within
/// `timeout`; else why not, in words ("tls: certificate verify failed: ...").
std::string probe_coordinator(const WorkerConfig& cfg, const std::string& endpoint, Millis timeout);

}  // namespace baton::worker
