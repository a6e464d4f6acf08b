// The worker's process: its attempts, the leader's messages, timers, drain
// and shutdown. Its connection is a CoordinatorLink (coordinator_link.h).
#include "baton/worker/agent.h"
#include "baton/worker/exit_records.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "baton/base/assert.h"
#include "baton/base/json_text.h"
#include "baton/base/weaken.h"
#include "baton/protocol/codec.h"
#include "baton/protocol/vocabulary.h"
#include "baton/service/process_metrics.h"
#include "baton/service/service_manager.h"
#include "baton/tls/tls_context.h"
#include "baton/worker/backoff.h"
#include "baton/worker/enrollment.h"
#include "baton/worker/outbox.h"
#include "baton/worker/task_runner.h"
#include "baton/worker/task_supervisor.h"
#include "baton/worker_core/attempt_table.h"
#include "baton/worker_core/finish_delivery.h"
#include "baton/worker_core/output_stream.h"
#include "baton/worker_core/stall_guard.h"
#include "baton/worker_core/worker_metrics.h"
#include "coordinator_link.h"
#include "metrics_listener.h"
#include "started_attempt.h"

namespace baton::worker {

namespace asio = boost::asio;
using error_code = boost::system::error_code;

namespace {

// Consecutive redirects followed without backoff before backing off.
constexpr int redirects_without_backoff_max = 3;
constexpr auto continuation_check_every = std::chrono::milliseconds(100);
// How often an attached worker looks for a new bootstrap token (a rotation),
// and how long each step of an enrollment exchange may take.
constexpr auto enrollment_check_every = std::chrono::seconds(2);
constexpr auto enrollment_step_timeout = std::chrono::seconds(2);

class Agent {
 public:
  Agent(const WorkerConfig& cfg, const std::atomic<bool>& stop, const std::atomic<bool>& drain, const Clock& clock)
      : cfg_(cfg),
        stop_(stop),
        drain_(drain),
        clock_(clock),
        outbox_(cfg.spool_dir, clock),
        journal_(cfg.spool_dir + "/journal.log"),
        // Weakened chaos builds only: no cgroups, the supervisor alone.
        cgroups_(weakened("no_containment") || weakened("no_task_cgroup") ? "off" : cfg.task_cgroup,
                 cfg.spool_dir + "/trees"),
        reconnect_timer_(ioc_),
        heartbeat_timer_(ioc_),
        tick_timer_(ioc_),
        rng_(std::random_device{}()) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(rng_()));
    instance_ = hex;
  }

  int run() {
    if (auto r = outbox_.open(); !r) {
      std::fprintf(stderr, "baton: worker %s: %s\n", cfg_.worker_id.c_str(), r.error().message.c_str());
      return 2;
    }
    // Files that do not load at start are a configuration error (later, at
    // a reconnect, a failure is retried: the files may be mid-renewal).
    if (cfg_.insecure) {
      spdlog::warn(
          "insecure_plaintext worker={} (insecure: true: the worker token and all traffic cross the network "
          "unencrypted, and any host that answers at a coordinator's address is believed)",
          json_quote(cfg_.worker_id));
    } else if (auto ctx = tls::make_client_context(cfg_.tls); !ctx) {
      std::fprintf(stderr, "baton: worker %s: %s\n", cfg_.worker_id.c_str(), ctx.error().message.c_str());
      return 2;
    }
    // Its own metrics, when asked for: an address that cannot be bound is a
    // configuration error.
    if (!cfg_.metrics_listen.empty()) {
      metrics_ = std::make_unique<MetricsListener>(ioc_, [this] { return render_metrics(); });
      if (auto r = metrics_->start(cfg_.metrics_listen); !r) {
        std::fprintf(stderr, "baton: worker %s: %s\n", cfg_.worker_id.c_str(), r.error().message.c_str());
        return 2;
      }
      spdlog::info("worker_metrics_listening worker={} address={} port={}", json_quote(cfg_.worker_id),
                   cfg_.metrics_listen, metrics_->port());
    }
    // Task trees a previous incarnation left alive die before this one
    // attaches: nothing of an attempt this worker no longer knows may run on
    // next to whatever it is assigned next.
    if (int n = kill_leftover_supervisors(trees_dir(), std::chrono::seconds(5)); n > 0)
      spdlog::warn("leftover_task_trees_killed worker={} count={}", cfg_.worker_id, n);
    // ... and so do the descendants of supervisors that were killed
    // themselves (task_cgroup.h).
    if (cgroups_.available()) {
      spdlog::info("task_cgroups worker={} dir={}", cfg_.worker_id, cgroups_.base());
      if (int n = cgroups_.kill_leftovers(std::chrono::seconds(5)); n > 0)
        spdlog::warn("leftover_task_cgroups_killed worker={} count={}", cfg_.worker_id, n);
    } else {
      spdlog::warn("task_cgroup_unavailable worker={} reason='{}' (task trees are contained by their supervisor alone)",
                   cfg_.worker_id, cgroups_.unavailable_reason());
    }
    // Tasks that ended on their own while the previous incarnation died
    // before their finish was durable: their exit records say how they
    // ended, and become the finishes that incarnation would have written
    // (exit_record.h). Read only now, when no supervisor of it is left to
    // append to one.
    recover_exit_records();
    // Finishes left by a previous incarnation are held until acknowledged:
    // listed in hello and heartbeats, so no leader takes them for lost.
    delivery_.loaded(outbox_.pending(), clock_.mono());
    // Only now may this process vouch for its predecessor's attempts.
    std::ifstream(cfg_.spool_dir + "/instance") >> succeeds_;
    std::ofstream(cfg_.spool_dir + "/instance") << instance_ << '\n';
    spdlog::info("worker_instance worker={} instance={} succeeds={}", cfg_.worker_id, instance_,
                 succeeds_.empty() ? "-" : succeeds_);
    connect();
    tick();
    ioc_.run();
    for (auto& [k, p] : processes_)
      if (p.thread.joinable()) p.thread.join();
    return 0;
  }

