// The only translation unit of the worker that includes Boost.Beast.
#include "baton/worker/agent.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "baton/core/weaken.h"
#include "baton/protocol/codec.h"
#include "baton/worker/backoff.h"
#include "baton/worker/outbox.h"
#include "baton/worker/task_runner.h"
#include "baton/worker/task_supervisor.h"

namespace baton::worker {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

namespace {

// Consecutive redirects followed without backoff before backing off.
constexpr int redirects_without_backoff_max = 3;
constexpr auto continuation_check_every = std::chrono::milliseconds(100);
// A finish not acknowledged this long is sent again (the leader may have been
// unable to record it: database unavailable, a lost race); replays are
// idempotent on the leader.
constexpr auto finish_resend_after = std::chrono::seconds(3);
// A start not answered this long is asked again: the leader answers an
// uncertain start outcome (its write failed, its re-read failed) with
// nothing rather than a denial, so the worker must ask again.
constexpr auto start_resend_after = std::chrono::seconds(2);
// A finish that could not be made durable is written again after this.
constexpr auto outbox_retry_after = std::chrono::seconds(1);

std::string key_of(const protocol::AttemptRef& r) {
  return std::to_string(r.run_id) + ":" + std::to_string(r.attempt) + ":" + r.lease_token;
}

struct Attempt {
  protocol::Assign assign;
  bool start_requested = false;
  SteadyClock::time_point start_requested_at{};
  bool started = false;
  bool finished = false;
  bool continuation_killed = false;
  /// Set when the worker lost its leader while this attempt ran; cleared
  /// only by a welcome that lists the attempt as adopted. The attempt is
  /// killed once it has been unadopted for the continuation timeout.
  std::optional<SteadyClock::time_point> detached_since;
  std::shared_ptr<TaskRunner> runner;
  std::thread thread;
};

class Agent {
 public:
  Agent(const WorkerConfig& cfg, const std::atomic<bool>& stop)
      : cfg_(cfg),
        stop_(stop),
        outbox_(cfg.spool_dir),
        journal_(cfg.spool_dir + "/journal.log"),
        // Weakened chaos builds only: no cgroups, the supervisor alone.
        cgroups_(weakened("no_containment") || weakened("no_task_cgroup") ? "off" : cfg.task_cgroup,
                 cfg.spool_dir + "/trees"),
        resolver_(ioc_),
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
    // Finishes left by a previous incarnation are held until acknowledged:
    // listed in hello and heartbeats, so no leader takes them for lost.
    for (const auto& f : outbox_.pending()) unacked_[key_of(f.ref)] = f.ref;
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
    // Only now may this process vouch for its predecessor's attempts.
    std::ifstream(cfg_.spool_dir + "/instance") >> succeeds_;
    std::ofstream(cfg_.spool_dir + "/instance") << instance_ << '\n';
    spdlog::info("worker_instance worker={} instance={} succeeds={}", cfg_.worker_id, instance_,
                 succeeds_.empty() ? "-" : succeeds_);
    connect();
    tick();
    ioc_.run();
    for (auto& [k, a] : attempts_)
      if (a.thread.joinable()) a.thread.join();
    return 0;
  }

 private:
  std::string trees_dir() const { return cfg_.spool_dir + "/trees"; }

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
    const std::uint64_t gen = ++generation_;
    const std::string ep = current_endpoint();
    auto colon = ep.rfind(':');
    host_ = ep.substr(0, colon);
    std::string port = ep.substr(colon + 1);
    ws_ = std::make_unique<websocket::stream<beast::tcp_stream>>(ioc_);
    ws_->read_message_max(protocol::frame_bytes_max * 2);
    beast::get_lowest_layer(*ws_).expires_after(std::chrono::seconds(3));
    resolver_.async_resolve(host_, port, [this, gen, ep](beast::error_code ec, tcp::resolver::results_type results) {
      if (gen != generation_) return;
      if (ec) return connection_failed(ep, "resolve: " + ec.message());
      beast::get_lowest_layer(*ws_).async_connect(
          results, [this, gen, ep](beast::error_code ec2, tcp::resolver::results_type::endpoint_type) {
            if (gen != generation_) return;
            if (ec2) return connection_failed(ep, "connect: " + ec2.message());
            beast::get_lowest_layer(*ws_).expires_never();
            beast::error_code nodelay_ec;  // small frames: no Nagle delay
            beast::get_lowest_layer(*ws_).socket().set_option(tcp::no_delay(true), nodelay_ec);
            websocket::stream_base::timeout t{};
            t.handshake_timeout = std::chrono::seconds(3);
            t.idle_timeout = std::chrono::milliseconds(heartbeat_timeout_ms_);
            t.keep_alive_pings = true;  // a leader that stops answering is noticed within idle_timeout
            ws_->set_option(t);
            ws_->async_handshake(host_, "/ws", [this, gen, ep](beast::error_code ec3) {
              if (gen != generation_) return;
              if (ec3) return connection_failed(ep, "handshake: " + ec3.message());
              connected_ = true;
              send(hello());
              read(gen);
            });
          });
    });
  }

