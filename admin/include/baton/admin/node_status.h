// What a node says of itself to the admin API: who it is, its role and
// epoch as it last saw them, the leader it knows.
#pragma once

#include <cstdint>
#include <string>

namespace baton::admin {

struct NodeStatus {
  std::string node_id;
  std::string incarnation;
  std::string role;        ///< leader | follower
  std::int64_t epoch = 0;  ///< the current epoch as this node last saw it
  std::string leader_id;   ///< where leader calls go: the lease's holder while its lease is unexpired
  std::string leader_endpoint;
  int attached_workers = 0;
  /// Who leads as a status page says it (leader_core::LeadershipView):
  /// leading | not_renewing (the holder's renewals are overdue; no leader
  /// until the lease runs out, lease_left_ms) | none.
  std::string leader_state = "none";
  std::string last_leader_id = {};  ///< the lease's last holder
  std::int64_t last_leader_epoch = 0;
  std::int64_t lease_left_ms = -1;  ///< not_renewing: until the lease runs out; -1 otherwise
};

}  // namespace baton::admin