 private:
  std::string trees_dir() const { return cfg_.spool_dir + "/trees"; }
  std::string exits_dir() const { return cfg_.spool_dir + "/exits"; }

  void recover_exit_records() {
    std::set<protocol::AttemptRef> pending;
    for (const auto& f : outbox_.pending()) pending.insert(f.ref);
    for (const auto& record : read_exit_records(exits_dir())) {
      auto fin = worker_core::finish_of(record);
      if (fin && !pending.count(record.ref)) {
        if (auto put = outbox_.put(*fin); !put) {
          spdlog::error("exit_record_not_recovered worker={} run={} attempt={} error={}", cfg_.worker_id,
                        record.ref.run_id, record.ref.attempt, json_quote(put.error().message));
          continue;  // kept: the next incarnation tries again
        }
        spdlog::warn("exit_recovered worker={} run={} attempt={} outcome={} exit_code={}", cfg_.worker_id,
                     record.ref.run_id, record.ref.attempt, protocol::to_string(fin->outcome),
                     fin->exit_code.value_or(0));
      }
      forget_exit_record(exits_dir(), record.ref);
    }
  }

  // ---- connection -------------------------------------------------------
  /// The endpoint as the leader lease names it (endpoint_map maps advertised
  /// endpoints to the addresses this worker dials).
  std::string advertised(const std::string& dialed) const {
    for (const auto& [adv, addr] : cfg_.endpoint_map)
      if (addr == dialed) return adv;
    return dialed;
  }

  std::string current_endpoint() const {
    return !redirect_.empty() ? redirect_ : cfg_.coordinators[endpoint_index_ % cfg_.coordinators.size()];
  }

  void connect() {
    if (stop_) return;
    if (ever_connected_) ++reconnects_;
    ever_connected_ = true;
    if (enrollment_.enabled()) {
      // Enrolls first when there is no credential yet or a new bootstrap
      // token was given (blocking, bounded: nothing is attached meanwhile).
      auto credential = enrollment_.credential(enrollment_step_timeout);
      if (!credential) {
        spdlog::error("worker_enrollment_failed worker={} error={}", json_quote(cfg_.worker_id),
                      json_quote(credential.error().message));
        return disconnected(true);
      }
      token_ = *credential;
    }
    const std::string ep = current_endpoint();
    // Every attempt, so the time a worker takes to reattach after a failover
    // can be read from its log (where it went, who held it, who sent it on).
    spdlog::info("worker_connecting worker={} endpoint={} unreachable_leader={}", json_quote(cfg_.worker_id), ep,
                 unreachable_leader_.empty() ? "-" : unreachable_leader_);
    link_.open(ep, cfg_.insecure ? nullptr : &cfg_.tls, std::chrono::milliseconds(heartbeat_timeout_ms_));
  }

