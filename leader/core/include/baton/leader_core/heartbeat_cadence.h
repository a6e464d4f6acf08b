#pragma once
// How often a worker is told to send heartbeats, and how long its silence
// may last before the leader detaches it, by the size of the fleet. Pure.
//
// Why: every heartbeat costs the leader a frame read, a decode and a pass of
// the book, so a fleet's idle cost grows with workers x rate. Like Nomad's
// `max_heartbeats_per_second`, the leader stretches the interval it gives a
// worker in its welcome so that the whole fleet stays near a heartbeat
// budget. The timeout stretches by the same factor (a worker still gets
// timeout / interval heartbeats before it is detached), and never past
// `continuation_margin`: the relation the node validates for its
// configuration (margin >= heartbeat timeout: a worker may notice a detach
// that much later, docs/protocol.md) holds for every worker's own timeout
// too, so stretching never weakens the rule that a lost worker has killed
// its process before the leader retries its attempt.
#include <cstddef>

#include "baton/base/clock.h"
#include "baton/leader_core/runtime_config.h"

namespace baton::leader_core {

struct HeartbeatCadence {
  Millis interval{1000};  ///< the worker sends a heartbeat this often
  Millis timeout{5000};   ///< the leader detaches it after this long of silence
  friend bool operator==(const HeartbeatCadence&, const HeartbeatCadence&) = default;
};

/// The cadence for a worker welcomed while `attached` workers (itself
/// included) are attached: the configured one while the fleet's heartbeats
/// fit `max_heartbeats_per_second`, else an interval of attached / budget,
/// the timeout stretched alike, both capped where the timeout reaches
/// `continuation_margin`.
HeartbeatCadence heartbeat_cadence(std::size_t attached, const RuntimeConfig& cfg);

}  // namespace baton::leader_core