  protocol::Hello hello() const {
    protocol::Hello h{cfg_.worker_id,      cfg_.token, cfg_.capacity, cfg_.labels, {}, {},
                      unreachable_leader_, instance_,  succeeds_};
    for (const auto& [k, a] : attempts_)
      if (a.started && !a.finished) h.running.push_back(a.assign.ref);
    // Weakened chaos builds only: the old rule, ended attempts not listed.
    if (!weakened("lost_rule"))
      for (const auto& [k, ref] : unacked_) h.finished.push_back(ref);
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
    spdlog::info("worker_connect_failed worker={} endpoint={} error={}", cfg_.worker_id, ep, why);
    disconnected(true);
  }

  void disconnected(bool backoff) {
    const bool was_attached = attached_;
    connected_ = false;
    attached_ = false;
    writing_ = false;
    queue_.clear();
    heartbeat_timer_.cancel();
    if (was_attached) {
      const auto now = SteadyClock::now();
      for (auto& [k, a] : attempts_)
        if (a.started && !a.finished && !a.detached_since) a.detached_since = now;
      spdlog::warn("worker_detached worker={} running={}", cfg_.worker_id, running_count());
    }
    ++generation_;
    if (ws_) {
      beast::error_code ignored;
      beast::get_lowest_layer(*ws_).socket().close(ignored);
    }
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
    reconnect_timer_.expires_after(delay);
    reconnect_timer_.async_wait([this](beast::error_code ec) {
      if (!ec) connect();
    });
  }

  void read(std::uint64_t gen) {
    ws_->async_read(buffer_, [this, gen](beast::error_code ec, std::size_t) {
      if (gen != generation_) return;
      if (ec) {
        if (attached_ || connected_)
          spdlog::info("worker_connection_lost worker={} endpoint={} error={}", cfg_.worker_id, current_endpoint(),
                       ec.message());
        return disconnected(true);
      }
      std::string frame = beast::buffers_to_string(buffer_.data());
      buffer_.consume(buffer_.size());
      auto decoded = protocol::decode(frame);
      if (auto* err = std::get_if<protocol::DecodeError>(&decoded)) {
        spdlog::warn("worker_bad_frame worker={} code={} message={}", cfg_.worker_id, err->code, err->message);
      } else {
        handle(std::get<protocol::Message>(decoded));
      }
      if (gen == generation_ && connected_) read(gen);
    });
  }

  void send(const protocol::Message& m) {
    if (!connected_) return;
    queue_.push_back(protocol::encode(m));
    if (!writing_) write_next();
  }
  void write_next() {
    if (queue_.empty() || !connected_) return;
    writing_ = true;
    const std::uint64_t gen = generation_;
    ws_->text(true);
    ws_->async_write(asio::buffer(queue_.front()), [this, gen](beast::error_code ec, std::size_t) {
      if (gen != generation_) return;
      writing_ = false;
      if (ec) return disconnected(true);
      queue_.pop_front();
      write_next();
    });
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
          else if constexpr (std::is_same_v<T, protocol::Error>)
            spdlog::warn("worker_error_from_node worker={} code={} message={}", cfg_.worker_id, msg.code, msg.message);
          else if constexpr (std::is_same_v<T, protocol::Assign>)
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
    attached_ = true;
    unreachable_leader_.clear();
    failures_ = 0;
    redirects_in_a_row_ = 0;
    heartbeat_interval_ms_ = w.heartbeat_interval_ms;
    heartbeat_timeout_ms_ = w.heartbeat_timeout_ms;
    continuation_timeout_ms_ = w.continuation_timeout_ms;
    continuation_margin_ms_ = w.continuation_margin_ms;
    // Only an adoption (the leader wrote the run at its epoch) restarts an
    // attempt's continuation clock; a welcome from a leader that did not,
    // or could not, adopt it leaves the deadline where it was.
    for (const auto& ref : w.adopted)
      if (auto it = attempts_.find(key_of(ref)); it != attempts_.end()) it->second.detached_since.reset();
    spdlog::info("worker_attached worker={} node={} epoch={} running={} adopted={}", cfg_.worker_id, w.node_id, w.epoch,
                 running_count(), w.adopted.size());
    for (const auto& f : outbox_.pending()) send(f);
    // A `start` sent on a connection that died may never have arrived: ask
    // again; the leader grants it if the assignment is still current and
    // denies it otherwise.
    for (auto& [k, a] : attempts_)
      if (!a.started) a.start_requested = false;
    request_starts();
    heartbeat();
  }

