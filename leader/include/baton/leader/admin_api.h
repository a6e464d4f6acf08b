#pragma once
// The HTTP admin surface (SPEC section 8): /healthz, /status, /metrics, the
// dashboard at /, and /api/v1/. Routing and JSON only; the socket side is
// node_server.cpp. Errors are JSON {"code": stable, "message": human}.
// Mutations need `Authorization: Bearer <admin token>` and are written to
// audit_log; on a follower they answer 307 to the leader.
#include <functional>
#include <mutex>
#include <string>

#include "baton/leader/metrics.h"
#include "baton/leader/node_server.h"
#include "baton/store/leader_store.h"

namespace baton::leader {

struct NodeStatus {
  std::string node_id;
  std::string incarnation;
  std::string role;        ///< leader | follower
  std::int64_t epoch = 0;  ///< the current epoch as this node last saw it
  std::string leader_id;
  std::string leader_endpoint;
  int attached_workers = 0;
};

class AdminApi {
 public:
  /// `run_created` is called after a trigger created a run (the node wakes
  /// its dispatcher).
  AdminApi(std::function<NodeStatus()> status, store::LeaderStore& store, Metrics& metrics, std::string admin_token,
           std::function<bool(std::int64_t run, const std::string& reason)> cancel, std::function<void()> run_created);

  HttpResponse handle(const HttpRequest& r);

 private:
  HttpResponse status_json();
  HttpResponse trigger(const std::string& job, const HttpRequest& r, const NodeStatus& s);
  HttpResponse run(std::int64_t id);
  HttpResponse dashboard();

  std::function<NodeStatus()> status_;
  std::mutex store_mutex_;  // one connection, two admin threads
  store::LeaderStore& store_;
  Metrics& metrics_;
  std::string admin_token_;
  std::function<bool(std::int64_t, const std::string&)> cancel_;
  std::function<void()> run_created_;
};

}  // namespace baton::leader
