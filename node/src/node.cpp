#include "baton/node/node.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include <sys/resource.h>

#include <chrono>
#include <list>
#include <map>
#include <thread>

#include "baton/admin/admin_api.h"
#include "baton/base/json_text.h"
#include "baton/base/uuid.h"
#include "baton/consensus/elector.h"
#include "baton/leader/control_loop.h"
#include "baton/leader/node_server.h"
#include "baton/leader_core/worker_reception.h"
#include "baton/notify/https_post.h"
#include "baton/notify/webhook_sender.h"
#include "baton/service/service_manager.h"
#include "history_sweeper.h"
#include "node_status.h"

namespace baton::node {
using namespace baton::leader;  // the runtime's parts, which this room wires
using admin::AdminApi;
using admin::AdminApiPorts;
using admin::NodeStatus;
using archive::ArchiveWriter;
using archive::LogArchive;
using service::NodeMetrics;

namespace {
// File descriptors a node needs besides its connections (database
// sessions, log files, the listener, the archive): fewer than this above
// max_connections and a full node could not open them.
constexpr rlim_t fds_beside_connections = 256;
// How often the watchdog checks the leadership deadline: the step-down can
// be this late, so it is small next to any sane safety_margin.
constexpr Millis watchdog_every{20};
constexpr Millis registry_every{5000};
// Bound on waiting for the election thread at shutdown: if the database
// hangs, exit anyway (the lease then expires on its own).
constexpr Millis shutdown_join_max{3000};
// Each node removes expired runs from its own log archive this often.
constexpr Millis archive_sweep_every{3600 * 1000};
// How often sessions of revoked worker credentials are looked for, and how
// far back: a sweep missed (the database away for a while) is caught up by
// the next one within the lookback.
constexpr Millis revocation_sweep_every{2000};
constexpr int revoked_lookback_seconds = 120;
// The inbox waiter's longest wait: how late it notices that its loop stopped.
constexpr Millis inbox_wait{200};
// The webhook sender's longest wait between passes: a retry comes due
// without a notification, so it looks this often.
constexpr Millis webhook_wait{1000};
// The run statistics' roll-up (schemas/0039): each node tries once a
// minute, one at a time under the database's advisory lock, a bounded
// number of minutes per statement (a node far behind calls it again).
constexpr Millis stats_rollup_every{60000};
constexpr int stats_rollup_minutes = 240;
constexpr int stats_rollup_steps_max = 60;
static_assert(watchdog_every < Millis{100});
/// How long a planned handover waits for the control loop's thread to end
/// (its lanes' writes in flight) before it releases the lease regardless.
constexpr Millis handover_drain_max{5000};

/// One epoch's control loop with its own connections and thread.
struct LoopHandle {
  Epoch epoch;
  std::unique_ptr<store::RunStore> runs, assign_runs, start_runs, finish_runs;
  std::unique_ptr<store::LeaderStore> store, reads;
  /// Waits on the inbox channel (a connection of its own that LISTENs).
  std::unique_ptr<store::LeaderStore> inbox;
  /// The webhook sender's queue (a connection of its own); null: no sender.
  std::unique_ptr<store::WebhookOutbox> outbox;
  std::unique_ptr<notify::WebhookSender> sender;
  std::unique_ptr<ControlLoop> loop;
  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};
  std::thread thread;
};

class NodeRuntime final : public ServerHandlers {
 public:
  NodeRuntime(const NodeConfig& cfg, const NodePorts& ports, NodeIdentity me, consensus::Elector& elector,
              NodeMetrics& metrics, store::AdminStore& admin_store, store::AdminStore& identity_store,
              const notify::HttpsPoster& poster)
      : cfg_(cfg),
        ports_(ports),
        me_(std::move(me)),
        elector_(elector),
        metrics_(metrics),
        identity_store_(identity_store),
        worker_auth_(
            cfg.worker_token,
            [this](const std::string& hash) {
              std::lock_guard lock(identity_mutex_);
              return identity_store_.worker_credential_by_hash(hash);
            },
            clock_),
        admin_(AdminApiPorts{[this] { return status(); },
                             [this](std::int64_t run, const std::string& reason) { return cancel(run, reason); },
                             [this](std::vector<store::DueRun> due) { wake_dispatcher(std::move(due)); },
                             [this](const std::string& to, const std::string& actor) { return hand_over(to, actor); }},
               admin_store, metrics, clock_, cfg.admin_token, cfg.metrics_require_token),
        reception_(leader_core::reception_limits(cfg.election.poll_every, cfg.runtime.continuation_timeout,
                                                 cfg.runtime.continuation_margin)),
        poster_(poster) {
    handover_store_ = ports_.lease_store("baton-node-" + me_.node_id + "-handover");
    admin_.set_payload_denylist(cfg.payload_denylist);
    admin_.set_limits(cfg.api_limits);
    admin_.set_runtime_defaults(cfg.runtime);
    admin_.set_scheme(cfg.insecure ? "http" : "https");
    if (!cfg.log_archive_dir.empty()) {
      archive_ = std::make_unique<LogArchive>(cfg.log_archive_dir);
      archive_writer_ = std::make_unique<ArchiveWriter>(*archive_);
      admin_.set_log_archive(archive_.get());
    }
    if (!cfg.incident_journal_dir.empty()) {
      journal_ring_ = std::make_unique<JournalRing>(cfg.incident_journal_dir, cfg.incident_journal_max_mb * 1048576LL,
                                                    std::chrono::hours(24) * cfg.incident_journal_max_days);
      admin_.set_incident_export([ring = journal_ring_.get()](std::int64_t from_ms, std::int64_t to_ms) {
        return ring->export_window(from_ms, to_ms);
      });
    }
  }