  void on_redirect(const protocol::Redirect& r) {
    spdlog::info("worker_redirected worker={} from={} to={} epoch={}", cfg_.worker_id, current_endpoint(),
                 r.leader_endpoint.empty() ? "(no leader yet)" : r.leader_endpoint, r.epoch);
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
    const std::string key = key_of(a.ref);
    if (attempts_.count(key)) return;  // a replayed assign
    attempts_[key].assign = a;
    spdlog::info("attempt_assigned worker={} run={} attempt={}", cfg_.worker_id, a.ref.run_id, a.ref.attempt);
    request_starts();
  }

  /// Asks to start assigned attempts, but never while another attempt of the
  /// same run is still alive here.
  void request_starts() {
    for (auto& [key, a] : attempts_) {
      if (a.start_requested || a.started) continue;
      bool other_alive = false;
      for (const auto& [k2, b] : attempts_)
        if (k2 != key && b.assign.ref.run_id == a.assign.ref.run_id && b.started && !b.finished) other_alive = true;
      if (other_alive) continue;
      a.start_requested = true;
      a.start_requested_at = SteadyClock::now();
      send(protocol::Start{a.assign.ref});
    }
  }

  void on_start_granted(const protocol::StartGranted& g) {
    auto it = attempts_.find(key_of(g.ref));
    if (it == attempts_.end() || it->second.started) return;
    Attempt& a = it->second;
    a.started = true;
    a.runner = std::make_shared<TaskRunner>();
    AttemptContext ctx;
    ctx.ref = a.assign.ref;
    ctx.timeout = std::chrono::milliseconds(a.assign.timeout_ms);
    ctx.sql_connections = cfg_.sql_connections;
    // The tree must be dead before a leader may retry the run: the leader
    // waits continuation timeout + margin after it lost this worker, and the
    // renewals stop at the continuation deadline (or when this process
    // stops running), so half the margin leaves room for scheduling delays.
    ctx.switch_timeout = std::chrono::milliseconds(std::max<std::int64_t>(continuation_margin_ms_ / 2, 200));
    ctx.cgroups = &cgroups_;
    ctx.on_process = [this, ref = a.assign.ref](int pid, bool started) {
      if (started)
        record_supervisor(trees_dir(), pid);
      else
        forget_supervisor(trees_dir(), pid);
      journal_.record(started ? "start" : "exit", ref, pid);
    };
    spdlog::info("attempt_started worker={} run={} attempt={}", cfg_.worker_id, g.ref.run_id, g.ref.attempt);
    const bool only_noops = std::all_of(a.assign.tasks.begin(), a.assign.tasks.end(), [](const protocol::Task& t) {
      return t.kind == protocol::TaskKind::builtin && (t.builtin == "NOOP" || t.builtin.empty());
    });
    if (only_noops) {
      // Nothing to wait for: no thread (a thread per run was most of a NOOP
      // run's cost on the worker). Still finished through the same path.
      protocol::Finish fin = a.runner->run(ctx, a.assign.tasks);
      asio::post(ioc_, [this, fin = std::move(fin)] { on_attempt_done(fin); });
      return;
    }
    a.thread = std::thread([this, runner = a.runner, ctx, tasks = a.assign.tasks] {
      protocol::Finish fin = runner->run(ctx, tasks);
      asio::post(ioc_, [this, fin = std::move(fin)] { on_attempt_done(fin); });
    });
  }

