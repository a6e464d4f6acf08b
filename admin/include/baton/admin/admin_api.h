#pragma once
// The HTTP admin surface (SPEC section 8; docs/operations.md lists every
// route): /healthz, /status, /metrics, the dashboard at /, and /api/v1.
// Routing, authentication and JSON only; the socket side is node_server.cpp,
// the database side store::AdminStore. Errors are JSON {"code": stable,
// "message": human}. Every /api/v1 route needs a token of at least its
// role; a route that must run on the leader answers 307 to it elsewhere.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "baton/admin/api_auth.h"
#include "baton/admin/lookup_lanes.h"
#include "baton/admin/node_status.h"
#include "baton/admin/payload_denylist.h"
#include "baton/admin/readiness.h"
#include "baton/archive/log_archive.h"
#include "baton/base/http_message.h"
#include "baton/leader_core/runtime_config.h"
#include "baton/leader_core/token_bucket.h"
#include "baton/service/node_metrics.h"
#include "baton/store/admin_store.h"

namespace baton::admin {

/// One authenticated request to a route of /api/v1.
struct ApiCall {
  const HttpRequest& request;
  std::map<std::string, std::string> params;  ///< path parameters and the checked query
  Principal who;
  NodeStatus node;
  store::Actor actor() const { return {who.name, Epoch{node.epoch}, who.role == Role::admin}; }
  const std::string& param(const std::string& name) const { return params.at(name); }
};

/// Runs one batch trigger (POST /api/v1/triggers) may create: one statement,
/// and one request against the trigger rate.
inline constexpr std::size_t trigger_batch_max = 500;

/// Per-token rates (docs/security.md, "Denial of service"): what creates
/// runs (trigger, rerun, replay, events) and what reads lists (a scan each)
/// may not be called faster than this on average, in bursts of at most
/// `burst`. Beyond: 429 with Retry-After. 0: no limit.
struct ApiLimits {
  double trigger_rate = 200;
  double trigger_burst = 400;
  double read_rate = 50;
  double read_burst = 200;
};

/// One route of /api/v1: dispatch and the OpenAPI document are both made
/// from this table, so the document cannot name a route that does not exist
/// or miss one that does.
struct ApiRoute {
  std::string method;   ///< GET | POST | PUT | DELETE
  std::string pattern;  ///< "/api/v1/runs/{id}": `{x}` is a path parameter
  std::string summary;
  std::vector<std::string> query;  ///< documented query parameters
  Role need = Role::read;          ///< the least role allowed
  bool leader_only = false;        ///< creates or cancels runs: the leader's epoch fences it
  std::string body;                ///< what the JSON request body holds ("" = none)
  std::function<HttpResponse(const ApiCall&)> handler;
};

/// What a node gives its admin API.
struct AdminApiPorts {
  std::function<NodeStatus()> status;
  /// Asks the leader's control loop to cancel a run; false when not leading.
  std::function<bool(std::int64_t run, const std::string& reason)> cancel;
  /// Called after runs were created (the leader wakes its dispatcher), with
  /// those that may be assigned at once as the insert returned them.
  std::function<void(std::vector<store::DueRun> due)> runs_created;
  /// Hands leadership over (POST /api/v1/leader/handover) to the node named
  /// (empty: any other): the epoch handed over, or why not. Null: the node
  /// cannot (the route answers 503).
  /// Hands leadership over to `to`; `actor` (the token's name) is audited
  /// in the release's own transaction.
  std::function<Result<std::int64_t>(const std::string& to, const std::string& actor)> hand_over = {};
};

class AdminApi {
 public:
  AdminApi(AdminApiPorts ports, store::AdminStore& store, service::NodeMetrics& metrics, const Clock& clock,
           std::string config_admin_token, bool metrics_need_token = false);

  // The route table's handlers hold `this`: an AdminApi stays where it was made.
  AdminApi(const AdminApi&) = delete;
  AdminApi& operator=(const AdminApi&) = delete;