  /// The node's log archive, if it has one (every node sweeps its own).
  const LogArchive* archive() const { return archive_.get(); }

  HttpResponse handle_http(const HttpRequest& r) override { return admin_.handle(r); }

  // A refusal is logged once, by the session (worker_frame_rejected).
  WorkerAdmission admit_worker(const protocol::Hello& hello) override { return worker_auth_.admit(hello); }

  /// The admin token file, read again when it changes (its modification
  /// time or size): the new token is in use within a few seconds and the
  /// old one refused; a file that does not hold a valid token leaves the
  /// previous one in use and says why once. Called with the revocations.
  void reload_admin_token() {
    if (cfg_.admin_token_path.empty()) return;
    const std::string seen = file_stamp(cfg_.admin_token_path);
    if (seen == admin_token_seen_) return;
    admin_token_seen_ = seen;
    auto token = read_secret_file(cfg_.admin_token_path, "admin_token_file");
    if (!token) {
      spdlog::error("admin_token_reload_failed node={} file={} error={} (the previous token stays in use)", me_.node_id,
                    json_quote(cfg_.admin_token_path), json_quote(token.error().message));
      return;
    }
    admin_.set_config_admin_token(*token);
    spdlog::info("admin_token_reloaded node={} file={}", me_.node_id, json_quote(cfg_.admin_token_path));
  }

  void check_database(store::AdminStore& own) { admin_.check_database(own); }

  /// Credentials revoked (or replaced by a new enrollment) lately: their
  /// sessions are closed. Called every few seconds off the watchdog thread.
  void close_revoked_workers(NodeServer& server) {
    Result<std::vector<std::int64_t>> revoked = [&] {
      std::lock_guard lock(identity_mutex_);
      return identity_store_.recently_revoked_worker_credentials(revoked_lookback_seconds);
    }();
    if (!revoked || revoked->empty()) return;
    worker_auth_.forget(*revoked);
    if (int n = server.close_workers_with_credentials(*revoked, "worker credential revoked"); n > 0)
      spdlog::warn("worker_sessions_closed node={} reason=credential_revoked count={}", me_.node_id, n);
  }

  void on_worker_hello(const std::shared_ptr<WorkerLink>& link, const protocol::Hello& hello) override {
    std::lock_guard lock(mutex_);
    if (active_ && !active_->stop.load()) {
      links_[link->id()] = active_;
      active_->loop->post(WorkerAttached{link, hello});
      return;
    }
    const auto r = leader_core::receive_hello(sighting(), me_, hello.unreachable_leader, stopping_, reception_);
    if (r.parked()) {
      spdlog::info("worker_hello_parked node={} worker={} skip_epoch={}", me_.node_id, json_quote(hello.worker_id),
                   r.epoch.value);
      parked_[link->id()] = Parked{link, hello, clock_.mono(), r.epoch};
      return;
    }
    send_on(*link, hello, r, Millis{0});
  }
  void on_worker_message(std::uint64_t link_id, const std::string& worker_id, protocol::Message m) override {
    std::lock_guard lock(mutex_);
    auto it = links_.find(link_id);
    if (it == links_.end()) return;
    if (auto loop = it->second.lock()) loop->loop->post(WorkerMessage{link_id, worker_id, std::move(m)});
  }
  void on_worker_closed(std::uint64_t link_id, const std::string& worker_id) override {
    std::lock_guard lock(mutex_);
    parked_.erase(link_id);
    auto it = links_.find(link_id);
    if (it == links_.end()) return;
    if (auto loop = it->second.lock()) loop->loop->post(WorkerDetached{link_id, worker_id});
    links_.erase(it);
  }
  void on_protocol_error() override { metrics_.protocol_errors++; }
  void on_connection_refused() override { metrics_.connections_refused++; }
  void use_api_stores(const std::vector<store::AdminStore*>& tokens, store::AdminStore& reads) {
    admin_.set_token_stores(tokens, &reads);
  }
  void on_auth_throttled() override { metrics_.auth_throttled++; }
  void on_request_shed() override { metrics_.requests_shed++; }
  bool credential_valid(const std::string& authorization) override { return admin_.authenticated(authorization); }
  void on_credential_missing() override { admin_.credential_missing(); }