  CoordinatorLink::Events link_events() {
    return {[this] { send(hello()); }, [this](std::string frame) { on_frame(std::move(frame)); },
            [this](const std::string& ep, const std::string& why) { connection_failed(ep, why); },
            [this](const std::string& ep, const std::string& why) {
              spdlog::info("worker_connection_lost worker={} endpoint={} error={}", cfg_.worker_id, ep,
                           json_quote(why));
              disconnected(true);
            }};
  }

  protocol::Hello hello() const {
    protocol::Hello h{cfg_.worker_id,      token_,    cfg_.capacity, cfg_.labels, {}, {},
                      unreachable_leader_, instance_, succeeds_};
    h.protocol_min = protocol::protocol_version_min;
    h.protocol_max = protocol::protocol_version_max;
    h.prefetch = cfg_.prefetch;
    h.running = table_.running();
    // Weakened chaos builds only: the old rule, ended attempts not listed.
    if (!weakened("lost_rule")) h.finished = delivery_.unacknowledged();
    return h;
  }

  void connection_failed(const std::string& ep, const std::string& why) {
    if (!redirect_.empty()) {
      unreachable_leader_ = redirect_advertised_;
      redirect_.clear();
    } else {
      unreachable_leader_ = advertised(ep);
      endpoint_index_++;
    }
    spdlog::info("worker_connect_failed worker={} endpoint={} error={}", json_quote(cfg_.worker_id), ep,
                 json_quote(why));
    service_.status("worker " + cfg_.worker_id + ": cannot reach " + ep + ": " + why);
    disconnected(true);
  }

  void disconnected(bool backoff) {
    const bool was_attached = attached_;
    attached_ = false;
    heartbeat_timer_.cancel();
    table_.detached(clock_.mono());  // live attempts start counting their continuation deadline
    delivery_.detached();
    if (was_attached) {
      spdlog::warn("worker_detached worker={} running={}", cfg_.worker_id, running_count());
      service_.status("worker " + cfg_.worker_id + ": detached, reconnecting (" + std::to_string(running_count()) +
                      " running)");
    }
    link_.close();
    if (stop_) return;
    auto delay = std::chrono::milliseconds(0);
    if (backoff || redirects_in_a_row_ > redirects_without_backoff_max) {
      failures_ = std::min(failures_ + 1, 20);
      // The first failures of a round go straight to the next coordinator:
      // after a leader dies, the followers answer at once (they hold the
      // connection until a new leader is known). Back off only once every
      // coordinator has failed in a row.
      const int round = static_cast<int>(cfg_.coordinators.size());
      if (failures_ > round)
        delay = reconnect_delay(failures_ - round, cfg_.reconnect_base, cfg_.reconnect_max, rng_());
    }
    if (retry_after_ > delay) delay = retry_after_;
    retry_after_ = Millis{0};
    reconnect_timer_.expires_after(delay);
    reconnect_timer_.async_wait([this](error_code ec) {
      if (!ec) connect();
    });
  }

  void on_frame(std::string frame) {
    // Frames read after the loop stood still may have waited in the
    // socket past the leader's giving up on them: none is acted on.
    if (stalled("frame")) return;
    auto decoded = protocol::decode_frame(frame);
    if (auto* err = std::get_if<protocol::DecodeError>(&decoded)) {
      spdlog::warn("worker_bad_frame worker={} code={} message={}", cfg_.worker_id, err->code,
                   json_quote(err->message));
      return;
    }
    // A batch's messages in order, until one of them ends the connection.
    const std::uint64_t link = link_.generation();
    for (const auto& m : std::get<std::vector<protocol::Message>>(decoded)) {
      if (link_.generation() != link) break;
      handle(m);
    }
  }

  void send(const protocol::Message& m) {
    if (!link_.is_open()) return;
    if (!link_.send(protocol::encode(m, link_.protocol()))) {
      // The leader does not read what it is sent (a stuck or overloaded
      // node): drop the connection rather than grow without bound. Nothing
      // is lost: finishes stay in the outbox, and the hello and heartbeats
      // of the next connection list every attempt.
      spdlog::warn("worker_send_queue_full worker={} frames={}", json_quote(cfg_.worker_id), link_.queued());
      disconnected(true);
    }
  }

