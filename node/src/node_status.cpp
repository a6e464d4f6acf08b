#include "node_status.h"

#include "baton/leader_core/leadership_view.h"

namespace baton::node {

admin::NodeStatus describe_node(const NodeIdentity& me, Epoch led, const leader_core::LeaseSighting& seen,
                                const leader_core::ReceptionLimits& limits, const consensus::ElectionConfig& election,
                                int attached_workers) {
  admin::NodeStatus s;
  s.node_id = me.node_id;
  s.incarnation = me.incarnation;
  const bool leads = led.value != 0;
  s.role = leads ? "leader" : "follower";
  s.epoch = leads ? led.value : (seen.lease ? seen.lease->epoch.value : 0);
  if (leads) {
    s.leader_id = me.node_id;
    s.leader_endpoint = me.endpoint;
  } else if (auto lease = leader_core::known_leader(seen, me, limits)) {
    // Where leader calls go while the lease is unexpired, even one whose
    // renewals are overdue: a slow leader is not turned away.
    s.leader_id = lease->leader_id;
    s.leader_endpoint = lease->leader_endpoint;
  }
  const auto view = leader_core::view_leadership(seen, me, leads, election.lease, election.renew_every, limits);
  s.leader_state = leader_core::to_string(view.state);
  s.last_leader_id = view.last_leader_id;
  s.last_leader_epoch = view.last_epoch.value;
  if (view.lease_left) s.lease_left_ms = view.lease_left->count();
  s.attached_workers = attached_workers;
  return s;
}

}  // namespace baton::node
