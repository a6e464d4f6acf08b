#pragma once
// What a read of the leader lease returns: plain types, no port
// (lease_store.h is the port).
#include <string>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/base/result.h"
#include "baton/store/write_outcome.h"

namespace baton::store {

struct LeaseView {
  Epoch epoch{0};
  std::string leader_id;
  std::string leader_incarnation;
  std::string leader_endpoint;
  bool released = true;
  Millis remaining{0};  ///< lease_expires_at - now() by the database clock; <= 0 means expired
  /// A planned handover (schemas/0043): the node its last leader handed
  /// over to, and how long (by the database clock) no other node may
  /// campaign. Empty or <= 0: any node may.
  std::string handover_to = {};
  Millis handover_left = Millis{0};

  bool expired() const { return released || remaining.count() <= 0; }
  /// Kept for another node by a planned handover.
  bool reserved_for_other(const NodeIdentity& n) const {
    return !handover_to.empty() && handover_to != n.node_id && handover_left.count() > 0;
  }
  bool held_by(const NodeIdentity& n) const {
    return !released && leader_id == n.node_id && leader_incarnation == n.incarnation;
  }
};

struct CampaignResult {
  bool won = false;
  LeaseView lease;  ///< after the attempt: ours when won, the holder's otherwise
};

}  // namespace baton::store