  // ---- protocol ---------------------------------------------------------
  void handle(const protocol::Message& m) {
    std::visit(
        [&](const auto& msg) {
          using T = std::decay_t<decltype(msg)>;
          if constexpr (std::is_same_v<T, protocol::Welcome>)
            on_welcome(msg);
          else if constexpr (std::is_same_v<T, protocol::Redirect>)
            on_redirect(msg);
          else if constexpr (std::is_same_v<T, protocol::Error>) {
            spdlog::warn("worker_error_from_node worker={} code={} message={} retry_after_ms={}", cfg_.worker_id,
                         json_quote(msg.code), json_quote(msg.message), msg.retry_after_ms);
            retry_after_ = Millis{msg.retry_after_ms};  // the next reconnect waits at least this long
          } else if constexpr (std::is_same_v<T, protocol::Assign>)
            on_assign(msg);
          else if constexpr (std::is_same_v<T, protocol::StartGranted>)
            on_start_granted(msg);
          else if constexpr (std::is_same_v<T, protocol::StartDenied>)
            on_start_denied(msg);
          else if constexpr (std::is_same_v<T, protocol::Cancel>)
            on_cancel(msg);
          else if constexpr (std::is_same_v<T, protocol::FinishAck>)
            on_finish_ack(msg);
          else
            spdlog::warn("worker_unexpected_message worker={} type={}", cfg_.worker_id, protocol::type_name(m));
        },
        m);
  }

  void on_welcome(const protocol::Welcome& w) {
    if (w.protocol < protocol::protocol_version_min || w.protocol > protocol::protocol_version_max) {
      spdlog::error("worker_protocol_refused worker={} version={} (this worker speaks {} to {})",
                    json_quote(cfg_.worker_id), w.protocol, protocol::protocol_version_min,
                    protocol::protocol_version_max);
      return disconnected(true);
    }
    link_.set_protocol(w.protocol);
    attached_ = true;
    unreachable_leader_.clear();
    failures_ = 0;
    redirects_in_a_row_ = 0;
    heartbeat_interval_ms_ = w.heartbeat_interval_ms;
    heartbeat_timeout_ms_ = w.heartbeat_timeout_ms;
    continuation_margin_ms_ = w.continuation_margin_ms;
    stall_.set_limit(worker_core::StallGuard::limit_for(std::chrono::milliseconds(heartbeat_interval_ms_),
                                                        std::chrono::milliseconds(heartbeat_timeout_ms_)));
    spdlog::info("worker_attached worker={} node={} epoch={} running={} adopted={} protocol={}", cfg_.worker_id,
                 w.node_id, w.epoch, running_count(), w.adopted.size(), w.protocol);
    ++attaches_;
    // systemd (Type=notify): a worker is ready once attached.
    service_.ready("worker " + cfg_.worker_id + ": attached to " + w.node_id + ", epoch " + std::to_string(w.epoch) +
                   ", " + std::to_string(running_count()) + " running");
    // Each leader is told again: its book of this worker is new.
    if (table_.draining()) send(protocol::Drain{});
    // The end of each stream again (a leader that died may not have written
    // it), before the finishes: the leader has an attempt's output before
    // its finish.
    for (auto& [k, out] : outputs_) {
      send_output(*out, true);
      out->progress_sent.reset();
    }
    delivery_.attached();
    apply_delivery();
    // Adopted attempts restart their continuation clock; starts are asked
    // again (AttemptTable::welcome).
    table_.welcome(w, clock_.mono());
    apply_effects();
    heartbeat();
  }

  void on_redirect(const protocol::Redirect& r) {
    spdlog::info("worker_redirected worker={} from={} to={} epoch={}", cfg_.worker_id, current_endpoint(),
                 r.leader_endpoint.empty() ? "(no leader yet)" : json_quote(r.leader_endpoint), r.epoch);
    redirects_in_a_row_++;
    if (r.leader_endpoint.empty()) {
      // This node knows no leader, so it is not one: a follower that still
      // names it (its view of the lease is older) must not send us back.
      unreachable_leader_ = redirect_.empty() ? advertised(current_endpoint()) : redirect_advertised_;
      endpoint_index_++;
      redirect_.clear();
      return disconnected(true);
    }
    redirect_advertised_ = r.leader_endpoint;
    auto mapped = cfg_.endpoint_map.find(r.leader_endpoint);
    redirect_ = mapped != cfg_.endpoint_map.end() ? mapped->second : r.leader_endpoint;
    disconnected(false);
  }

  void on_assign(const protocol::Assign& a) {
    if (table_.state(a.ref)) return;  // a replayed assign
    spdlog::info("attempt_assigned worker={} run={} attempt={}", cfg_.worker_id, a.ref.run_id, a.ref.attempt);
    table_.assign(a, clock_.mono());
    apply_effects();
  }