  /// Called by the watchdog loop: keeps exactly one control loop running
  /// for the epoch this node leads, and none otherwise.
  void reconcile(NodeServer& server) {
    std::shared_ptr<LoopHandle> retired;
    Epoch epoch{0};
    {
      std::lock_guard lock(mutex_);
      // Read under the lock that hand_over() holds while it changes the
      // role: never a loop started for an epoch it has just handed over.
      epoch = elector_.leader_epoch();
      const bool fenced = active_ && active_->loop->fenced();
      if (active_ && (active_->epoch != epoch || fenced || active_->done.load())) {
        if (fenced) fenced_epoch_ = active_->epoch;
        retired = active_;
        active_.reset();
      }
      if (!active_ && epoch.value != 0 && epoch != fenced_epoch_ && !handing_over_) active_ = start_loop(epoch);
      metrics_.epoch = epoch.value;
      metrics_.is_leader = epoch.value != 0;
      release_parked();
      for (auto& l : handed_over_) retiring_.push_back(std::move(l));
      handed_over_.clear();
    }
    if (retired) {
      retired->stop = true;
      server.close_all_workers("leader stepped down");
      retiring_.push_back(retired);
    }
    if (close_workers_.exchange(false)) server.close_all_workers("leader handing over");
    for (auto it = retiring_.begin(); it != retiring_.end();) {
      if ((*it)->done.load()) {
        (*it)->thread.join();
        it = retiring_.erase(it);
      } else {
        ++it;
      }
    }
  }

  /// Workers held while no leader was known: attach them here if this node
  /// now leads, redirect them once another leader is known, and let them go
  /// (to the next coordinator) if the election takes too long or this node
  /// can no longer read the lease (leader_core/worker_reception.h).
  void release_parked() {
    if (parked_.empty()) return;
    const auto seen = sighting();
    const MonoTime now = clock_.mono();
    for (auto it = parked_.begin(); it != parked_.end();) {
      Parked& p = it->second;
      const auto held = std::chrono::duration_cast<Millis>(now - p.since);
      if (active_ && !active_->stop.load()) {
        spdlog::info("worker_hello_released node={} worker={} to=here held_ms={}", me_.node_id,
                     json_quote(p.hello.worker_id), held.count());
        links_[it->first] = active_;
        active_->loop->post(WorkerAttached{p.link, p.hello});
      } else if (auto r = leader_core::release(seen, me_, held, p.skip_epoch, reception_); !r.parked()) {
        send_on(*p.link, p.hello, r, held);
      } else {
        ++it;
        continue;
      }
      it = parked_.erase(it);
    }
  }