  HttpResponse handle(const HttpRequest& r);
  const std::vector<ApiRoute>& routes() const { return routes_; }
  /// Where the route table and the typed contract (admin/api/contract.json)
  /// do not cover each other: a route without schemas, a schema of no
  /// route, query parameters or a body that differ. Empty when they agree.
  std::vector<std::string> contract_drift() const;
  /// Names and text refused in run parameters and event payloads.
  void set_payload_denylist(std::vector<std::string> denylist) { denylist_ = std::move(denylist); }
  /// The node's log archive (GET /api/v1/runs/{id}/output); null: none.
  void set_log_archive(const archive::LogArchive* archive) { archive_ = archive; }
  /// This node's incident journal for a window of wall-clock milliseconds
  /// (GET /api/v1/incident; leader/journal_ring.h); unset: the node keeps
  /// none.
  using IncidentExport = std::function<Result<std::string>(std::int64_t from_ms, std::int64_t to_ms)>;
  void set_incident_export(IncidentExport e) { incident_export_ = std::move(e); }
  void set_limits(const ApiLimits& limits) { limits_ = limits; }
  /// The node config's `runtime:`: what an unset live setting means, and
  /// beneath the stored ones when a change of a timing is checked.
  void set_runtime_defaults(const leader_core::RuntimeConfig& rt) { runtime_defaults_ = rt; }
  /// "https" or "http": the scheme of the leader's address in a 307 (every
  /// node of a cluster serves the same one).
  void set_scheme(std::string scheme) { scheme_ = std::move(scheme); }
  /// API tokens are looked up through `tokens` (connections of their own,
  /// one per admin thread: lookup_lanes.h), so a lookup never waits behind
  /// the API's other statements, nor behind another lookup, nor they
  /// behind a flood of lookups.
  ///
  /// The API's lists, searches and series run on `reads`, a connection of
  /// their own (docs/security.md, "Denial of service"): a read token's slow
  /// search holds that one, never the connection that triggers and every
  /// other write use. A read that finds it busy waits at most `read_wait`,
  /// then is answered 503 `reads_busy` (Retry-After), so reads queued
  /// behind a slow one cannot hold the admin threads that writes need.
  /// Null: reads share the API's connection.
  void set_token_stores(const std::vector<store::AdminStore*>& tokens, store::AdminStore* reads = nullptr);
  static constexpr std::chrono::milliseconds read_wait{250};
  /// The configured admin token, read again from its file.
  void set_config_admin_token(std::string token) { auth_.set_config_admin_token(std::move(token)); }
  /// The node's check of its database for /readyz, on `own` (a connection
  /// that is not the API's): at most once a second, off the API's threads.
  /// A change of outcome is logged, with the database's words.
  void check_database(store::AdminStore& own);
  /// Whether an Authorization header value names a valid API token (the
  /// server asks before it reads a large body: docs/security.md).
  bool authenticated(const std::string& authorization);
  /// A request refused before any token check for coming without one
  /// (NodeServer's pre-authentication body limit): counted as `missing`.
  void credential_missing() { auth_failed(AuthFailure::missing); }

 private:
  /// handle() without its measurement; `route_name` is set to the route
  /// table's pattern of the request (or /healthz, /status, /metrics,
  /// /dashboard), left as it is for anything else.
  HttpResponse answer(const HttpRequest& r, std::string& route_name);
  HttpResponse route(const HttpRequest& r, const std::string& path, std::string& route_name);
  HttpResponse openapi() const;
  HttpResponse metrics();
  HttpResponse status_json();
  /// GET /readyz: 200 when the database answered the node's last check and
  /// a leader is known, else 503; the JSON names each check. From memory:
  /// no database work per request (Readiness).
  HttpResponse readyz();
  /// A file of the dashboard (admin/dashboard/, embedded at build time).
  HttpResponse dashboard(const std::string& file);
  /// Runs `f` with the store: one connection, shared by the admin threads.
  template <class F>
  auto with_store(F&& f) {
    std::lock_guard lock(store_mutex_);
    return f(store_);
  }
  /// Runs the read `f` (returning a Result) on the read connection, or
  /// answers that it is busy (set_token_stores).
  template <class F>
  auto with_reads(F&& f) -> decltype(f(std::declval<store::AdminStore&>())) {
    if (!read_store_) return with_store(std::forward<F>(f));
    std::unique_lock lock(read_mutex_, read_wait);
    if (!lock) {
      metrics_.reads_busy++;
      return reads_busy();
    }
    return f(*read_store_);
  }
  /// What with_reads' caller gets when the read connection stays taken:
  /// db_error() answers it 503 `reads_busy` with Retry-After (admin_http.h,
  /// which holds the one prefix both use).
  static Error reads_busy();