  void on_start_granted(const protocol::StartGranted& g) {
    table_.start_granted(g.ref);
    apply_effects();
  }

  void on_start_denied(const protocol::StartDenied& d) {
    if (auto st = table_.state(d.ref);
        st && *st != worker_core::AttemptState::running && *st != worker_core::AttemptState::stopping)
      spdlog::info("attempt_start_denied worker={} run={} attempt={} reason={}", cfg_.worker_id, d.ref.run_id,
                   d.ref.attempt, json_quote(d.reason));
    table_.start_denied(d.ref, clock_.mono());
    apply_effects();
  }

  void on_cancel(const protocol::Cancel& c) {
    if (!table_.state(c.ref)) return;
    spdlog::info("attempt_cancel worker={} run={} attempt={} reason={}", cfg_.worker_id, c.ref.run_id, c.ref.attempt,
                 json_quote(c.reason));
    table_.cancel(c, clock_.mono());
    apply_effects();
  }

  /// Carries out what the AttemptTable decided.
  void apply_effects() {
    for (auto& e : table_.take_effects()) {
      if (auto* m = std::get_if<worker_core::Send>(&e)) {
        send(m->message);
      } else if (auto* sp = std::get_if<worker_core::Spawn>(&e)) {
        spawn(sp->assign);
      } else if (auto* k = std::get_if<worker_core::Kill>(&e)) {
        auto p = processes_.find(k->ref);
        if (p == processes_.end() || !p->second.runner) continue;
        if (k->cause == worker_core::KillCause::continuation)
          spdlog::warn("attempt_continuation_expired worker={} run={} attempt={}", cfg_.worker_id, k->ref.run_id,
                       k->ref.attempt);
        p->second.runner->cancel(k->reason, k->as_failure());
      } else if (auto* r = std::get_if<worker_core::Renew>(&e)) {
        if (auto p = processes_.find(r->ref); p != processes_.end() && p->second.runner) p->second.runner->renew();
      }
    }
  }

  /// Starts the process tree of a granted attempt on a thread of its own.
  void spawn(const protocol::Assign& assign) {
    Process& p = processes_[assign.ref];
    p.runner = std::make_shared<TaskRunner>();
    AttemptContext ctx;
    ctx.ref = assign.ref;
    ctx.timeout = std::chrono::milliseconds(assign.timeout_ms);
    ctx.sql_connections = cfg_.sql_connections;
    ctx.parameters = assign.parameters;
    ctx.previous = assign.previous;
    ctx.exit_record_dir = exits_dir();
    ctx.env_allowlist = cfg_.task_env_allowlist;
    // The tree must be dead before a leader may retry the run: the leader
    // waits continuation timeout + margin after it lost this worker, and the
    // renewals stop at the continuation deadline (or when this process
    // stops running), so half the margin leaves room for scheduling delays.
    ctx.switch_timeout = std::chrono::milliseconds(std::max<std::int64_t>(continuation_margin_ms_ / 2, 200));
    ctx.cgroups = &cgroups_;
    ctx.task_user = cfg_.task_user ? &*cfg_.task_user : nullptr;
    auto output = std::make_shared<AttemptOutput>();
    output->ref = assign.ref;
    outputs_[assign.ref] = output;
    ctx.on_output = [this, output](int stream, const char* data, std::size_t n) {
      output->append(stream, std::string_view(data, n), clock_.mono());
    };
    ctx.on_process = [this, ref = assign.ref](int pid, bool started) {
      if (started)
        record_supervisor(trees_dir(), pid);
      else
        forget_supervisor(trees_dir(), pid);
      journal_.record(started ? "start" : "exit", ref, pid);
    };
    spdlog::info("attempt_started worker={} run={} attempt={} previous={}", cfg_.worker_id, assign.ref.run_id,
                 assign.ref.attempt, assign.previous.fate.empty() ? "none" : assign.previous.fate);
    const bool only_noops = std::all_of(assign.tasks.begin(), assign.tasks.end(), [](const protocol::Task& t) {
      return t.kind == protocol::TaskKind::builtin && t.builtin == protocol::Builtin::noop;
    });
    if (only_noops) {
      // Nothing to wait for: no thread (a thread per run was most of a NOOP
      // run's cost on the worker). Still finished through the same path.
      protocol::Finish fin = p.runner->run(ctx, assign.tasks);
      asio::post(ioc_, [this, fin = std::move(fin)] { on_attempt_done(fin); });
      return;
    }
    p.thread = std::thread([this, runner = p.runner, ctx, tasks = assign.tasks] {
      protocol::Finish fin = runner->run(ctx, tasks);
      asio::post(ioc_, [this, fin = std::move(fin)] { on_attempt_done(fin); });
    });
  }