  void on_start_denied(const protocol::StartDenied& d) {
    auto it = attempts_.find(key_of(d.ref));
    if (it == attempts_.end() || it->second.started) return;
    spdlog::info("attempt_start_denied worker={} run={} attempt={} reason={}", cfg_.worker_id, d.ref.run_id,
                 d.ref.attempt, d.reason);
    attempts_.erase(it);
  }

  void on_cancel(const protocol::Cancel& c) {
    auto it = attempts_.find(key_of(c.ref));
    if (it == attempts_.end()) return;
    Attempt& a = it->second;
    spdlog::info("attempt_cancel worker={} run={} attempt={} reason={}", cfg_.worker_id, c.ref.run_id, c.ref.attempt,
                 c.reason);
    if (!a.started) {
      attempts_.erase(it);
      return;
    }
    if (!a.finished) a.runner->cancel(c.reason, false);
  }

  void on_attempt_done(const protocol::Finish& fin) {
    auto it = attempts_.find(key_of(fin.ref));
    if (it == attempts_.end()) return;
    it->second.finished = true;
    if (it->second.thread.joinable()) it->second.thread.join();
    spdlog::info("attempt_finished worker={} run={} attempt={} outcome={} exit_code={}", cfg_.worker_id, fin.ref.run_id,
                 fin.ref.attempt, fin.outcome, fin.exit_code.value_or(0));
    attempts_.erase(it);
    unacked_[key_of(fin.ref)] = fin.ref;
    // Durable before it is sent (a crash from then on still delivers it):
    // the writer thread group-commits it and hands it back (on_durable).
    outbox_writer_.push(fin);
    request_starts();
  }

  /// Writer thread: a group of finishes is on disk; send it from the io thread.
  void on_durable(std::vector<protocol::Finish> group, const Result<void>& written) {
    if (!written) {
      // Not durable: keep it in memory (still listed as finished, so no
      // leader declares it lost), send it anyway, and write it again later.
      spdlog::error("outbox_write_failed worker={} finishes={} error={}", cfg_.worker_id, group.size(),
                    written.error().message);
      asio::post(ioc_, [this, group] {
        for (const auto& f : group) undurable_[key_of(f.ref)] = f;
        if (attached_)
          for (const auto& f : group) send(f);
      });
      return;
    }
    asio::post(ioc_, [this, group = std::move(group)] {
      for (const auto& f : group) undurable_.erase(key_of(f.ref));
      if (attached_)
        for (const auto& f : group) send(f);
    });
  }

  void on_finish_ack(const protocol::FinishAck& a) {
    unacked_.erase(key_of(a.ref));
    undurable_.erase(key_of(a.ref));
    outbox_writer_.ack(a.ref);
    spdlog::info("finish_acked worker={} run={} attempt={}", cfg_.worker_id, a.ref.run_id, a.ref.attempt);
  }

  // ---- timers -----------------------------------------------------------
  void heartbeat() {
    if (!attached_) return;
    protocol::Heartbeat h;
    for (const auto& [k, a] : attempts_) {
      if (a.started && !a.finished)
        h.running.push_back(a.assign.ref);
      else if (!a.started)
        h.assigned.push_back(a.assign.ref);
    }
    if (!weakened("lost_rule"))
      for (const auto& [k, ref] : unacked_) h.finished.push_back(ref);
    send(h);
    heartbeat_timer_.expires_after(std::chrono::milliseconds(heartbeat_interval_ms_));
    heartbeat_timer_.async_wait([this](beast::error_code ec) {
      if (!ec) heartbeat();
    });
  }

