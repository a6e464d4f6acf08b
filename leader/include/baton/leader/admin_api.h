#pragma once
// The HTTP admin surface (SPEC section 8): /healthz, /status, /metrics, the
// dashboard at /, and /api/v1/. Routing and JSON only; the socket side is
// node_server.cpp. Errors are JSON {"code": stable, "message": human}.
// Mutations need `Authorization: Bearer <admin token>` and are written to
// audit_log; on a follower they answer 307 to the leader.
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

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

/// One route of /api/v1: dispatch and the OpenAPI document are both made
/// from this table, so the document cannot name a route that does not exist
/// or miss one that does.
struct ApiRoute {
  std::string method;   ///< GET | POST
  std::string pattern;  ///< "/api/v1/runs/{id}": `{x}` is a path parameter
  std::string summary;
  std::vector<std::string> query;  ///< documented query parameters
  bool mutation = false;           ///< needs the admin token
  std::function<HttpResponse(const HttpRequest&, const std::map<std::string, std::string>& params)> handler;
};

class AdminApi {
 public:
  /// `run_created` is called after a trigger created a run (the node wakes
  /// its dispatcher).
  AdminApi(std::function<NodeStatus()> status, store::LeaderStore& store, Metrics& metrics, std::string admin_token,
           std::function<bool(std::int64_t run, const std::string& reason)> cancel, std::function<void()> run_created);

  // The route table's handlers hold `this`: an AdminApi stays where it was made.
  AdminApi(const AdminApi&) = delete;
  AdminApi& operator=(const AdminApi&) = delete;

  HttpResponse handle(const HttpRequest& r);
  const std::vector<ApiRoute>& routes() const { return routes_; }

 private:
  HttpResponse route(const HttpRequest& r, const std::string& path);
  HttpResponse openapi() const;
  using Params = std::map<std::string, std::string>;  ///< path parameters and the checked query
  HttpResponse list_runs(const Params& q);
  HttpResponse list_epochs(const Params& q);
  HttpResponse list_workers(const Params& q);
  HttpResponse cancel(std::int64_t id, const HttpRequest& r);
  HttpResponse list_jobs(const Params& q, std::optional<std::string> only);
  HttpResponse set_paused(const std::string& job, bool paused);
  HttpResponse list_dead_letters(const Params& q);
  HttpResponse list_audit(const Params& q);
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
  std::vector<ApiRoute> routes_;
};

}  // namespace baton::leader