  void on_attempt_done(protocol::Finish fin) {
    auto it = processes_.find(fin.ref);
    if (it == processes_.end()) return;
    if (it->second.thread.joinable()) it->second.thread.join();
    processes_.erase(it);
    if (auto o = outputs_.find(fin.ref); o != outputs_.end()) {
      // Everything printed goes out before the finish (same connection, in
      // order). The finish names each stream's length, and its tails are
      // the streams' own last bytes at their offsets: a leader that missed
      // frames still places the tail exactly.
      AttemptOutput& out = *o->second;
      out.ended = true;
      send_output(out, false);
      std::lock_guard lock(out.mutex);
      for (int s = 0; s < 2; ++s) {
        const std::string tail = out.streams[s].tail(protocol::output_tail_bytes_max).data;
        (s == 0 ? fin.stdout_tail : fin.stderr_tail) = tail;
        (s == 0 ? fin.stdout_bytes : fin.stderr_bytes) = out.streams[s].length();
        if (out.streams[s].lost() > 0)
          spdlog::warn("attempt_output_lost worker={} run={} attempt={} stream={} bytes={}", cfg_.worker_id,
                       fin.ref.run_id, fin.ref.attempt, stream_names[s], out.streams[s].lost());
      }
    }
    table_.finished(fin.ref, clock_.mono());
    ++attempts_finished_;
    // A program that could not be started: fork failed, or the supervisor's
    // child could not chdir or exec (exit 126 or 127, as a shell says).
    if (fin.error.rfind("fork failed", 0) == 0 || (fin.exit_code && (*fin.exit_code == 126 || *fin.exit_code == 127)))
      ++spawn_failures_;
    spdlog::info("attempt_finished worker={} run={} attempt={} outcome={} exit_code={}", cfg_.worker_id, fin.ref.run_id,
                 fin.ref.attempt, protocol::to_string(fin.outcome), fin.exit_code.value_or(0));
    // Durable before it is sent (a crash from then on still delivers it):
    // the writer thread group-commits it and hands it back (on_durable).
    delivery_.ended(std::move(fin));
    apply_delivery();
    apply_effects();  // an attempt of the same run may have been waiting to start
  }

  /// Writer thread: a group of finishes is on disk; send it from the io thread.
  void on_durable(std::vector<protocol::Finish> group, const Result<void>& written) {
    if (!written) {
      // Not durable: keep it in memory (still listed as finished, so no
      // leader declares it lost), send it anyway, and write it again later.
      spdlog::error("outbox_write_failed worker={} finishes={} error={}", cfg_.worker_id, group.size(),
                    written.error().message);
    }
    // Durable now: the exit records they were made from are not needed.
    if (written)
      for (const auto& f : group) forget_exit_record(exits_dir(), f.ref);
    asio::post(ioc_, [this, group = std::move(group), durable = written.has_value()] {
      delivery_.written(group, durable, clock_.mono());
      apply_delivery();
    });
  }

  /// Carries out what the FinishDelivery decided.
  void apply_delivery() {
    for (auto& e : delivery_.take_effects()) {
      if (auto* w = std::get_if<worker_core::WriteFinishes>(&e)) {
        for (auto& f : w->group) outbox_writer_.push(std::move(f));
      } else if (auto* s = std::get_if<worker_core::SendFinish>(&e)) {
        if (attached_) send(s->finish);
      } else if (auto* f = std::get_if<worker_core::ForgetFinish>(&e)) {
        outbox_writer_.ack(f->ref);
      }
    }
  }

  /// Sends what is due of an attempt's output (all of it once the attempt
  /// has ended); after a welcome (`rewind`), the last window again first.
  void send_output(AttemptOutput& out, bool rewind) {
    if (!attached_) return;
    for (const auto& f : out.take_frames(clock_.mono(), rewind)) send(f);
  }

  void on_finish_ack(const protocol::FinishAck& a) {
    outputs_.erase(a.ref);
    delivery_.acked(a.ref);
    apply_delivery();
    spdlog::info("finish_acked worker={} run={} attempt={}", cfg_.worker_id, a.ref.run_id, a.ref.attempt);
  }

