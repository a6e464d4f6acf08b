#pragma once
// What the node says of itself on /api/v1/status and the dashboard's
// overview: its role and epoch, where it sends leader calls, and who leads
// as a status page should say it (leader_core::view_leadership: a lease
// holder that stopped renewing is not shown leading).
#include "baton/admin/node_status.h"
#include "baton/consensus/election.h"
#include "baton/leader_core/worker_reception.h"

namespace baton::node {

/// `led`: the epoch this node's elector leads, 0 if none.
admin::NodeStatus describe_node(const NodeIdentity& me, Epoch led, const leader_core::LeaseSighting& seen,
                                const leader_core::ReceptionLimits& limits, const consensus::ElectionConfig& election,
                                int attached_workers);

}  // namespace baton::node