  // Handlers (admin_handlers.cpp).
  std::vector<ApiRoute> make_routes();
  HttpResponse list_runs(const ApiCall& c);
  HttpResponse run_series(const ApiCall& c);
  HttpResponse verify_status(const ApiCall& c);
  HttpResponse acknowledge_violations(const ApiCall& c);
  HttpResponse show_run(const ApiCall& c);
  HttpResponse run_output(const ApiCall& c);
  HttpResponse cancel(const ApiCall& c);
  HttpResponse rerun(const ApiCall& c);
  HttpResponse list_jobs(const ApiCall& c, bool one);
  HttpResponse put_job(const ApiCall& c, bool create_only);
  HttpResponse why(const ApiCall& c);
  HttpResponse job_stats(const ApiCall& c);
  HttpResponse job_document(const ApiCall& c);
  HttpResponse delete_job(const ApiCall& c);
  HttpResponse set_paused(const ApiCall& c, bool paused);
  HttpResponse trigger(const ApiCall& c);
  HttpResponse trigger_batch(const ApiCall& c);
  HttpResponse list_workers(const ApiCall& c, bool one);
  HttpResponse hold_worker(const ApiCall& c, const std::string& state);
  HttpResponse list_dead_letters(const ApiCall& c, bool one);
  HttpResponse triage(const ApiCall& c);
  HttpResponse replay(const ApiCall& c, bool many);
  HttpResponse list_epochs(const ApiCall& c);
  HttpResponse list_nodes(const ApiCall& c);
  HttpResponse hand_over(const ApiCall& c);
  HttpResponse incident_export(const ApiCall& c);
  HttpResponse list_audit(const ApiCall& c);
  HttpResponse list_events(const ApiCall& c);
  HttpResponse post_event(const ApiCall& c);
  HttpResponse get_settings(const ApiCall& c);
  HttpResponse set_setting(const ApiCall& c);
  HttpResponse list_tokens(const ApiCall& c);
  HttpResponse create_token(const ApiCall& c);
  HttpResponse revoke_token(const ApiCall& c);
  // Webhooks (webhook_handlers.cpp).
  HttpResponse list_webhooks(const ApiCall& c, bool one);
  HttpResponse put_webhook(const ApiCall& c);
  HttpResponse delete_webhook(const ApiCall& c);
  HttpResponse list_webhook_deliveries(const ApiCall& c);
  HttpResponse ping_webhook(const ApiCall& c);
  HttpResponse redeliver(const ApiCall& c);
  // Worker identity (worker_identity_handlers.cpp).
  HttpResponse create_worker_enrollment(const ApiCall& c);
  HttpResponse rotate_worker_credential(const ApiCall& c);
  HttpResponse revoke_worker_credentials(const ApiCall& c);
  HttpResponse list_worker_credentials(const ApiCall& c);
  HttpResponse enroll_worker(const ApiCall& c);

  AdminApiPorts ports_;
  std::mutex store_mutex_;
  store::AdminStore& store_;
  std::timed_mutex read_mutex_;
  store::AdminStore* read_store_ = nullptr;
  using TokenLookups = LookupLanes<Result<std::optional<store::TokenGrant>>>;
  std::unique_ptr<TokenLookups> token_lookups_;  ///< set before the API serves
  /// 503 for a credential that cannot be checked now: the database's error
  /// is logged (at most once a second), never told to a caller who has not
  /// authenticated.
  HttpResponse credentials_unavailable(const Error& e);
  Readiness readiness_;
  std::optional<bool> database_answered_;  ///< the last check's outcome (check_database's thread only)
  std::mutex unavailable_log_mutex_;
  std::optional<MonoTime> unavailable_logged_;
  service::NodeMetrics& metrics_;
  void auth_failed(AuthFailure why);
  static constexpr Millis auth_log_every{10000};
  std::mutex auth_log_mutex_;
  std::optional<MonoTime> auth_logged_;
  std::int64_t auth_unlogged_ = 0;
  Authenticator auth_;
  bool metrics_need_token_;
  std::vector<ApiRoute> routes_;
  std::vector<std::string> denylist_ = default_payload_denylist();
  const archive::LogArchive* archive_ = nullptr;
  IncidentExport incident_export_;

  /// Refuses (429) a call over its token's rate; nullopt: go on.
  std::optional<HttpResponse> over_rate(const ApiRoute& route, const std::string& who);
  const Clock& clock_;
  ApiLimits limits_;
  leader_core::RuntimeConfig runtime_defaults_;
  std::string scheme_ = "https";
  std::mutex rate_mutex_;
  std::map<std::string, leader_core::TokenBucket> trigger_buckets_, read_buckets_;  ///< by token name

  /// The last answer of a scan of the runs table (/status counts, /metrics
  /// gauges), reused for a second: any number of requests costs at most
  /// one scan a second per node.
  template <class T>
  struct Recent {
    std::mutex mutex;
    std::optional<T> value;
    MonoTime at{};
  };
  template <class T, class F>
  Result<T> recent(Recent<T>& r, F&& read);
  Recent<store::RunCounts> counts_;
  Recent<store::ClusterGauges> gauges_;
  Recent<store::Page> nodes_;  ///< the cluster's node endpoints, for the dashboard's connect-src
  /// The dashboard's Content-Security-Policy: its connections limited to
  /// this node and the cluster's registered node endpoints.
  std::string dashboard_policy();
};

}  // namespace baton::admin