  // ---- timers -----------------------------------------------------------
  void heartbeat() {
    if (!attached_) return;
    protocol::Heartbeat h;
    h.running = table_.running();
    h.assigned = table_.assigned();
    if (!weakened("lost_rule")) h.finished = delivery_.unacknowledged();
    // What changed of running tasks' progress since the last heartbeat
    // (protocol version 5; an older leader is not sent it).
    if (link_.protocol() >= protocol::progress_version_min)
      for (const auto& ref : h.running)
        if (auto o = outputs_.find(ref); o != outputs_.end())
          if (auto text = o->second->progress_to_send()) h.progress.push_back({ref, std::move(*text)});
    send(h);
    heartbeat_timer_.expires_after(std::chrono::milliseconds(heartbeat_interval_ms_));
    heartbeat_timer_.async_wait([this](error_code ec) {
      if (!ec) heartbeat();
    });
  }

  /// The loop stood still for longer than the stall limit (a SIGSTOP, a
  /// paused VM, a blocked loop): the connection is dropped before any frame
  /// that waited in its socket meanwhile is acted on (worker_core/
  /// stall_guard.h), and the worker attaches again at once.
  bool stalled(const char* noticed_by) {
    const MonoTime now = clock_.mono();
    const MonoTime last = stall_last_;
    stall_last_ = now;
    if (!stall_.stalled(now) || !link_.is_open()) return false;
    spdlog::warn("worker_stalled worker={} ms={} limit_ms={} noticed_by={} running={}", json_quote(cfg_.worker_id),
                 std::chrono::duration_cast<std::chrono::milliseconds>(now - last).count(), stall_.limit().count(),
                 noticed_by, running_count());
    if (!weakened("act_on_stalled_frames")) {
      disconnected(false);
      return true;
    }
    return false;
  }

  void tick() {
    if (stop_) {
      shutdown();
      return;
    }
    stalled("tick");
    if (drain_ && !table_.draining()) begin_drain();
    if (table_.draining()) {
      // Done when nothing is held and every finish is acknowledged (or at
      // least durable in the outbox, if the bound passes first).
      const bool done = table_.idle() && delivery_.delivered();
      if (done || clock_.mono() >= drain_deadline_) {
        spdlog::info("worker_drained worker={} complete={} running={} unacknowledged={}", json_quote(cfg_.worker_id),
                     done, running_count(), delivery_.size());
        shutdown();
        return;
      }
    }
    // Renewals, the continuation deadline while detached, unanswered
    // starts: decided by the AttemptTable.
    table_.tick(clock_.mono());
    apply_effects();
    for (auto& [k, out] : outputs_) send_output(*out, false);
    const MonoTime now = clock_.mono();
    service_.watchdog(now);
    // Outbox retries and resends (FinishDelivery).
    delivery_.tick(now);
    apply_delivery();
    if (attached_ && enrollment_.enabled() && now - last_enrollment_check_ >= enrollment_check_every) {
      last_enrollment_check_ = now;
      // A new bootstrap token (a rotation): reconnect, enrolling first. The
      // running attempts go on; the hello lists them, as after any blip.
      if (enrollment_.due()) {
        spdlog::info("worker_reenrolling worker={} (a new enrollment_token_file)", json_quote(cfg_.worker_id));
        disconnected(false);
      }
    }
    tick_timer_.expires_after(continuation_check_every);
    tick_timer_.async_wait([this](error_code ec) {
      if (!ec) tick();
    });
  }

  /// SIGTERM: the leader is told to assign nothing more, attempts assigned
  /// and not started are handed back (AttemptTable::drain), running ones
  /// may finish within drain_timeout.
  void begin_drain() {
    drain_deadline_ = clock_.mono() + cfg_.drain_timeout;
    spdlog::info("worker_draining worker={} running={} drain_timeout={}ms", json_quote(cfg_.worker_id), running_count(),
                 cfg_.drain_timeout.count());
    table_.drain();
    apply_effects();
    if (attached_) send(protocol::Drain{});
  }

  void shutdown() {
    spdlog::info("worker_stopping worker={} running={}", cfg_.worker_id, running_count());
    service_.stopping("worker " + cfg_.worker_id + ": stopping (" + std::to_string(running_count()) + " running)");
    if (metrics_) metrics_->stop();
    table_.stop_all("worker stopping");
    apply_effects();
    for (auto& [k, p] : processes_)
      if (p.thread.joinable()) p.thread.join();
    // Finishes posted by the runners are still queued: run them (they write
    // the outbox) before leaving.
    ioc_.poll();
    outbox_writer_.drain_and_stop();
    reconnect_timer_.cancel();
    heartbeat_timer_.cancel();
    link_.close();
    ioc_.stop();
  }