  /// Stops every loop; waits at most `max` for their threads.
  void stop_loops(Millis max) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;  // from now on, workers are sent on at once, not held
      // The same rule as a hello at a stopping node: to the leader if one
      // is known, else on to the next coordinator.
      const auto seen = sighting();
      for (auto& [id, p] : parked_)
        send_on(*p.link, p.hello, leader_core::receive_hello(seen, me_, p.hello.unreachable_leader, true, reception_),
                std::chrono::duration_cast<Millis>(clock_.mono() - p.since));
      parked_.clear();
      if (active_) retiring_.push_back(active_);
      active_.reset();
      for (auto& l : handed_over_) retiring_.push_back(std::move(l));
      handed_over_.clear();
    }
    auto deadline = clock_.mono() + max;
    for (auto& l : retiring_) l->stop = true;
    for (auto& l : retiring_) {
      while (!l->done.load() && clock_.mono() < deadline) std::this_thread::sleep_for(Millis{5});
      if (l->done.load())
        l->thread.join();
      else
        l->thread.detach();  // stuck in the database: its writes are fenced anyway
    }
    retiring_.clear();
  }

  /// The sweep of `epoch` found runs without an owner: the loop leading
  /// that epoch re-reads them and repairs them (RunBook::recheck); none
  /// if this node no longer leads it.
  bool recheck(Epoch epoch, const std::vector<std::int64_t>& runs, const std::string& invariant) {
    std::lock_guard lock(mutex_);
    if (!active_ || active_->stop.load() || active_->epoch != epoch) return false;
    std::vector<RunId> ids;
    for (auto r : runs) ids.push_back(RunId{r});
    active_->loop->post(RecheckRuns{std::move(ids), invariant});
    return true;
  }

 private:
  leader_core::LeaseSighting sighting() const {
    auto s = elector_.sighting();
    return {std::move(s.lease), std::chrono::duration_cast<Millis>(clock_.mono() - s.read_sent_at)};
  }

  /// Redirects a worker that this node does not attach (to the leader, or
  /// with no endpoint: to its next coordinator) and closes the connection.
  void send_on(WorkerLink& link, const protocol::Hello& hello, const leader_core::Reception& r, Millis held) {
    spdlog::info("worker_sent_on node={} worker={} to={} epoch={} held_ms={} reason={}", me_.node_id,
                 json_quote(hello.worker_id), r.endpoint.empty() ? "(no leader known)" : json_quote(r.endpoint),
                 r.epoch.value, held.count(), r.reason);
    link.send(protocol::Redirect{r.endpoint, r.epoch.value});
    link.close(r.reason);
  }

  std::shared_ptr<LoopHandle> start_loop(Epoch epoch) {
    auto h = std::make_shared<LoopHandle>();
    h->epoch = epoch;
    std::string app = "baton-node-" + me_.node_id + "-loop";
    h->runs = ports_.run_store(app);
    h->assign_runs = ports_.run_store(app + "-assigns");
    h->start_runs = ports_.run_store(app + "-starts");
    h->finish_runs = ports_.run_store(app + "-finishes");
    h->store = ports_.leader_store(app + "-q");
    h->reads = ports_.leader_store(app + "-reads");
    h->inbox = ports_.leader_store(app + "-inbox");
    RuntimeConfig runtime = cfg_.runtime;
    runtime.payload_denylist = cfg_.payload_denylist;
    h->loop = std::make_unique<ControlLoop>(epoch, me_, runtime,
                                            RunLanes{*h->runs, *h->assign_runs, *h->start_runs, *h->finish_runs},
                                            *h->store, *h->reads, clock_, metrics_);
    h->loop->set_archive_writer(archive_writer_.get());
    h->loop->set_journal(journal_ring_.get());
    h->thread = std::thread([h] {
      h->loop->run(h->stop);
      h->done = true;
    });
    // A committed submission or event wakes the loop at once (the cron
    // pass takes the inbox anyway, so a lost notification only delays).
    // Detached: it holds the handle and ends within inbox_wait of the
    // loop's stop (a database that hangs holds it to its call deadline,
    // never the node's shutdown).
    std::thread([h] {
      while (!h->stop.load() && !h->done.load()) {
        auto noticed = h->inbox->await_inbox(inbox_wait);
        if (!noticed) {
          std::this_thread::sleep_for(inbox_wait);  // the database is away: the cron pass covers it
          continue;
        }
        if (*noticed) h->loop->post(InboxNoticed{});
      }
    }).detach();
    if (ports_.webhook_outbox) start_webhook_sender(h, app);
    return h;
  }

  /// The epoch's webhook sender (notify/webhook_sender.h): beside the loop,
  /// never on it; detached like the inbox waiter (it holds the handle and
  /// ends within a POST's timeout and webhook_wait of the loop's stop).
  void start_webhook_sender(const std::shared_ptr<LoopHandle>& h, const std::string& app) {
    h->outbox = ports_.webhook_outbox(app + "-webhooks");
    notify::SenderSettings settings;
    settings.timeout = cfg_.webhooks.timeout;
    const notify::HttpsPoster* poster = &poster_;
    h->sender = std::make_unique<notify::WebhookSender>(
        *h->outbox, [poster](const notify::OutgoingPost& p) { return poster->post(p); },
        [] {
          return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
              .count();
        },
        settings);
    std::thread([h] {
      while (!h->stop.load() && !h->done.load()) {
        auto pass = h->sender->pass(h->epoch);
        if (pass.fenced) return;
        if (pass.error) {
          std::this_thread::sleep_for(webhook_wait);  // the database is away; the queue keeps
          continue;
        }
        if (pass.attempted == 0) (void)h->outbox->await_deliveries(webhook_wait);  // else claim the next at once
      }
    }).detach();
  }

  void wake_dispatcher(std::vector<store::DueRun> due) {
    std::lock_guard lock(mutex_);
    if (active_ && !active_->stop.load()) active_->loop->post(DispatchNow{std::move(due)});
  }

  /// A planned handover (POST /api/v1/leader/handover; docs/operations.md,
  /// "Handing leadership over"). The control loop stops first: it creates
  /// and assigns nothing more, and what its lanes have in flight is
  /// written (or fenced) before its thread ends. Its workers are closed:
  /// they find the next leader as after any change, their unacknowledged
  /// finishes kept in their outboxes. Then the lease is released for `to`
  /// (empty: any other node), who alone may campaign for two leases.
  Result<std::int64_t> hand_over(const std::string& to, const std::string& actor) {
    std::shared_ptr<LoopHandle> loop;
    {
      std::lock_guard lock(mutex_);
      if (handing_over_) return make_error(Errc::bad_input, "this node is handing leadership over already");
      if (!active_ || active_->stop.load()) return make_error(Errc::bad_input, "this node is not leading");
      handing_over_ = true;
      loop = active_;
      active_.reset();
      loop->stop = true;
    }
    close_workers_ = true;  // by reconcile, on the watchdog thread, which owns the server
    const MonoTime began = clock_.mono();
    while (!loop->done.load() && clock_.mono() - began < handover_drain_max) std::this_thread::sleep_for(Millis{5});
    // The loop's thread has ended: what its write lanes have in flight or
    // queued is written before the lease goes (each statement bounded by
    // the store's call deadline). A loop that did not end in time is left
    // to reconcile, which joins it; its writes are fenced once the next
    // leader is elected.
    const bool drained = loop->done.load();
    if (drained) loop->loop->wait_writes_landed();
    const auto drain_ms = std::chrono::duration_cast<Millis>(clock_.mono() - began).count();
    auto r = elector_.hand_over(*handover_store_, to, cfg_.election.lease * 2, actor);
    {
      std::lock_guard lock(mutex_);
      handing_over_ = false;
      handed_over_.push_back(loop);  // joined by reconcile once done
    }
    spdlog::info("leader_handover node={} epoch={} to={} drained={} drain_ms={} outcome={}", me_.node_id,
                 loop->epoch.value, to.empty() ? "(any)" : to, drained, drain_ms,
                 r ? "released" : json_quote(r.error().message));
    if (!r) return r.error();
    return r->value;
  }

  bool cancel(std::int64_t run, const std::string& reason) {
    std::lock_guard lock(mutex_);
    if (!active_ || active_->stop.load()) return false;
    active_->loop->post(CancelRun{RunId{run}, reason});
    return true;
  }

  NodeStatus status() {
    return describe_node(me_, elector_.leader_epoch(), sighting(), reception_, cfg_.election,
                         metrics_.attached_workers.load());
  }

  const NodeConfig& cfg_;
  /// The admin token file's modification time and size when it was last read.
  std::string admin_token_seen_ = file_stamp(cfg_.admin_token_path);
  static std::string file_stamp(const std::string& path) {
    std::error_code ec;
    const auto mtime = std::filesystem::last_write_time(path, ec);
    if (ec) return "missing";
    const auto size = std::filesystem::file_size(path, ec);
    return std::to_string(mtime.time_since_epoch().count()) + ":" + std::to_string(ec ? 0 : size);
  }
  const NodePorts& ports_;
  const NodeIdentity me_;
  consensus::Elector& elector_;
  NodeMetrics& metrics_;
  RealClock clock_;            // before admin_ and worker_auth_, which hold it
  std::mutex identity_mutex_;  ///< identity_store_ is one connection, used by the admin pool's threads
  store::AdminStore& identity_store_;
  WorkerAuthenticator worker_auth_;
  std::unique_ptr<LogArchive> archive_;
  std::unique_ptr<ArchiveWriter> archive_writer_;  ///< after archive_: writes into it until destroyed
  std::unique_ptr<JournalRing> journal_ring_;      ///< the loops' incident journal (null: none)
  AdminApi admin_;
  std::mutex mutex_;
  std::shared_ptr<LoopHandle> active_;
  Epoch fenced_epoch_{0};
  std::list<std::shared_ptr<LoopHandle>> retiring_;
  std::map<std::uint64_t, std::weak_ptr<LoopHandle>> links_;
  struct Parked {
    std::shared_ptr<WorkerLink> link;
    protocol::Hello hello;
    MonoTime since;
    Epoch skip_epoch{0};  ///< do not redirect to the leader of this epoch (the worker could not reach it)
  };
  const leader_core::ReceptionLimits reception_;
  const notify::HttpsPoster& poster_;                     ///< the webhook sender's HTTPS client (run_node owns it)
  std::map<std::uint64_t, Parked> parked_;                ///< link id -> a worker waiting for a leader to be known
  bool stopping_ = false;                                 ///< stop_loops() has begun: hold no more workers
  bool handing_over_ = false;                             ///< hand_over() has stopped the loop: start none
  std::vector<std::shared_ptr<LoopHandle>> handed_over_;  ///< stopped by hand_over(), for reconcile to join
  std::atomic<bool> close_workers_{false};                ///< hand_over() asks reconcile to close the workers
  std::unique_ptr<store::LeaseStore> handover_store_;     ///< the handover's release, on its own connection
};

}  // namespace

