#pragma once
// `baton worker`: attaches to the leader over WebSocket (following
// redirects, reconnecting with capped exponential backoff and jitter), asks
// to start each assigned attempt and starts its process only after
// `start_granted`, heartbeats what it runs, keeps running attempts alive while
// detached for up to the leader's continuation timeout (then kills them and
// reports them failed), and delivers every finish through a durable outbox.
#include <atomic>
#include <memory>

#include "baton/worker/worker_config.h"

namespace baton::worker {

/// Runs until `stop` becomes true (running attempts are killed and reported
/// failed), or, once `drain` becomes true, until what runs has finished and
/// been acknowledged or cfg.drain_timeout has passed (the leader is told to
/// assign nothing more; assigned, unstarted attempts are handed back).
/// Returns the process exit code.
int run_agent(const WorkerConfig& cfg, const std::atomic<bool>& stop, const std::atomic<bool>& drain);

}  // namespace baton::worker
