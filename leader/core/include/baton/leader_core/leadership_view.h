#pragma once
// Who leads, as a status page should say it: the lease holder only while it
// keeps renewing. A killed leader's lease stays in the database until it
// runs out (the lease's length, 2 s by default), and for those seconds a
// node that trusts the row would report a dead node as leading. The lease
// row says how long ago it was last renewed (it is written as now() +
// lease, so lease - remaining is the time since), which tells a leader that
// stopped renewing from one that renews. Pure: the node passes its last
// sighting of the lease and its election settings. Display only: workers'
// redirects and the API's forwarding still follow known_leader(), so a
// slow renewal never turns a caller away.
#include <optional>
#include <string>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/leader_core/worker_reception.h"

namespace baton::leader_core {

struct LeadershipView {
  enum class State {
    leading,       ///< a holder that renews its lease (this node, or the one the lease names)
    not_renewing,  ///< the lease is held but its renewals are overdue: no leader until it runs out
    none,          ///< released, run out, or not read lately: an election is under way or unknown
  };
  State state = State::none;
  std::string leader_id;             ///< leading: who
  std::string last_leader_id;        ///< the lease's last holder, whatever the state ("" if never held)
  Epoch last_epoch{0};               ///< that holder's epoch
  std::optional<Millis> lease_left;  ///< not_renewing: until the lease runs out and another node may win
};

const char* to_string(LeadershipView::State s);

/// `leading_here`: this node's elector leads. A renewal is overdue once the
/// lease has gone unrenewed for two renewal periods and a tenth of a second
/// more (one missed renewal, with room for a slow round trip).
LeadershipView view_leadership(const LeaseSighting& s, const NodeIdentity& me, bool leading_here, Millis lease,
                               Millis renew_every, const ReceptionLimits& limits);

}  // namespace baton::leader_core