int run_node(const NodeConfig& cfg, const NodePorts& ports, const std::atomic<bool>& stop) {
  NodeIdentity me{cfg.node_id, random_uuid(), cfg.advertise};
  spdlog::info("node_start node={} incarnation={} endpoint={} lease={}ms renew_every={}ms safety_margin={}ms",
               me.node_id, me.incarnation, me.endpoint, cfg.election.lease.count(), cfg.election.renew_every.count(),
               cfg.election.safety_margin.count());

  auto store = ports.lease_store("baton-node-" + me.node_id);
  auto shutdown_store = ports.lease_store("baton-node-" + me.node_id + "-shutdown");
  auto admin_store = ports.admin_store("baton-node-" + me.node_id + "-admin");
  auto identity_store = ports.admin_store("baton-node-" + me.node_id + "-workers");
  // API token lookups on connections of their own, one per admin thread
  // (lookup_lanes.h), and the API's reads on one more (docs/security.md).
  auto reads_store = ports.admin_store("baton-node-" + me.node_id + "-reads");
  std::vector<std::unique_ptr<store::AdminStore>> token_stores;
  for (int lane = 0; lane < admin_threads; ++lane)
    token_stores.push_back(ports.admin_store("baton-node-" + me.node_id + "-tokens-" + std::to_string(lane)));
  RealClock clock;
  NodeMetrics metrics;
  std::atomic<std::int64_t> leading_epoch{0};  ///< this node's epoch while it leads, else 0
  // systemd (Type=notify): ready once the node serves, its role as the
  // unit's status, a watchdog ping from the loop that steps it down on time.
  auto service = service::ServiceManager::from_environment();
  consensus::Elector elector(
      *store, clock, me, cfg.election,
      [&](const consensus::RoleChange& c) {
        spdlog::info("role_change node={} incarnation={} from={} to={} epoch={} reason={}", me.node_id, me.incarnation,
                     consensus::to_string(c.from), consensus::to_string(c.to), c.epoch.value, c.reason);
        leading_epoch.store(c.to == consensus::Role::leader ? c.epoch.value : 0);
        metrics.role_changes++;
        service.status("node " + me.node_id + ": " + std::string(consensus::to_string(c.to)) + ", epoch " +
                       std::to_string(c.epoch.value) + " (" + c.reason + "), serving on " + cfg.listen);
      },
      [](Millis d) { std::this_thread::sleep_for(d); });

  // The webhook sender (docs/webhooks.md): an unreadable CA file stops the node here, naming the key.
  auto poster = notify::HttpsPoster::make(tls::ClientFiles{cfg.webhooks.ca_file, "", ""}, cfg.webhooks.timeout,
                                          cfg.webhooks.destinations);
  if (!poster) {
    spdlog::error("node_config_invalid node={} key=webhooks.ca_file error={}", me.node_id,
                  json_quote(poster.error().message));
    std::fprintf(stderr, "baton: node %s: webhooks.ca_file: %s\n", me.node_id.c_str(), poster.error().message.c_str());
    return 2;
  }
  NodeRuntime runtime(cfg, ports, me, elector, metrics, *admin_store, *identity_store, **poster);
  {
    std::vector<store::AdminStore*> lanes;
    for (auto& s : token_stores) lanes.push_back(s.get());
    runtime.use_api_stores(lanes, *reads_store);
  }
  // Every connection is a descriptor: the caps must fit under the process's
  // limit (raised to the hard limit here), or accept() fails instead of the
  // caps refusing cleanly.
  if (rlimit fds{}; ::getrlimit(RLIMIT_NOFILE, &fds) == 0) {
    if (fds.rlim_cur < fds.rlim_max) {
      fds.rlim_cur = fds.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &fds);
    }
    if (static_cast<rlim_t>(cfg.server_limits.max_connections) + fds_beside_connections > fds.rlim_cur)
      spdlog::warn("max_connections_over_fd_limit node={} max_connections={} fd_limit={}", me.node_id,
                   cfg.server_limits.max_connections, static_cast<long long>(fds.rlim_cur));
  }
  if (cfg.insecure)
    spdlog::warn(
        "insecure_plaintext node={} listen={} (insecure: true: worker and admin tokens and all traffic "
        "cross the network unencrypted; configure tls for anything but a private test network)",
        me.node_id, cfg.listen);
  if (cfg.worker_token.empty())
    spdlog::info("worker_auth node={} mode=credentials (no worker_token_file: each worker attaches with its own)",
                 me.node_id);
  else
    spdlog::warn(
        "worker_auth node={} mode=shared_token_and_credentials (a worker holding the shared worker token may claim "
        "any worker id and labels; docs/security.md, \"Worker identity\")",
        me.node_id);
  NodeServer server(cfg.listen, runtime, cfg.server_limits,
                    cfg.insecure ? std::nullopt : std::optional<tls::ServerFiles>(cfg.tls));
  if (auto started = server.start(); !started) {
    spdlog::error("node_listen_failed node={} error={}", me.node_id, json_quote(started.error().message));
    std::fprintf(stderr, "baton: node %s: %s\n", me.node_id.c_str(), started.error().message.c_str());
    return 2;
  }
  const char* tls_on = cfg.insecure ? "" : "s";
  spdlog::info("node_listening node={} endpoint=http{}://{}/ websocket=ws{}://{}/ws worker_certificates={}", me.node_id,
               tls_on, cfg.listen, tls_on, cfg.listen,
               cfg.insecure ? "off" : tls::to_string(cfg.tls.worker_certificates));
  service.ready("node " + me.node_id + ": serving on " + cfg.listen + ", electing");
  if (auto every = service.watchdog_every())
    spdlog::info("service_watchdog node={} ping_every={}ms", me.node_id, every->count());

  // The log archive's retention, on every node (a directory per node or a
  // shared one: removing an expired run twice is harmless). Its own thread:
  // a sweep of a large archive never delays the watchdog.
  std::thread sweeper;
  if (const LogArchive* archive = runtime.archive()) {
    sweeper = std::thread([&, archive] {
      MonoTime next = clock.mono();
      while (!stop.load()) {
        if (clock.mono() >= next) {
          const int removed = archive->sweep(std::chrono::hours(24) * cfg.log_archive_retention_days);
          if (removed > 0)
            spdlog::info("log_archive_swept node={} runs={} dir={} retention_days={}", me.node_id, removed,
                         json_quote(archive->dir()), cfg.log_archive_retention_days);
          next = clock.mono() + archive_sweep_every;
        }
        std::this_thread::sleep_for(Millis{200});
      }
    });
  }

  // Sessions of revoked worker credentials are closed on every node; beside
  // them, /readyz's check of the database, once a second on a connection
  // of its own (never the API's: admin::Readiness).
  auto ready_store = ports.admin_store("baton-node-" + me.node_id + "-ready");
  std::thread revocations([&] {
    MonoTime next = clock.mono(), next_check = clock.mono();
    while (!stop.load()) {
      if (clock.mono() >= next_check) {
        runtime.check_database(*ready_store);
        next_check = clock.mono() + admin::Readiness::check_every;
      }
      if (clock.mono() >= next) {
        runtime.close_revoked_workers(server);
        runtime.reload_admin_token();
        next = clock.mono() + revocation_sweep_every;
      }
      std::this_thread::sleep_for(Millis{100});
    }
  });

  // The charts' statistics, on a connection of their own: a slow roll-up
  // never holds the admin API's or the loop's.
  auto stats_store = ports.admin_store("baton-node-" + me.node_id + "-stats");
  std::atomic<bool> stats_done{false};
  std::thread stats_rollup([&] {
    MonoTime next = clock.mono();
    // Minutes per statement: a statement cut by the admin calls' deadline
    // (a busy cluster's minutes hold many runs) is retried with fewer, down
    // to one; each success allows twice as many again.
    int minutes = stats_rollup_minutes;
    while (!stop.load()) {
      if (clock.mono() >= next) {
        for (int step = 0; step < stats_rollup_steps_max && !stop.load(); ++step) {
          auto left = stats_store->roll_up_run_stats(minutes);
          if (!left) {
            spdlog::warn("run_stats_rollup_failed node={} minutes={} error={}", me.node_id, minutes,
                         json_quote(left.error().message));
            minutes = std::max(1, minutes / 4);
            break;
          }
          minutes = std::min(stats_rollup_minutes, minutes * 2);
          if (*left == 0) break;
        }
        next = clock.mono() + stats_rollup_every;
      }
      std::this_thread::sleep_for(Millis{200});
    }
    stats_done.store(true);
  });

  // The history checker's sweep (docs/assurance.md), while this node leads,
  // on a connection of its own: the runs that finished since the recorded
  // cursor, judged by the chaos checker's invariants, findings recorded
  // (audit log, webhooks) with the cursor in one transaction.
  std::unique_ptr<store::VerifyStore> verify_store;
  if (cfg.verify.enabled && ports.verify_store)
    verify_store = ports.verify_store("baton-node-" + me.node_id + "-verify");
  std::atomic<bool> verify_done{!verify_store};
  std::thread verifier;
  if (verify_store)
    verifier = std::thread([&] {
      run_history_sweeps({cfg, me, clock, *verify_store, stop, leading_epoch, metrics.runs_finished,
                          [&](Epoch epoch, const std::vector<std::int64_t>& runs, const std::string& invariant) {
                            return runtime.recheck(epoch, runs, invariant);
                          }});
      verify_done.store(true);
    });

  std::atomic<bool> election_done{false};
  std::thread election([&] {
    auto last_registry = clock.mono();
    std::int64_t recorded = -1;  // the leading epoch the registry last took (-1: none yet, or it failed)
    while (!stop.load()) {
      elector.step();
      auto now = clock.mono();
      const std::int64_t led = leading_epoch.load();  // 0: a follower; a change is recorded at once
      if (recorded != led || now - last_registry >= registry_every) {
        recorded = store->record_node(me, led ? "leader" : "follower", Epoch{led}) ? led : -1;
        last_registry = now;
      }
    }
    election_done.store(true);
  });

  // The main thread is the watchdog: it steps the node down on time even when
  // the election thread is stuck in a database call, and starts or stops the
  // control loop to match the role.
  while (!stop.load()) {
    elector.enforce_deadline();
    runtime.reconcile(server);
    service.watchdog(clock.mono());
    std::this_thread::sleep_for(watchdog_every);
  }

  spdlog::info("node_stopping node={} incarnation={}", me.node_id, me.incarnation);
  service.stopping("node " + me.node_id + ": stopping, releasing the lease");
  // Hand leadership over first: the helper threads below notice `stop` only
  // at their next sleep (100-200 ms), and joining them before releasing the
  // lease made a SIGTERM failover that much slower.
  runtime.stop_loops(Millis{2000});
  elector.shutdown(*shutdown_store);
  if (sweeper.joinable()) sweeper.join();
  revocations.join();
  server.stop();
  auto deadline = clock.mono() + shutdown_join_max;
  while (!(election_done.load() && stats_done.load() && verify_done.load()) && clock.mono() < deadline)
    std::this_thread::sleep_for(Millis{10});
  if (!election_done.load() || !stats_done.load() || !verify_done.load()) {
    spdlog::warn("node_exit_without_join node={} reason=database_unresponsive", me.node_id);
    std::fflush(nullptr);
    std::quick_exit(0);
  }
  election.join();
  stats_rollup.join();
  if (verifier.joinable()) verifier.join();
  // A campaign may have won between shutdown() and the thread's exit.
  elector.shutdown(*shutdown_store);
  (void)shutdown_store->record_node(me, "stopped", Epoch{0});
  spdlog::info("node_stopped node={} incarnation={}", me.node_id, me.incarnation);
  return 0;
}

}  // namespace baton::node
