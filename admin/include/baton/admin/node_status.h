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
  std::string leader_id;
  std::string leader_endpoint;
  int attached_workers = 0;
};

}  // namespace baton::admin
