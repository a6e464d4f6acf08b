#pragma once
// What a node that does not lead says to a worker's hello: send it to the
// leader, hold the connection until a leader is known ("park" it), or send it
// on to another coordinator at once. Pure: the shell (NodeRuntime) passes the
// lease as its elector last read it, how long ago that read was sent, and how
// long the hello has been held.
//
// Why a parked hello must not be held long (docs/protocol.md, "Where a
// worker attaches"): while a worker is held it is attached nowhere, and the
// new leader counts its attempts' continuation timeout + margin from the
// moment it took over. A node whose database calls hang cannot learn of the
// new leader, so it must not hold anyone: once its last read of the lease is
// older than `stale_after`, it parks no hello and lets every parked one go.
// In a 30-minute chaos run a worker held by such a node reattached 8.8 s
// after losing its leader, past continuation + margin (6 s there), and its
// finished attempts were run again.
#include <optional>
#include <string>
#include <string_view>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/store/lease_rows.h"

namespace baton::leader_core {

/// The lease as this node last read it, and how long ago that read was sent
/// (so its `remaining` can be aged conservatively).
struct LeaseSighting {
  std::optional<store::LeaseView> lease;
  Millis age{0};
};

struct ReceptionLimits {
  Millis stale_after{1000};       ///< a sighting older than this: the node cannot tell who leads
  Millis park_max{5000};          ///< a hello is held at most this long
  Millis unreachable_hold{1000};  ///< before a worker is sent back to the leader it could not reach
};

/// The limits a node uses: `stale_after` is two follower polls (a follower
/// reads the lease at least once per poll) but at least 1 s; `park_max` is
/// at most 5 s and at most a third of the shortest continuation timeout +
/// margin a worker can have been given, so a worker held once, then sent on,
/// still reattaches inside it.
ReceptionLimits reception_limits(Millis poll_every, Millis continuation_timeout, Millis continuation_margin);

/// The leader this sighting names, if it can be trusted: read recently,
/// unexpired once aged by the sighting's age, not released, not this node,
/// with an endpoint.
std::optional<store::LeaseView> known_leader(const LeaseSighting& s, const NodeIdentity& me,
                                             const ReceptionLimits& limits);
bool stale(const LeaseSighting& s, const ReceptionLimits& limits);

struct Reception {
  enum class Kind {
    park,      ///< hold the connection; ask again at every tick (release())
    redirect,  ///< send Redirect{endpoint, epoch} and close
  };
  Kind kind = Kind::park;
  std::string endpoint;  ///< redirect: the leader's endpoint, empty when none is known
  Epoch epoch{0};        ///< redirect: the epoch it leads; park: the epoch whose leader not to send it to
  const char* reason = "";

  bool parked() const { return kind == Kind::park; }
};

/// A hello reaches a node that does not lead. `unreachable_leader` is the
/// hello's (the endpoint the worker failed to reach last); `stopping`: the
/// node is shutting down and holds no one.
Reception receive_hello(const LeaseSighting& s, const NodeIdentity& me, std::string_view unreachable_leader,
                        bool stopping, const ReceptionLimits& limits);

/// A parked hello at a later tick: still parked, or where to send it.
/// `held`: how long it has been parked; `skip_epoch`: the park's epoch.
Reception release(const LeaseSighting& s, const NodeIdentity& me, Millis held, Epoch skip_epoch,
                  const ReceptionLimits& limits);

}  // namespace baton::leader_core