  void tick() {
    if (stop_) {
      shutdown();
      return;
    }
    // Continuation on the worker side: an attempt not adopted by a leader
    // for the continuation timeout since its worker lost the leader is
    // killed and reported failed. The leader retries only after its own
    // deadline + margin, so the two never overlap.
    const auto now = SteadyClock::now();
    for (auto& [k, a] : attempts_) {
      if (!a.started || a.finished || !a.runner || a.continuation_killed) continue;
      // The timeout the assigning leader sent with the attempt: the one it
      // stored with the run, so every later leader waits for this very value.
      const std::int64_t limit_ms =
          a.assign.continuation_timeout_ms > 0 ? a.assign.continuation_timeout_ms : continuation_timeout_ms_;
      if (!a.detached_since || now - *a.detached_since <= std::chrono::milliseconds(limit_ms)) {
        a.runner->renew();  // this attempt may go on: renew its dead-man's switch
        continue;
      }
      a.continuation_killed = true;
      spdlog::warn("attempt_continuation_expired worker={} run={} attempt={}", cfg_.worker_id, a.assign.ref.run_id,
                   a.assign.ref.attempt);
      a.runner->cancel("continuation deadline passed while detached from the leader", true);
    }
    if (attached_) {
      for (auto& [k, a] : attempts_) {
        if (a.started || !a.start_requested || now - a.start_requested_at < start_resend_after) continue;
        a.start_requested_at = now;
        send(protocol::Start{a.assign.ref});
      }
    }
    if (!undurable_.empty() && now - last_outbox_retry_ >= outbox_retry_after) {
      last_outbox_retry_ = now;
      for (const auto& [k, f] : undurable_) outbox_writer_.push(f);
    }
    if (attached_ && now - last_resend_ >= finish_resend_after) {
      last_resend_ = now;
      for (const auto& f : outbox_.pending(finish_resend_after)) send(f);
      for (const auto& [k, f] : undurable_) send(f);
    }
    tick_timer_.expires_after(continuation_check_every);
    tick_timer_.async_wait([this](beast::error_code ec) {
      if (!ec) tick();
    });
  }

  void shutdown() {
    spdlog::info("worker_stopping worker={} running={}", cfg_.worker_id, running_count());
    for (auto& [k, a] : attempts_)
      if (a.started && !a.finished && a.runner) a.runner->cancel("worker stopping", true);
    for (auto& [k, a] : attempts_) {
      if (!a.thread.joinable()) continue;
      a.thread.join();
    }
    // Finishes posted by the runners are still queued: run them (they write
    // the outbox) before leaving.
    ioc_.poll();
    outbox_writer_.drain_and_stop();
    ++generation_;
    reconnect_timer_.cancel();
    heartbeat_timer_.cancel();
    if (ws_) {
      beast::error_code ignored;
      beast::get_lowest_layer(*ws_).socket().close(ignored);
    }
    ioc_.stop();
  }

  int running_count() const {
    int n = 0;
    for (const auto& [k, a] : attempts_) n += a.started && !a.finished;
    return n;
  }

  const WorkerConfig& cfg_;
  const std::atomic<bool>& stop_;
  Outbox outbox_;
  std::string redirect_advertised_;  ///< the endpoint a redirect named (redirect_ is it after endpoint_map)
  std::string unreachable_leader_;   ///< see protocol::Hello::unreachable_leader
  Journal journal_;
  TaskCgroups cgroups_;
  asio::io_context ioc_;
  // After ioc_: it posts to ioc_, so it must stop first.
  OutboxWriter outbox_writer_{outbox_,
                              [this](std::vector<protocol::Finish> g, Result<void> w) { on_durable(std::move(g), w); }};
  tcp::resolver resolver_;
  asio::steady_timer reconnect_timer_, heartbeat_timer_, tick_timer_;
  std::unique_ptr<websocket::stream<beast::tcp_stream>> ws_;
  beast::flat_buffer buffer_;
  std::deque<std::string> queue_;
  bool writing_ = false, connected_ = false, attached_ = false;
  std::uint64_t generation_ = 0;
  std::string host_, redirect_;
  std::size_t endpoint_index_ = 0;
  int failures_ = 0, redirects_in_a_row_ = 0;
  std::int64_t heartbeat_interval_ms_ = 1000, heartbeat_timeout_ms_ = 5000, continuation_timeout_ms_ = 30000,
               continuation_margin_ms_ = 10000;
  SteadyClock::time_point last_resend_{}, last_outbox_retry_{};
  std::map<std::string, Attempt> attempts_;
  std::string instance_, succeeds_;  ///< this process; the one before it on this spool
  /// Attempts whose process ended and whose finish is not acknowledged.
  std::map<std::string, protocol::AttemptRef> unacked_;
  /// Finishes whose outbox write failed: retried until durable or acked.
  std::map<std::string, protocol::Finish> undurable_;
  std::mt19937_64 rng_;
};

}  // namespace

int run_agent(const WorkerConfig& cfg, const std::atomic<bool>& stop) {
  Agent agent(cfg, stop);
  return agent.run();
}

}  // namespace baton::worker
