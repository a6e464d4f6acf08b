#include "baton/admin/readiness.h"

#include <boost/json.hpp>

namespace baton::admin {

namespace json = boost::json;

void Readiness::checked(bool answered, MonoTime at) {
  std::lock_guard lock(mutex_);
  if (answered)
    answered_at_ = at;
  else
    answered_at_.reset();
}

HttpResponse Readiness::answer(const NodeStatus& node, MonoTime now) const {
  bool database = false;
  {
    std::lock_guard lock(mutex_);
    database = answered_at_ && now - *answered_at_ <= fresh_for;
  }
  json::object checks;
  checks["database"] = database ? "ok" : "unavailable";
  bool ready = database;
  if (node.role == "leader") {
    checks["leader"] = "this node";
  } else if (!node.leader_id.empty() && !node.leader_endpoint.empty()) {
    checks["leader"] = node.leader_id;
  } else {
    ready = false;
    checks["leader"] = "none known";
  }
  json::object body{{"ready", ready},
                    {"node_id", node.node_id},
                    {"role", node.role},
                    {"epoch", node.epoch},
                    {"checks", std::move(checks)}};
  return {ready ? 200 : 503, "application/json", json::serialize(body) + "\n", {}};
}

}  // namespace baton::admin