  std::size_t running_count() const { return table_.running().size(); }

  /// GET /metrics on metrics_listen: read on the io thread, like all of
  /// this state.
  std::string render_metrics() const {
    worker_core::WorkerMetrics m;
    m.worker_id = cfg_.worker_id;
    m.capacity = cfg_.capacity;
    m.running = static_cast<int>(running_count());
    m.held = static_cast<int>(running_count() + table_.assigned().size());
    m.outbox_unacknowledged = static_cast<std::int64_t>(delivery_.size());
    m.attached = attached_;
    m.attaches = attaches_;
    m.reconnects = reconnects_;
    m.spawn_failures = spawn_failures_;
    m.attempts_finished = attempts_finished_;
    std::string out =
        service::render_build_info(BATON_VERSION, protocol::protocol_version_min, protocol::protocol_version_max) +
        worker_core::render_worker_metrics(m);
    if (auto p = service::read_process_stats()) out += service::render_process_metrics(*p);
    return out;
  }

  const WorkerConfig& cfg_;
  const std::atomic<bool>& stop_;   ///< stop now: running attempts are killed
  const std::atomic<bool>& drain_;  ///< finish what runs (within drain_timeout), start nothing, then stop
  const Clock& clock_;
  MonoTime drain_deadline_{};
  service::ServiceManager service_ = service::ServiceManager::from_environment();
  Enrollment enrollment_{cfg_};
  std::string token_ = cfg_.token;  ///< what the hello carries: the shared token or this worker's credential
  Millis retry_after_{0};           ///< a node's error asked the next reconnect to wait this long
  MonoTime last_enrollment_check_{};
  Outbox outbox_;
  std::string redirect_advertised_;  ///< the endpoint a redirect named (redirect_ is it after endpoint_map)
  std::string unreachable_leader_;   ///< see protocol::Hello::unreachable_leader
  Journal journal_;
  TaskCgroups cgroups_;
  asio::io_context ioc_;
  std::unique_ptr<MetricsListener> metrics_;  ///< after ioc_: closed before it goes
  bool ever_connected_ = false;
  std::int64_t attaches_ = 0, reconnects_ = 0, spawn_failures_ = 0, attempts_finished_ = 0;
  // After ioc_: it posts to ioc_, so it must stop first.
  OutboxWriter outbox_writer_{outbox_,
                              [this](std::vector<protocol::Finish> g, Result<void> w) { on_durable(std::move(g), w); }};
  asio::steady_timer reconnect_timer_, heartbeat_timer_, tick_timer_;
  CoordinatorLink link_{ioc_, link_events()};  ///< after ioc_ and the state its events read
  bool attached_ = false;
  std::string redirect_;
  std::size_t endpoint_index_ = 0;
  int failures_ = 0, redirects_in_a_row_ = 0;
  std::int64_t heartbeat_interval_ms_ = protocol::default_heartbeat_interval_ms;
  std::int64_t heartbeat_timeout_ms_ = protocol::default_heartbeat_timeout_ms;
  std::int64_t continuation_margin_ms_ = protocol::default_continuation_margin_ms;
  worker_core::StallGuard stall_{worker_core::StallGuard::limit_for(Millis{protocol::default_heartbeat_interval_ms},
                                                                    Millis{protocol::default_heartbeat_timeout_ms})};
  MonoTime stall_last_{};                              ///< the loop's last tick or frame, for the log
  worker_core::AttemptTable table_{cfg_.capacity};     ///< what each attempt may do (worker/core)
  std::map<protocol::AttemptRef, Process> processes_;  ///< started attempts' runners
  /// Output of started attempts until their finish is acknowledged, by key.
  std::map<protocol::AttemptRef, std::shared_ptr<AttemptOutput>> outputs_;
  std::string instance_, succeeds_;  ///< this process; the one before it on this spool
  /// Each ended attempt's finish until a leader acknowledges it (worker/core).
  worker_core::FinishDelivery delivery_;
  std::mt19937_64 rng_;
};

}  // namespace

int run_agent(const WorkerConfig& cfg, const std::atomic<bool>& stop, const std::atomic<bool>& drain) {
  RealClock clock;
  Agent agent(cfg, stop, drain, clock);
  return agent.run();
}

}  // namespace baton::worker
