#include "baton/sim/simulation.h"

#include "baton/sim/partitioned_history.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <utility>

#include "baton/chaos/faults.h"
#include "baton/consensus/elector.h"
#include "baton/core/assert.h"
#include "baton/core/weaken.h"
#include "baton/leader_core/run_book.h"
#include "baton/protocol/vocabulary.h"
#include "baton/store_calls/store_call.h"
#include "baton/store_fake/fake_leader_store.h"
#include "baton/store_fake/fake_lease_store.h"
#include "baton/store_fake/fake_run_store.h"
#include "baton/worker_core/attempt_table.h"
#include "baton/worker_core/finish_delivery.h"
#include "baton/worker_core/stall_guard.h"

namespace baton::sim {

namespace {

using namespace std::chrono_literals;
using std::chrono::nanoseconds;
namespace lc = leader_core;
namespace wc = worker_core;

using chaos::name_of;

constexpr std::int64_t ms_ns = 1'000'000;
constexpr Millis step{5};  ///< the simulation advances in steps of this much virtual time
/// The simulated cron job's name (Knobs::cron_every_s).
constexpr const char* cron_job = "sim-cron";
/// Knobs::events: the job subscribed to the events' kind, and the job that
/// runs after each of its successes.
constexpr const char* event_kind = "sim.ping";
constexpr const char* event_job = "sim-on-event";
constexpr const char* after_job = "sim-after";

/// The one virtual time: the database's clock (commit timestamps, ages,
/// deadlines) and the timeline of the evidence.
class WorldClock final : public Clock {
 public:
  MonoTime mono() const override { return now; }
  MonoTime now{std::chrono::seconds{1}};
};

/// A process's own monotonic clock: its own origin and rate. A rate change
/// keeps it monotonic (the new rate applies from now on).
class DriftClock final : public Clock {
 public:
  DriftClock(const WorldClock& world, nanoseconds origin, double rate)
      : world_(world), base_mono_(origin), base_world_(world.now), rate_(rate) {}
  MonoTime mono() const override {
    const auto elapsed = static_cast<double>((world_.now - base_world_).count());
    return MonoTime{base_mono_ + nanoseconds{static_cast<std::int64_t>(elapsed * rate_)}};
  }
  void set_rate(double r) {
    base_mono_ = mono().since_start;
    base_world_ = world_.now;
    rate_ = r;
  }

 private:
  const WorldClock& world_;
  nanoseconds base_mono_;
  MonoTime base_world_;
  double rate_;
};

lc::RuntimeConfig runtime_config() {
  lc::RuntimeConfig c;
  c.heartbeat_interval = 200ms;
  c.heartbeat_timeout = 1000ms;
  c.reassign_after = 2000ms;
  c.reassign_detached_after = 300ms;
  // The ratios of the defaults (docs/operations.md): the continuation
  // window is long beside the worker's fixed resend periods (start 2 s,
  // finish 3 s) and beside a restart.
  c.continuation_timeout = 6000ms;
  c.continuation_margin = 2000ms;
  c.timeout_grace = 1000ms;
  c.dispatch_every = 20ms;
  c.reap_every = 100ms;
  c.assign_with_start = true;  // version-4 seeds' runs start with their assignment
  c.cron_every = 1000ms;
  c.retry_jitter_max = 50ms;
  return c;
}

consensus::ElectionConfig election_config() {
  consensus::ElectionConfig c;
  c.lease = 1500ms;
  c.renew_every = 250ms;
  c.safety_margin = 500ms;
  c.poll_every = 250ms;
  return c;
}

/// What inject() can draw. The draw's number picks from
/// unpartitioned_draws by position, so a seed's faults depend on that
/// order: append, never reorder. Each is recorded by its name in the fault
/// vocabulary (baton/chaos/faults.h), which the harness shares.
enum class Draw {
  kill_node,         ///< kill9_node: kill -9 of a node, restarted later
  stop_node,         ///< pause_leader or pause_node: SIGSTOP of a node
  cut_node_from_db,  ///< partition_node_db
  cut_worker,        ///< partition_workers: a worker cut from every node
  kill_worker,       ///< kill9_worker
  stop_worker,       ///< pause_worker
  reset_connection,  ///< proxy_reset
  clock_rate,        ///< clock_rate: a clock runs at another rate for a while
  kill_supervisor,   ///< kill_supervisor
  restart_db,        ///< pg_restart
  cancel_run,        ///< cancel: an operator cancels a run
  cut_pair,          ///< partition_pair: one worker cut from one node
  move_worker,       ///< move_worker: drawn only with partitioned leadership
};
constexpr Draw unpartitioned_draws[] = {
    Draw::kill_node,       Draw::stop_node,   Draw::cut_node_from_db, Draw::cut_worker,
    Draw::kill_worker,     Draw::stop_worker, Draw::reset_connection, Draw::clock_rate,
    Draw::kill_supervisor, Draw::restart_db,  Draw::cancel_run,       Draw::cut_pair,
};

struct Frame {
  std::int64_t at_ns = 0;
  std::uint64_t seq = 0;
  std::uint64_t conn = 0;
  bool to_node = false;
  protocol::Message message;
  bool operator>(const Frame& o) const { return at_ns != o.at_ns ? at_ns > o.at_ns : seq > o.seq; }
};

struct Conn {
  int worker = 0;
  int node = 0;
  int partition = 0;        ///< the worker's partition: the node's book for it serves the connection
  bool worker_open = true;  ///< the worker's side still believes in it
  bool node_open = true;    ///< ... and the node's
  bool attached = false;    ///< the node's book knows it as a worker link
  /// The latest delivery time of a frame sent each way: a close is seen
  /// after every frame sent before it (a TCP stream ends after its data).
  std::int64_t last_to_worker_ns = 0, last_to_node_ns = 0;
};

/// One process of a task tree, as its own evidence would show it.
struct Life {
  std::int64_t pid = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;  ///< natural end (exit) or death (kill)
  std::optional<int> status;
  bool dead = false;
};

struct Tree {
  protocol::AttemptRef ref;
  std::string worker;
  Life main;
  std::optional<Life> child;  ///< forked by the task; may outlive the main process
  int exit_status = 0;        ///< what main exits with if nothing kills it
  MonoTime switch_until{};    ///< dead-man's switch, on its worker's clock
  bool reported = false;      ///< its worker turned its end into a finish
  std::optional<wc::KillCause> kill_cause;
  int incarnation = 0;  ///< of the worker process that spawned it
};

struct Fault {
  std::string kind, target;
  std::int64_t from_ns = 0, to_ns = 0;
};

class World;

/// What a node runs for one partition of partitioned leadership
/// (docs/scaling.md): its own lease handle and Elector, run store handle,
/// RunBook, input queue and lanes, as each partition has its own control
/// loop. A node of an unpartitioned cluster has one seat.
struct Seat {
  int partition = 0;
  std::unique_ptr<store::fake::FakeLeaseStore> lease;
  std::unique_ptr<store::fake::FakeRunStore> runs;
  std::unique_ptr<store::fake::FakeLeaderStore> leader;
  std::unique_ptr<consensus::Elector> elector;
  std::unique_ptr<lc::RunBook> book;
  std::deque<std::function<void()>> inbox;  ///< deliveries waiting for this loop to run
  /// Lane results not yet back: (when, delivery); dropped with the process.
  std::vector<std::pair<std::int64_t, std::function<void()>>> lane_replies;
  std::uint64_t book_serial = 0;  ///< which book a lane reply belongs to
};

struct Node {
  int index = 0;
  NodeIdentity identity;
  std::unique_ptr<DriftClock> clock;
  std::deque<Seat> seats;  ///< one per partition; a process: they crash, pause and lose the database together
  bool crashed = false;
  bool paused = false;
  bool db_cut = false;
  int incarnation = 1;
};

struct Worker {
  int index = 0;
  int partition = 0;             ///< partitioned leadership: the one partition whose leader it serves
  std::optional<int> moving_to;  ///< a rebalancer's move, made once the worker is drained
  std::string id;
  std::string instance, succeeds;
  int incarnation = 1;
  std::unique_ptr<DriftClock> clock;
  std::unique_ptr<wc::AttemptTable> table;
  std::optional<std::uint64_t> conn;
  bool welcomed = false;
  int target = 0;  ///< the node it connects to next
  std::int64_t reconnect_at_ns = 0;
  std::int64_t next_heartbeat_ns = 0;
  std::int64_t connect_deadline_ns = 0;  ///< a connection not welcomed by then is given up
  std::int64_t last_heard_ns = 0;        ///< the node last answered (a frame or a ping)
  /// Each ended attempt's finish until acknowledged: the Agent's own
  /// component (worker/core), its outbox writes made at once and durable.
  wc::FinishDelivery delivery;
  std::deque<Frame> held;                   ///< frames that arrived while paused
  std::optional<std::uint64_t> close_held;  ///< a close that came while paused, after `held`
  /// The Agent's rule for frames read after its loop stood still.
  wc::StallGuard stall{Millis{250}};
  bool crashed = false;
  bool paused = false;
  bool cut = false;  ///< partitioned from every node
  /// Since when this worker has had no leader (no welcomed connection);
  /// none while it has one.
  std::optional<std::int64_t> leaderless_since_ns;
  std::optional<std::int64_t> linked_since_ns;  ///< since when it has had a working leader
};

class World {
 public:
  World(std::uint64_t seed, Knobs k, std::vector<std::string>* trace)
      : seed_(seed),
        k_(std::move(k)),
        rng_(seed * 0x9E3779B97F4A7C15ull + 1),
        trace_(trace),
        lease_dbs_(lease_dbs(k_.partitions, db_clock_)),
        run_db_(pointers(lease_dbs_), db_clock_),
        cfg_(runtime_config()) {
    for (int i = 0; i < k_.nodes; ++i) {
      Node n;
      n.index = i;
      for (int p = 0; p < k_.partitions; ++p) n.seats.emplace_back().partition = p;
      nodes_.push_back(std::move(n));
      boot_node(nodes_.back());
    }
    for (int i = 0; i < k_.workers; ++i) {
      Worker w;
      w.index = i;
      w.partition = i % k_.partitions;  // every partition has a worker: partitions <= workers
      w.id = "w" + std::to_string(i + 1);
      w.clock = std::make_unique<DriftClock>(db_clock_, nanoseconds{uniform(1, 1000) * ms_ns * 1000},
                                             k_.worker_rate[static_cast<std::size_t>(i)]);
      workers_.push_back(std::move(w));
      boot_worker(workers_.back());
    }
  }

  Outcome run();

 private:
  static std::vector<std::unique_ptr<store::fake::FakeLeaseDb>> lease_dbs(int partitions, const Clock& clock) {
    std::vector<std::unique_ptr<store::fake::FakeLeaseDb>> out;
    for (int p = 0; p < partitions; ++p) out.push_back(std::make_unique<store::fake::FakeLeaseDb>(clock));
    return out;
  }
  static std::vector<const store::fake::FakeLeaseDb*> pointers(
      const std::vector<std::unique_ptr<store::fake::FakeLeaseDb>>& dbs) {
    std::vector<const store::fake::FakeLeaseDb*> out;
    for (const auto& d : dbs) out.push_back(d.get());
    return out;
  }
  /// The database, for a statement of `partition` (its fence, its rows).
  store::fake::FakeRunDb& db_for(int partition) {
    run_db_.use_partition(partition);
    return run_db_;
  }
  const store::fake::FakeLeaseDb& lease_of(int partition) const {
    return *lease_dbs_[static_cast<std::size_t>(partition)];
  }

  // ---- randomness and trace ---------------------------------------------------
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  std::int64_t now_ns() const { return (db_clock_.now.since_start).count(); }
  void note(const std::string& what) {
    if (trace_) trace_->push_back("[" + std::to_string((now_ns() - start_ns_) / ms_ns) + "ms] " + what);
  }

  // ---- nodes ------------------------------------------------------------------
  void boot_node(Node& n) {
    const std::string id = "n" + std::to_string(n.index + 1);
    n.identity = NodeIdentity{id, id + "-inc" + std::to_string(n.incarnation), id + ":7001"};
    n.clock = std::make_unique<DriftClock>(db_clock_, nanoseconds{uniform(1, 1000) * ms_ns * 1000},
                                           k_.node_rate[static_cast<std::size_t>(n.index)]);
    for (Seat& s : n.seats) {
      s.lease = std::make_unique<store::fake::FakeLeaseStore>(*lease_dbs_[static_cast<std::size_t>(s.partition)]);
      s.runs = std::make_unique<store::fake::FakeRunStore>(run_db_, s.partition);
      s.leader = std::make_unique<store::fake::FakeLeaderStore>(run_db_, s.partition);
      // A reply lost after its statement ran: drawn before each write, and
      // after each read and heartbeat batch that reached the database.
      s.runs->lose_write_reply = [this] { return chance(k_.p_in_doubt); };
      s.leader->lose_reply = [this] { return chance(k_.p_in_doubt); };
      s.elector = std::make_unique<consensus::Elector>(
          *s.lease, *n.clock, n.identity, election_config(), [](const consensus::RoleChange&) {}, [](Millis) {});
      s.book.reset();
      s.inbox.clear();
      s.lane_replies.clear();
    }
    n.crashed = n.paused = false;
    apply_db_cut(n);
  }

  void apply_db_cut(Node& n) {
    const bool cut = n.db_cut || db_down_;
    for (Seat& s : n.seats) {
      s.lease->unavailable = cut;
      s.runs->unavailable = cut;
      s.leader->unavailable = cut;
    }
  }

  static bool leads_any(const Node& n) {
    return std::any_of(n.seats.begin(), n.seats.end(), [](const Seat& s) { return s.book != nullptr; });
  }
  static std::string seat_name(const Node& n, const Seat& s) {
    return n.seats.size() == 1 ? n.identity.node_id : n.identity.node_id + "/p" + std::to_string(s.partition);
  }

  void step_node(Node& n) {
    if (n.crashed || n.paused) return;
    for (Seat& s : n.seats) step_seat(n, s);
  }

  void step_seat(Node& n, Seat& s) {
    // Balance (docs/scaling.md): a node campaigns at once for its own share
    // of the partitions, and for another node's only once that partition's
    // lease has been vacant for a while (its node is down, stopped or cut
    // off; every node reads the lease rows). Leases keep the safety; this
    // spreads the partitions over the nodes, so that they fail over at
    // different moments and their epochs part ways.
    if (k_.partitions > 1) {
      const auto vacant = db_clock_.mono() - lease_of(s.partition).expires_at();
      s.elector->allow_campaigns(s.partition % k_.nodes == n.index || vacant >= 2 * election_config().lease);
    }
    // The watchdog and the election thread run beside the control loop; after
    // a pause either may run first (the loop's writes are then fenced).
    const bool loop_first = chance(0.5);
    if (loop_first) run_book(n, s);
    s.elector->enforce_deadline();
    s.elector->step();
    const bool leads = s.elector->is_leader();
    if (s.book && (!leads || s.book->epoch() != s.elector->leader_epoch())) stop_book(n, s, "stepping down");
    if (leads && !s.book) {
      s.book_serial++;
      s.book = std::make_unique<lc::RunBook>(s.elector->leader_epoch(), n.identity.node_id, cfg_,
                                             static_cast<std::uint64_t>(s.elector->leader_epoch().value) * 7919u + 17u,
                                             n.clock->mono());
      note(seat_name(n, s) + " leads epoch " + std::to_string(s.elector->leader_epoch().value));
      s.book->start(n.clock->mono());
      execute(n, s);
    }
    if (!loop_first) run_book(n, s);
  }

  void run_book(Node& n, Seat& s) {
    // Deliveries first (a follower answers them too), then the pass. Lane
    // replies that are due join them.
    std::stable_sort(s.lane_replies.begin(), s.lane_replies.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    while (!s.lane_replies.empty() && s.lane_replies.front().first <= now_ns()) {
      s.inbox.push_back(std::move(s.lane_replies.front().second));
      s.lane_replies.erase(s.lane_replies.begin());
    }
    while (!s.inbox.empty()) {
      auto d = std::move(s.inbox.front());
      s.inbox.pop_front();
      d();
      if (s.book) execute(n, s);
    }
    if (!s.book) return;
    s.book->tick(n.clock->mono());
    execute(n, s);
    if (s.book && s.book->fenced()) stop_book(n, s, "fenced");
  }

  void stop_book(Node& n, Seat& s, const char* why) {
    if (!s.book) return;
    note(seat_name(n, s) + " stops epoch " + std::to_string(s.book->epoch().value) + ": " + why);
    for (auto link : s.book->links()) close_node_side(link);
    for (auto& [id, c] : conns_)
      if (c.node == n.index && c.partition == s.partition && c.node_open) close_node_side(id);
    s.book.reset();
  }

  /// The control loop's drain: every effect carried out in order. A store
  /// effect becomes the same call as in the control loop (store_calls); where
  /// it runs is the loop's choice, modelled here: on the loop's thread with
  /// its result fed back at once, or on a lane, later.
  void execute(Node& n, Seat& s) {
    while (s.book && s.book->has_effects()) {
      auto effects = s.book->take_effects();
      for (auto& effect : effects) {
        if (!s.book) return;
        lc::RunBook& b = *s.book;
        if (b.fenced() && lc::is_external(effect)) continue;
        const store_calls::Stores stores{*s.runs, *s.runs, *s.runs, *s.runs, *s.leader, *s.leader};
        if (auto call = store_calls::call_of(effect, stores, b.epoch(), n.identity.node_id)) {
          run_call(n, s, std::move(*call));
          continue;
        }
        std::visit(
            [&](auto& e) {
              using T = std::decay_t<decltype(e)>;
              if constexpr (std::is_same_v<T, lc::Send>) {
                if (auto* a = std::get_if<protocol::Assign>(&e.message); a && a->start_granted) ++granted_;
                send(e.link, false, e.message);
              } else if constexpr (std::is_same_v<T, lc::Close>) {
                close_node_side(e.link);
              } else if constexpr (std::is_same_v<T, lc::Log>) {
                if (trace_) note(seat_name(n, s) + " " + e.text);
              } else if constexpr (std::is_same_v<T, lc::Count>) {
                // Counted from the book's own effects, never from log text.
                if (e.counter == lc::Counter::runs_requeued) requeued_ += e.n;
              }
              // ObserveDispatchLatency, ObserveRunFinished, AppendRunOutput:
              // nothing to model.
            },
            effect);
      }
    }
  }

  void run_call(Node& n, Seat& s, store_calls::Call call) {
    using store_calls::Lane;
    // ControlLoop writes an assignment itself when no input is waiting and
    // on its assign lane otherwise: both, by chance.
    if (call.lane == Lane::loop || (call.lane == Lane::assigns && chance(0.5))) {
      store_calls::Returned r = call.run();
      if (r.deliver) r.deliver(*s.book, n.clock->mono(), Millis{0});
      return;
    }
    on_lane(n, s, std::move(call));
  }

  /// A lane's statement (ControlLoop's assign, start, finish and read
  /// lanes): it runs now or when its reply is due, and the reply reaches
  /// the book later, after other inputs; a reply to a book that is gone is
  /// dropped (its statement still ran: the lane thread outlives the loop's
  /// epoch).
  /// As in ControlLoop, a read's rows age by the time its reply waited
  /// between the statement's return and the book.
  void on_lane(Node& n, Seat& s, store_calls::Call call) {
    struct Done {
      std::optional<store_calls::Returned> returned;
      MonoTime at{};  ///< when the statement returned, by the node's clock
    };
    auto done = std::make_shared<Done>();
    if (chance(0.5)) *done = Done{call.run(), n.clock->mono()};
    const std::int64_t delay = k_.lane_delay_max_ms > 0 ? uniform(0, k_.lane_delay_max_ms) * ms_ns : 0;
    const std::uint64_t serial = s.book_serial;
    const int index = n.index, partition = s.partition;
    s.lane_replies.emplace_back(now_ns() + delay, [this, index, partition, serial, done, call = std::move(call)] {
      Node& n = nodes_[static_cast<std::size_t>(index)];
      Seat& s = n.seats[static_cast<std::size_t>(partition)];
      if (!done->returned) *done = Done{call.run(), n.clock->mono()};
      if (!s.book || s.book_serial != serial || !done->returned->deliver) return;
      const MonoTime now = n.clock->mono();
      done->returned->deliver(*s.book, now, std::chrono::floor<Millis>(now - done->at));
    });
  }

  // ---- network ----------------------------------------------------------------
  void send(std::uint64_t conn, bool to_node, const protocol::Message& m) {
    auto it = conns_.find(conn);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    if (!(to_node ? c.worker_open : c.node_open)) return;
    frames_sent_++;
    if (chance(k_.p_reset)) {  // lost, and the connection with it (TCP never loses one frame alone)
      note("frame lost, connection " + std::to_string(conn) + " reset");
      reset(conn);
      return;
    }
    // A WebSocket rides on TCP: frames of one connection arrive in order
    // and once, or the connection fails. Delays vary, and frames of
    // different connections overtake each other (an old connection's frames
    // may still arrive after a new one's). A frame within a connection is
    // never duplicated: the protocol's own resends (start, finish, the
    // outbox after a welcome) are the duplicates a leader sees.
    std::int64_t& last = to_node ? c.last_to_node_ns : c.last_to_worker_ns;
    const std::int64_t at = std::max(now_ns() + uniform(k_.frame_delay_min_ms, k_.frame_delay_max_ms) * ms_ns, last);
    last = at;
    frames_.push(Frame{at, ++seq_, conn, to_node, m});
  }

  void reset(std::uint64_t conn) {
    // Both sides learn of it, each a little later.
    later(uniform(1, 30), [this, conn] { close_worker_side(conn); });
    later(uniform(1, 30), [this, conn] { close_node_side_by_peer(conn); });
  }

  /// Milliseconds from now until a close sent now reaches the other side.
  std::int64_t after_data(const Conn& c, bool to_node) {
    const std::int64_t last = to_node ? c.last_to_node_ns : c.last_to_worker_ns;
    return std::max<std::int64_t>(uniform(1, 20), (last - now_ns()) / ms_ns + 1);
  }

  void later(std::int64_t in_ms, std::function<void()> f) {
    timers_.push({now_ns() + in_ms * ms_ns, ++seq_, std::move(f)});
  }

  bool reachable(const Conn& c) const {
    return !workers_[static_cast<std::size_t>(c.worker)].cut && !cut_pairs_.count({c.worker, c.node});
  }

  void deliver(const Frame& f) {
    auto it = conns_.find(f.conn);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    if (!reachable(c)) return;  // partitioned: lost
    if (f.to_node) {
      if (!c.node_open) return;
      Node& n = nodes_[static_cast<std::size_t>(c.node)];
      if (n.crashed) return;
      n.seats[static_cast<std::size_t>(c.partition)].inbox.push_back(
          [this, f, &n] { node_receives(n, f.conn, f.message); });
    } else {
      if (!c.worker_open) return;
      Worker& w = workers_[static_cast<std::size_t>(c.worker)];
      if (w.crashed) return;
      if (w.paused) {
        w.held.push_back(f);
        return;
      }
      worker_receives(w, f.conn, f.message);
    }
  }

  void node_receives(Node& n, std::uint64_t conn, const protocol::Message& m) {
    auto it = conns_.find(conn);
    if (it == conns_.end() || !it->second.node_open) return;
    Conn& c = it->second;
    const Worker& w = workers_[static_cast<std::size_t>(c.worker)];
    // The worker's partition is its configuration; the node's book for it
    // serves the connection (a node leads some partitions, follows others).
    Seat& s = n.seats[static_cast<std::size_t>(c.partition)];
    if (auto* h = std::get_if<protocol::Hello>(&m)) {
      if (!s.book) {
        // A follower: where the leader is, if it knows (docs/protocol.md).
        auto lease = s.elector->last_seen_lease();
        std::string endpoint = lease && !lease->held_by(n.identity) ? lease->leader_endpoint : "";
        send(conn, false, protocol::Redirect{endpoint, lease ? lease->epoch.value : 0});
        close_node_side(conn);
        return;
      }
      c.attached = true;
      s.book->attached(conn, *h, n.clock->mono());
      return;
    }
    if (!s.book || !c.attached) return;
    if (trace_ && std::getenv("BATON_SIM_TRACE_FRAMES"))
      note(seat_name(n, s) + " <- " + w.id + " " + protocol::type_name(m) +
           " outstanding=" + std::to_string(s.book->outstanding()));
    s.book->message(conn, w.id, m, n.clock->mono());
  }

  /// The node closes its side (its book said so, or it stops leading).
  void close_node_side(std::uint64_t conn) {
    auto it = conns_.find(conn);
    if (it == conns_.end() || !it->second.node_open) return;
    it->second.node_open = false;
    // The worker sees the close after a moment (and after the frames sent
    // before it), unless it is cut off: then it finds out by its own silence
    // timeout.
    if (reachable(it->second)) later(after_data(it->second, false), [this, conn] { close_worker_side(conn); });
  }

  /// The node learns that the worker side closed (a FIN or a reset).
  void close_node_side_by_peer(std::uint64_t conn) {
    auto it = conns_.find(conn);
    if (it == conns_.end() || !it->second.node_open) return;
    Conn& c = it->second;
    c.node_open = false;
    Node& n = nodes_[static_cast<std::size_t>(c.node)];
    if (n.crashed || !c.attached) return;
    const std::string worker = workers_[static_cast<std::size_t>(c.worker)].id;
    Seat& s = n.seats[static_cast<std::size_t>(c.partition)];
    s.inbox.push_back([&n, &s, conn, worker] {
      if (s.book) s.book->detached(conn, worker, "closed", n.clock->mono());
    });
  }

  void close_worker_side(std::uint64_t conn) {
    auto it = conns_.find(conn);
    if (it == conns_.end() || !it->second.worker_open) return;
    it->second.worker_open = false;
    Worker& w = workers_[static_cast<std::size_t>(it->second.worker)];
    if (w.conn == conn && !w.crashed) {
      if (w.paused) {
        // Noticed when it runs again, after the frames that reached its
        // socket before the close (TCP delivers them first).
        it->second.worker_open = true;
        w.close_held = conn;
        return;
      }
      worker_lost_connection(w);
    }
    if (it->second.node_open && reachable(it->second))
      later(after_data(it->second, true), [this, conn] { close_node_side_by_peer(conn); });
  }

  // ---- workers ----------------------------------------------------------------
  void boot_worker(Worker& w) {
    w.succeeds = w.instance;
    w.instance = w.id + "-i" + std::to_string(w.incarnation);
    w.table = std::make_unique<wc::AttemptTable>(k_.capacity);
    // What the outbox on disk holds is all a new incarnation knows.
    const auto on_disk = w.delivery.durable();
    w.delivery = wc::FinishDelivery{};
    w.delivery.loaded(on_disk, w.clock->mono());
    w.stall = wc::StallGuard(wc::StallGuard::limit_for(cfg_.heartbeat_interval, cfg_.heartbeat_timeout));
    w.conn.reset();
    w.welcomed = false;
    w.crashed = w.paused = false;
    w.held.clear();
    w.close_held.reset();
    w.target = static_cast<int>(uniform(0, k_.nodes - 1));
    w.reconnect_at_ns = now_ns() + uniform(10, 200) * ms_ns;
    // Task trees a previous incarnation left are killed before it connects.
    for (auto& t : trees_)
      if (t.worker == w.id && t.incarnation < w.incarnation && !t.main.dead) kill_tree(t, wc::KillCause::stopping);
  }

  /// The documented at-least-once window is about a worker that cannot
  /// talk with the current leader for longer than the leader waits for it:
  /// the simulator knows exactly when that was, whatever chain of faults
  /// caused it, and records it for the checker as a `worker_cut_off` fault
  /// (docs/simulation.md).
  void track_leaderless(Worker& w) {
    bool linked = false;
    if (w.conn && w.welcomed && !w.crashed && !w.paused && !w.cut) {
      const Conn& c = conns_.at(*w.conn);
      const Node& n = nodes_[static_cast<std::size_t>(c.node)];
      const Seat& s = n.seats[static_cast<std::size_t>(c.partition)];
      linked = c.worker_open && c.node_open && !n.crashed && !n.paused && s.book && !s.book->fenced() &&
               s.book->epoch() == lease_of(c.partition).epoch() && !n.db_cut && !db_down_ && reachable(c);
    }
    // A link counts once it has lasted a heartbeat round trip: a blip too
    // short for the worker to be heard (a few milliseconds between two
    // faults) reaches nobody.
    if (!linked) {
      w.linked_since_ns.reset();
      if (!w.leaderless_since_ns) w.leaderless_since_ns = now_ns();
      return;
    }
    if (!w.linked_since_ns) w.linked_since_ns = now_ns();
    const std::int64_t heard_ns = (cfg_.heartbeat_interval.count() + 2 * k_.frame_delay_max_ms) * ms_ns;
    if (now_ns() - *w.linked_since_ns >= heard_ns) end_leaderless(w, *w.linked_since_ns);
  }

  /// Ends `w`'s interval without a leader at `end_ns` (when its link began).
  void end_leaderless(Worker& w, std::int64_t end_ns) {
    if (!w.leaderless_since_ns) return;
    const std::int64_t since = *w.leaderless_since_ns;
    w.leaderless_since_ns.reset();
    const std::int64_t window = (cfg_.continuation_timeout + cfg_.continuation_margin).count() * ms_ns;
    if (end_ns - since >= window) faults_.push_back({name_of(chaos::Fault::worker_cut_off), w.id, since, end_ns});
  }

  void worker_lost_connection(Worker& w) {
    w.conn.reset();
    w.welcomed = false;
    w.table->detached(w.clock->mono());
    w.delivery.detached();
    worker_effects(w);
    w.reconnect_at_ns = now_ns() + uniform(50, 400) * ms_ns;
  }

  protocol::Hello hello(const Worker& w) const {
    protocol::Hello h;
    h.worker_id = w.id;
    h.capacity = k_.capacity;
    h.prefetch = k_.prefetch;
    h.protocol_min = protocol::protocol_version_min;
    h.protocol_max = k_.protocol;
    h.instance = w.instance;
    h.succeeds = w.succeeds;
    h.running = w.table->running();
    if (!weakened("lost_rule")) h.finished = w.delivery.unacknowledged();
    return h;
  }

  /// The partition a worker serves once its pending move (if any) is made.
  static int bound_to(const Worker& w) { return w.moving_to.value_or(w.partition); }

  /// A partition keeps at least one worker: `w` may leave `from` only if
  /// another worker stays bound to it.
  bool may_leave(const Worker& w, int from) const {
    return std::any_of(workers_.begin(), workers_.end(),
                       [&](const Worker& x) { return x.index != w.index && bound_to(x) == from; });
  }

  /// Nothing of `w`'s is in flight: no attempt assigned or running, no task
  /// process alive, every finish acknowledged.
  bool idle(const Worker& w) const {
    if (!w.table->running().empty() || !w.table->assigned().empty() || !w.delivery.delivered()) return false;
    return std::none_of(trees_.begin(), trees_.end(), [&](const Tree& t) {
      return t.worker == w.id && (!t.main.dead || (t.child && !t.child->dead) || !t.reported);
    });
  }

  /// Partitioned leadership binds a worker to one partition's leader; a
  /// rebalancer moves it (docs/scaling.md). The move is made when the worker
  /// is idle (drained): an attempt of its old partition must end and its
  /// finish be acknowledged by that partition's leader first, because the
  /// new partition's leader can neither see nor record it. The worker then
  /// drops its connection and attaches to its new partition's leader.
  void move_if_drained(Worker& w) {
    if (!w.moving_to || w.crashed) return;
    // DELIBERATELY BROKEN in weakened chaos builds only (core/weaken.h): the
    // worker moves at once, with attempts of its old partition in flight.
    if (!idle(w) && !weakened("move_busy_worker")) return;
    note(w.id + " moves from partition " + std::to_string(w.partition) + " to " + std::to_string(*w.moving_to));
    w.partition = *w.moving_to;
    w.moving_to.reset();
    ++moves_;
    if (w.conn) close_worker_side(*w.conn);
  }

  void step_worker(Worker& w) {
    if (w.crashed || w.paused) return;
    move_if_drained(w);
    // As the Agent: a loop that stood still acts on nothing that waited in
    // its connection meanwhile; it drops the connection and attaches again
    // (worker_core/stall_guard.h).
    if (w.stall.stalled(w.clock->mono()) && w.conn && !weakened("act_on_stalled_frames")) {
      note(w.id + " stalled: drops its connection and " + std::to_string(w.held.size()) + " held frames");
      w.held.clear();
      close_worker_side(*w.conn);
    }
    for (auto& f : w.held) worker_receives(w, f.conn, f.message);
    w.held.clear();
    if (auto held = std::exchange(w.close_held, std::nullopt)) close_worker_side(*held);
    if (!w.conn && now_ns() >= w.reconnect_at_ns && !w.cut) {
      const std::uint64_t id = ++next_conn_;
      conns_[id] = Conn{w.index, w.target, w.partition, true, true, false};
      w.conn = id;
      w.connect_deadline_ns = now_ns() + 1000 * ms_ns;
      w.last_heard_ns = now_ns();
      send(id, true, hello(w));
    }
    // No welcome (a dead or stopped node, a lost frame): give up and retry.
    if (w.conn && !w.welcomed && now_ns() > w.connect_deadline_ns) close_worker_side(*w.conn);
    // The Agent's WebSocket idle timeout with keep-alive pings: a node
    // process that runs answers pings (even with no leader loop), one that
    // is stopped, dead or cut off does not, and the worker gives the
    // connection up after heartbeat_timeout of silence.
    if (w.conn) {
      const Conn& c = conns_.at(*w.conn);
      const Node& n = nodes_[static_cast<std::size_t>(c.node)];
      if (c.node_open && !n.crashed && !n.paused && reachable(c)) w.last_heard_ns = now_ns();
      if (w.welcomed && now_ns() - w.last_heard_ns > cfg_.heartbeat_timeout.count() * ms_ns) close_worker_side(*w.conn);
    }
    if (w.welcomed && now_ns() >= w.next_heartbeat_ns) {
      w.next_heartbeat_ns = now_ns() + cfg_.heartbeat_interval.count() * ms_ns;
      protocol::Heartbeat hb;
      hb.running = w.table->running();
      hb.assigned = w.table->assigned();
      if (!weakened("lost_rule")) hb.finished = w.delivery.unacknowledged();
      send(*w.conn, true, hb);
    }
    // Finishes not acknowledged are sent again (FinishDelivery, as the Agent).
    w.delivery.tick(w.clock->mono());
    delivery_effects(w);
    w.table->tick(w.clock->mono());
    worker_effects(w);
  }

  void worker_receives(Worker& w, std::uint64_t conn, const protocol::Message& m) {
    if (w.conn != conn) return;
    const MonoTime now = w.clock->mono();
    std::visit(
        [&](const auto& msg) {
          using T = std::decay_t<decltype(msg)>;
          if constexpr (std::is_same_v<T, protocol::Welcome>) {
            w.welcomed = true;
            w.next_heartbeat_ns = now_ns();
            w.table->welcome(msg, now);
            w.delivery.attached();  // the outbox is sent again
            delivery_effects(w);
          } else if constexpr (std::is_same_v<T, protocol::Redirect>) {
            for (const auto& n : nodes_)
              if (n.identity.endpoint == msg.leader_endpoint) w.target = n.index;
            if (msg.leader_endpoint.empty()) w.target = static_cast<int>(uniform(0, k_.nodes - 1));
          } else if constexpr (std::is_same_v<T, protocol::Assign>) {
            w.table->assign(msg, now);
          } else if constexpr (std::is_same_v<T, protocol::StartGranted>) {
            w.table->start_granted(msg.ref);
          } else if constexpr (std::is_same_v<T, protocol::StartDenied>) {
            w.table->start_denied(msg.ref, now);
          } else if constexpr (std::is_same_v<T, protocol::Cancel>) {
            w.table->cancel(msg, now);
          } else if constexpr (std::is_same_v<T, protocol::FinishAck>) {
            w.delivery.acked(msg.ref);
            delivery_effects(w);
          }
        },
        m);
    worker_effects(w);
  }

  /// Carries out what a worker's FinishDelivery decided: the outbox is
  /// written at once and durably (a crash keeps what it holds).
  void delivery_effects(Worker& w) {
    for (auto effects = w.delivery.take_effects(); !effects.empty(); effects = w.delivery.take_effects())
      for (auto& effect : effects) {
        if (auto* write = std::get_if<wc::WriteFinishes>(&effect)) {
          w.delivery.written(write->group, true, w.clock->mono());
        } else if (auto* s = std::get_if<wc::SendFinish>(&effect)) {
          if (w.conn) send(*w.conn, true, s->finish);
        }
      }
  }

  void worker_effects(Worker& w) {
    for (auto& effect : w.table->take_effects()) {
      std::visit(
          [&](auto& e) {
            using T = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<T, wc::Send>) {
              if (w.conn) send(*w.conn, true, e.message);
            } else if constexpr (std::is_same_v<T, wc::Spawn>) {
              spawn(w, e.assign);
            } else if constexpr (std::is_same_v<T, wc::Kill>) {
              for (auto& t : trees_)
                if (t.worker == w.id && t.ref == e.ref && !t.main.dead) kill_tree(t, e.cause);
            } else if constexpr (std::is_same_v<T, wc::Renew>) {
              for (auto& t : trees_)
                if (t.worker == w.id && t.ref == e.ref && !t.main.dead)
                  t.switch_until = w.clock->mono() + switch_timeout();
            }
          },
          effect);
    }
  }

  Millis switch_timeout() const { return std::max<Millis>(cfg_.continuation_margin / 2, 200ms); }

  void spawn(Worker& w, const protocol::Assign& a) {
    Tree t;
    t.ref = a.ref;
    t.worker = w.id;
    t.incarnation = w.incarnation;
    t.main.pid = ++next_pid_;
    t.main.start_ns = now_ns();
    t.main.end_ns = now_ns() + uniform(k_.task_min_ms, k_.task_max_ms) * ms_ns;
    t.exit_status = chance(k_.p_success) ? 0 : 1;
    if (chance(k_.p_descendant)) {
      Life c;
      c.pid = ++next_pid_;
      c.start_ns = now_ns() + uniform(0, 20) * ms_ns;
      c.end_ns = t.main.end_ns + uniform(-500, 1500) * ms_ns;
      c.end_ns = std::max(c.end_ns, c.start_ns + ms_ns);
      t.child = c;
    }
    t.switch_until = w.clock->mono() + switch_timeout();
    note(w.id + " spawns run " + std::to_string(a.ref.run_id) + " attempt " + std::to_string(a.ref.attempt));
    trees_.push_back(std::move(t));
  }

  void kill_tree(Tree& t, wc::KillCause cause) {
    if (t.main.dead) return;
    t.kill_cause = cause;
    t.main.dead = true;
    t.main.end_ns = now_ns() + uniform(1, 30) * ms_ns;  // the kill takes a moment
    t.main.status.reset();
    // The task's cgroup dies with it; without containment (a weakened
    // build) a detached descendant lives on to its natural end.
    if (t.child && !t.child->dead && !weakened("no_containment")) {
      t.child->dead = true;
      t.child->end_ns = std::max(t.child->start_ns, t.main.end_ns);
    }
  }

  /// Natural exits, dead-man's switches, and the finishes of ended trees.
  void step_trees() {
    for (auto& t : trees_) {
      Worker& w = worker_of(t);
      if (!t.main.dead) {
        if (t.main.end_ns <= now_ns()) {
          t.main.dead = true;
          t.main.status = t.exit_status;
          // The worker empties the task's cgroup when the supervisor exits.
          if (t.child && !t.child->dead && !weakened("no_containment") && t.child->end_ns > t.main.end_ns) {
            t.child->dead = true;
            t.child->end_ns = t.main.end_ns + ms_ns;
          }
        } else if (w.clock->mono() > t.switch_until && t.incarnation == w.incarnation) {
          note(w.id + " switch fires for run " + std::to_string(t.ref.run_id));
          kill_tree(t, wc::KillCause::continuation);
        }
      }
      if (t.child && !t.child->dead && t.child->end_ns <= now_ns()) {
        t.child->dead = true;
        t.child->status = 0;
      }
      // The finish exists once the main process is gone (and its tree with
      // it), and only for the incarnation that runs it.
      if (t.main.dead && !t.reported && t.main.end_ns <= now_ns()) {
        if (w.paused) continue;  // a stopped worker notices when it runs again
        t.reported = true;
        if (t.incarnation != w.incarnation || w.crashed) continue;
        protocol::Finish f;
        f.ref = t.ref;
        if (t.main.status)
          f.outcome = *t.main.status == 0 ? protocol::Outcome::succeeded : protocol::Outcome::failed;
        else
          f.outcome = t.kill_cause == wc::KillCause::cancel ? protocol::Outcome::canceled : protocol::Outcome::failed;
        f.exit_code = t.main.status;
        f.duration_ms = (t.main.end_ns - t.main.start_ns) / ms_ns;
        w.table->finished(t.ref, w.clock->mono());
        w.delivery.ended(f);
        delivery_effects(w);
        worker_effects(w);
      }
    }
  }

  Worker& worker_of(const Tree& t) {
    for (auto& w : workers_)
      if (w.id == t.worker) return w;
    BATON_ASSERT(false);
    return workers_.front();
  }

  // ---- faults -----------------------------------------------------------------
  void inject() {
    Draw kind = unpartitioned_draws[uniform(0, static_cast<std::int64_t>(std::size(unpartitioned_draws)) - 1)];
    // Drawn only when partitioned: other seeds unchanged.
    if (k_.partitions > 1 && chance(1.0 / static_cast<double>(std::size(unpartitioned_draws))))
      kind = Draw::move_worker;
    const auto node = static_cast<std::size_t>(uniform(0, k_.nodes - 1));
    const auto worker = static_cast<std::size_t>(uniform(0, k_.workers - 1));
    Node& n = nodes_[node];
    Worker& w = workers_[worker];
    const std::int64_t from = now_ns();
    auto record = [&](const std::string& kind_name, const std::string& target, std::int64_t ms) {
      faults_.push_back({kind_name, target, from, from + ms * ms_ns});
      note("fault " + kind_name + " " + target + " for " + std::to_string(ms) + "ms");
    };
    switch (kind) {
      case Draw::kill_node: {  // kill -9 of a node, restarted later
        if (n.crashed) return;
        const std::int64_t ms = uniform(300, 3000);
        record(name_of(chaos::Fault::kill9_node), n.identity.node_id, ms);
        for (Seat& s : n.seats) stop_book(n, s, "killed");
        for (auto& [id, c] : conns_)
          if (c.node == n.index && c.node_open) {
            c.node_open = false;
            if (reachable(c)) later(uniform(1, 20), [this, id = id] { close_worker_side(id); });
          }
        n.crashed = true;
        later(ms, [this, node] {
          nodes_[node].incarnation++;
          boot_node(nodes_[node]);
        });
        break;
      }
      case Draw::stop_node: {  // SIGSTOP of a node
        if (n.crashed || n.paused) return;
        const std::int64_t ms = uniform(300, 4000);
        record(name_of(leads_any(n) ? chaos::Fault::pause_leader : chaos::Fault::pause_node), n.identity.node_id, ms);
        n.paused = true;
        later(ms, [this, node] { nodes_[node].paused = false; });
        break;
      }
      case Draw::cut_node_from_db: {  // a node cut from the database
        if (n.db_cut) return;
        const std::int64_t ms = uniform(300, 4000);
        record(name_of(chaos::Fault::partition_node_db), n.identity.node_id, ms);
        n.db_cut = true;
        apply_db_cut(n);
        later(ms, [this, node] {
          nodes_[node].db_cut = false;
          apply_db_cut(nodes_[node]);
        });
        break;
      }
      case Draw::cut_worker: {  // a worker cut from every node
        if (w.cut || w.crashed) return;
        const std::int64_t ms = uniform(300, 6000);
        record(name_of(chaos::Fault::partition_workers), w.id, ms);
        w.cut = true;  // each side notices by its own silence timeout
        later(ms, [this, worker] { workers_[worker].cut = false; });
        break;
      }
      case Draw::kill_worker: {  // kill -9 of a worker: its trees die with their supervisors' control pipes
        if (w.crashed) return;
        const std::int64_t ms = uniform(200, 3000);
        record(name_of(chaos::Fault::kill9_worker), w.id, ms);
        // The outbox as the harness's snapshot would find it.
        for (const auto& f : w.delivery.durable())
          durable_.push_back(
              {w.id, f.ref.run_id, f.ref.attempt, f.ref.lease_token, std::string(protocol::to_string(f.outcome))});
        w.crashed = true;
        for (auto& t : trees_)
          if (t.worker == w.id && !t.main.dead) kill_tree(t, wc::KillCause::stopping);
        if (w.conn) {
          const std::uint64_t conn = *w.conn;
          conns_[conn].worker_open = false;
          if (reachable(conns_[conn])) later(uniform(1, 20), [this, conn] { close_node_side_by_peer(conn); });
        }
        later(ms, [this, worker] {
          workers_[worker].incarnation++;
          boot_worker(workers_[worker]);
        });
        break;
      }
      case Draw::stop_worker: {  // SIGSTOP of a worker (its task trees run on; their switches do not)
        if (w.crashed || w.paused) return;
        // Up to past heartbeat timeout + continuation timeout + margin (9 s):
        // a worker stopped that long finds frames whose attempts the leader
        // has given up (worker_core/stall_guard.h).
        const std::int64_t ms = uniform(300, 10000);
        record(name_of(chaos::Fault::pause_worker), w.id, ms);
        w.paused = true;
        later(ms, [this, worker] { workers_[worker].paused = false; });
        break;
      }
      case Draw::reset_connection: {  // a connection reset
        if (!w.conn) return;
        record(name_of(chaos::Fault::proxy_reset), w.id, 0);
        reset(*w.conn);
        break;
      }
      case Draw::clock_rate: {  // a clock runs at another rate for a while
        const bool on_node = chance(0.5);
        const double rate = on_node ? (chance(0.5) ? 0.8 : 1.25) : (chance(0.5) ? 0.9 : 1.1);
        const std::int64_t ms = uniform(2000, 8000);
        record(name_of(chaos::Fault::clock_rate), on_node ? n.identity.node_id : w.id, ms);
        (on_node ? *n.clock : *w.clock).set_rate(rate);
        // The clock object of that moment: a restart since then has a new one.
        later(ms, [this, on_node, node, worker] {
          if (on_node)
            nodes_[node].clock->set_rate(k_.node_rate[node]);
          else
            workers_[worker].clock->set_rate(k_.worker_rate[worker]);
        });
        break;
      }
      case Draw::kill_supervisor: {  // the supervisor of one task killed (its cgroup is emptied)
        for (auto& t : trees_)
          if (t.worker == w.id && !t.main.dead && !w.crashed) {
            record(name_of(chaos::Fault::kill_supervisor), w.id, 0);
            kill_tree(t, wc::KillCause::stopping);
            break;
          }
        break;
      }
      case Draw::cancel_run: {  // an operator cancels a run (through the leader, as the admin API does)
        if (created_ == 0) return;
        const RunId run{uniform(1, created_)};
        // The admin API hands a cancel to the leader of the run's partition.
        const auto partition = static_cast<std::size_t>(run_db_.runs().at(run.value).partition);
        for (auto& x : nodes_)
          if (Seat& s = x.seats[partition]; s.book && !x.crashed) {
            record(name_of(chaos::Fault::cancel), "run " + std::to_string(run.value), 0);
            s.inbox.push_back([&x, &s, run] {
              if (s.book) s.book->cancel(run, "operator", x.clock->mono());
            });
            break;
          }
        break;
      }
      case Draw::cut_pair: {  // one worker cut from one node (the others still reach both)
        const std::pair<int, int> pair{w.index, n.index};
        if (cut_pairs_.count(pair)) return;
        const std::int64_t ms = uniform(300, 6000);
        record(name_of(chaos::Fault::partition_pair), w.id + "-" + n.identity.node_id, ms);
        cut_pairs_.insert(pair);
        later(ms, [this, pair] { cut_pairs_.erase(pair); });
        break;
      }
      case Draw::move_worker: {  // a rebalancer moves a worker to another partition for a while
        const int home = w.partition;
        const int to = (home + 1) % k_.partitions;
        if (w.moving_to || !may_leave(w, home)) return;
        const std::int64_t ms = uniform(1000, 20000);
        record(name_of(chaos::Fault::move_worker), w.id + " p" + std::to_string(home) + "->p" + std::to_string(to), ms);
        w.moving_to = to;
        later(ms, [this, worker, home] {
          Worker& x = workers_[worker];
          if (x.partition == home)
            x.moving_to.reset();  // it never moved
          else if (may_leave(x, x.partition))
            x.moving_to = home;
        });
        break;
      }
      case Draw::restart_db: {  // the database restarts: every connection fails for a moment
        if (db_down_) return;
        const std::int64_t ms = uniform(200, 1500);
        record(name_of(chaos::Fault::pg_restart), "postgres", ms);
        db_down_ = true;
        for (auto& x : nodes_) apply_db_cut(x);
        later(ms, [this] {
          db_down_ = false;
          for (auto& x : nodes_) apply_db_cut(x);
        });
        break;
      }
    }
  }

  void heal_all() {
    // Timers heal everything they started; the rest runs out here.
    for (auto& n : nodes_) n.db_cut = false;
    for (auto& w : workers_) w.cut = false;
    cut_pairs_.clear();
    db_down_ = false;
    for (auto& n : nodes_) apply_db_cut(n);
  }

  // ---- the run ------------------------------------------------------------------
  void create_run() {
    store::NewRun r;
    r.max_attempts = static_cast<int>(uniform(1, 3));
    r.trigger_kind = "api";
    // Partitioned leadership: the job's partition (here drawn per run);
    // the API's insert is fenced by that partition's lease.
    const int partition = k_.partitions > 1 ? static_cast<int>(uniform(0, k_.partitions - 1)) : 0;
    auto c = db_for(partition).create_run(lease_of(partition).epoch(), r);
    if (c.outcome != store::WriteOutcome::applied) return;
    created_++;
    note("run " + std::to_string(c.run.value) + " created");
    // As the API does: the new run as its insert returned it goes to every
    // book there is (a deposed leader's too: its assignment must be fenced).
    const store::DueRun due = store::fake::FakeRunDb::due_run_of(run_db_.runs().at(c.run.value));
    for (auto& n : nodes_)
      if (Seat& s = n.seats[static_cast<std::size_t>(partition)]; s.book && !n.paused && !n.crashed)
        s.inbox.push_back([this, &n, &s, due] {
          if (!s.book) return;
          if (k_.hand_created)
            s.book->created({due}, n.clock->mono());
          else
            s.book->dispatch_now();
        });
  }

  /// An event posted as the API does (any node, no fence), sometimes twice
  /// with its dedupe key (a client's retry): recorded once.
  void post_event(int i) {
    const std::string key = "ping-" + std::to_string(i);
    const std::int64_t id = run_db_.post_event(event_kind, key);
    if (chance(0.3)) run_db_.post_event(event_kind, key);
    posted_keys_.push_back(key);
    note("event " + std::to_string(id) + " posted, key " + key);
  }

  bool quiet() const {
    for (const auto& [id, r] : run_db_.runs())
      if (!is_terminal(r.state)) return false;
    for (const auto& e : run_db_.events())
      if (!e.processed) return false;
    for (const auto& t : trees_)
      if (!t.main.dead || (t.child && !t.child->dead)) return false;
    return true;
  }

  void advance() {
    db_clock_.now = db_clock_.now + std::chrono::duration_cast<nanoseconds>(step);
    while (!timers_.empty() && timers_.top().at_ns <= now_ns()) {
      auto f = timers_.top().f;
      timers_.pop();
      f();
    }
    while (!frames_.empty() && frames_.top().at_ns <= now_ns()) {
      Frame f = frames_.top();
      frames_.pop();
      deliver(f);
    }
    step_trees();
    // A different order every step: no node or worker always goes first.
    std::vector<int> order;
    for (int i = 0; i < k_.nodes + k_.workers; ++i) order.push_back(i);
    std::shuffle(order.begin(), order.end(), rng_);
    for (int i : order) {
      if (i < k_.nodes)
        step_node(nodes_[static_cast<std::size_t>(i)]);
      else
        step_worker(workers_[static_cast<std::size_t>(i - k_.nodes)]);
    }
    for (auto& w : workers_) track_leaderless(w);
  }

  PartitionedHistory history() const;

  struct Timer {
    std::int64_t at_ns;
    std::uint64_t seq;
    std::function<void()> f;
    bool operator>(const Timer& o) const { return at_ns != o.at_ns ? at_ns > o.at_ns : seq > o.seq; }
  };

  std::uint64_t seed_;
  Knobs k_;
  std::mt19937_64 rng_;
  std::vector<std::string>* trace_;
  WorldClock db_clock_;
  std::vector<std::unique_ptr<store::fake::FakeLeaseDb>> lease_dbs_;  ///< one per partition
  store::fake::FakeRunDb run_db_;
  lc::RuntimeConfig cfg_;
  std::deque<Node> nodes_;
  std::deque<Worker> workers_;
  std::map<std::uint64_t, Conn> conns_;
  std::priority_queue<Frame, std::vector<Frame>, std::greater<>> frames_;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers_;
  std::deque<Tree> trees_;
  std::vector<Fault> faults_;
  std::set<std::pair<int, int>> cut_pairs_;  ///< (worker, node) that cannot reach each other
  std::vector<chaos::DurableFinish> durable_;
  bool db_down_ = false;
  std::uint64_t seq_ = 0, next_conn_ = 0;
  std::int64_t next_pid_ = 1000;
  std::int64_t start_ns_ = 0, end_faults_ns_ = 0, end_ns_ = 0;
  std::int64_t frames_sent_ = 0, created_ = 0, requeued_ = 0;  // requeued_: prefetched runs taken back
  std::int64_t granted_ = 0;                                   ///< assign frames that carried the start (protocol 4)
  std::int64_t moves_ = 0;                                     // workers moved to another partition
  std::vector<std::string> posted_keys_;                       ///< dedupe keys of the events posted
};

Outcome World::run() {
  start_ns_ = now_ns();
  end_faults_ns_ = start_ns_ + k_.fault_ms * ms_ns;
  // Run creations and faults, at random moments of the fault period.
  std::vector<std::int64_t> creations;
  for (int i = 0; i < k_.runs; ++i) creations.push_back(start_ns_ + uniform(500, k_.fault_ms) * ms_ns);
  std::sort(creations.begin(), creations.end());
  std::exponential_distribution<double> gap(k_.faults_per_s);
  std::int64_t next_fault = start_ns_ + 2000 * ms_ns + static_cast<std::int64_t>(gap(rng_) * 1e9);
  std::size_t next_creation = 0;
  if (k_.cron_every_s > 0) {
    store::fake::FakeJob j;
    j.name = cron_job;
    j.schedule = "*/" + std::to_string(k_.cron_every_s) + " * * * * *";
    j.concurrency_policy = k_.cron_policy;
    j.misfire_policy = k_.cron_misfire;
    run_db_.define_job(j);
  }
  std::vector<std::int64_t> postings;
  if (k_.events > 0) {
    store::fake::FakeJob on_event;
    on_event.name = event_job;
    on_event.on_events = {event_kind};
    run_db_.define_job(on_event);
    store::fake::FakeJob after;
    after.name = after_job;
    after.run_after = {event_job};
    run_db_.define_job(after);
    for (int i = 0; i < k_.events; ++i) postings.push_back(start_ns_ + uniform(500, k_.fault_ms) * ms_ns);
    std::sort(postings.begin(), postings.end());
  }
  std::size_t next_posting = 0;
  while (now_ns() < end_faults_ns_) {
    while (next_creation < creations.size() && creations[next_creation] <= now_ns()) {
      create_run();
      next_creation++;
    }
    while (next_posting < postings.size() && postings[next_posting] <= now_ns()) {
      post_event(static_cast<int>(next_posting));
      next_posting++;
    }
    if (k_.faults_per_s > 0 && now_ns() >= next_fault) {
      inject();
      next_fault = now_ns() + static_cast<std::int64_t>(gap(rng_) * 1e9) + ms_ns;
    }
    advance();
  }
  note("faults end");
  if (k_.cron_every_s > 0) run_db_.delete_job(cron_job);  // no more slots: the history can go quiet
  const std::int64_t limit = now_ns() + k_.quiet_ms * ms_ns;
  // Timers still heal what they started (restarts, resumes); then quiesce.
  while (now_ns() < limit) {
    advance();
    if (timers_.empty() && quiet()) break;
  }
  heal_all();
  end_ns_ = now_ns();
  for (auto& w : workers_) end_leaderless(w, now_ns());

  Outcome out;
  out.seed = seed_;
  out.knobs = k_;
  out.report = check_partitioned(history());
  const auto& checked = checked_invariants();
  for (const auto& inv : out.report.invariants)
    if (inv.examined > 0 && inv.violations > 0 && std::find(checked.begin(), checked.end(), inv.name) != checked.end())
      out.violated.push_back(inv.name);
  out.stats["runs"] = created_;
  out.stats["executions"] = static_cast<std::int64_t>(trees_.size());
  out.stats["epochs"] = 0;
  for (const auto& l : lease_dbs_) out.stats["epochs"] += static_cast<std::int64_t>(l->history().size());
  out.stats["partitions"] = k_.partitions;
  out.stats["worker_moves"] = moves_;
  out.stats["frames"] = frames_sent_;
  out.stats["faults"] = static_cast<std::int64_t>(faults_.size());
  out.stats["transitions"] = static_cast<std::int64_t>(run_db_.transitions().size());
  out.stats["simulated_ms"] = (end_ns_ - start_ns_) / ms_ns;
  out.stats["requeued"] = requeued_;
  out.stats["granted"] = granted_;
  std::int64_t succeeded = 0, cron_runs = 0, cron_skipped = 0;
  for (const auto& [id, r] : run_db_.runs()) {
    succeeded += r.state == RunState::succeeded;
    cron_runs += r.slot_unix.has_value();
  }
  for (const auto& l : run_db_.ledger()) cron_skipped += l.decision == "skipped";
  out.stats["succeeded"] = succeeded;
  out.stats["cron_runs"] = cron_runs;
  out.stats["cron_skips"] = cron_skipped;
  std::int64_t event_runs = 0, after_runs = 0;
  for (const auto& [id, r] : run_db_.runs())
    if (r.event_id) {
      const bool after = r.job_definition_id == run_db_.jobs().at(after_job).id;
      (after ? after_runs : event_runs)++;
    }
  out.stats["events"] = static_cast<std::int64_t>(run_db_.events().size());
  out.stats["event_runs"] = event_runs;
  out.stats["after_runs"] = after_runs;
  return out;
}

PartitionedHistory World::history() const {
  PartitionedHistory ph;
  chaos::History& h = ph.whole;
  const auto us = [](MonoTime t) { return t.since_start.count() / 1000; };
  h.window.start_us = start_ns_ / 1000;
  h.window.end_us = end_ns_ / 1000;
  h.window.start_mono_ns = start_ns_;
  h.window.end_mono_ns = end_ns_;
  h.window.continuation_ms = cfg_.continuation_timeout.count();
  h.window.continuation_margin_ms = cfg_.continuation_margin.count();
  h.window.lease_ms = election_config().lease.count();
  h.window.poll_ms = election_config().poll_every.count();
  for (const auto& f : faults_) {
    chaos::FaultWindow w;
    w.fault = f.kind;
    w.target = f.target;
    w.from_ns = f.from_ns;
    w.to_ns = f.to_ns;
    w.from_us = f.from_ns / 1000;
    w.to_us = f.to_ns / 1000;
    w.took_effect = true;
    h.faults.push_back(w);
  }
  // Executions, as the tasks' own evidence would show them.
  for (const auto& t : trees_) {
    chaos::Execution x;
    x.run = t.ref.run_id;
    x.attempt = t.ref.attempt;
    x.token = t.ref.lease_token;
    x.worker = t.worker;
    x.root_pid = x.root_pstart = t.main.pid;
    auto life = [&](const Life& l) {
      chaos::ProcessLife p;
      p.run = x.run;
      p.attempt = x.attempt;
      p.token = x.token;
      p.worker = x.worker;
      p.pid = p.pstart = l.pid;
      p.start_ns = l.start_ns;
      p.last_ns = l.dead ? l.end_ns : end_ns_;
      p.start_wall_us = l.start_ns / 1000;
      p.exit_status = l.status;
      return p;
    };
    x.main = life(t.main);
    x.processes.push_back(*x.main);
    if (t.child) x.processes.push_back(life(*t.child));
    x.from_ns = t.main.start_ns;
    x.to_ns = 0;
    for (const auto& p : x.processes) x.to_ns = std::max(x.to_ns, p.last_ns);
    h.executions[x.run].push_back(std::move(x));
  }
  for (auto& [run, xs] : h.executions)
    std::sort(xs.begin(), xs.end(), [](const auto& a, const auto& b) { return a.from_ns < b.from_ns; });
  std::map<std::int64_t, std::string> job_names;
  for (const auto& [name, j] : run_db_.jobs()) {
    job_names[j.id] = name;
    chaos::JobRow job;
    job.name = name;
    job.concurrency_policy = j.concurrency_policy;
    job.on_events = j.on_events;
    // Running after a job is subscribing to the event its successes set
    // off: events_once then checks the dependency as it checks any event.
    for (const auto& upstream : j.run_after) job.on_events.push_back("job.succeeded:" + upstream);
    h.jobs[name] = job;
  }
  for (const auto& e : run_db_.events()) h.events.push_back({e.id, e.kind, e.dedupe_key, e.processed});
  h.accepted_events = posted_keys_;
  for (const auto& [id, r] : run_db_.runs())  // every success of a job another runs after: its event was due
    if (r.state == RunState::succeeded && r.job_definition_id && job_names[*r.job_definition_id] == event_job)
      h.accepted_events.push_back("run-succeeded:" + std::to_string(id));
  for (const auto& l : run_db_.ledger()) {
    chaos::LedgerRow row;
    row.job = l.job;
    row.decision = l.decision;
    row.reason = l.reason;
    row.slot = l.slot;
    row.slot_last = l.slot_last;
    if (l.run) row.run = l.run->value;
    row.epoch = l.epoch.value;
    h.ledger.push_back(row);
  }
  for (const auto& [id, r] : run_db_.runs()) {
    chaos::RunRow row;
    row.id = id;
    if (r.job_definition_id) row.job = job_names[*r.job_definition_id];
    row.slot = r.slot_unix.value_or(0);
    row.event_id = r.event_id.value_or(0);
    row.state = std::string(to_string(r.state));
    row.error_code = r.error_code;
    row.attempt = r.attempt;
    row.max_attempts = r.max_attempts;
    row.created_us = h.window.start_us;
    h.runs[id] = row;
    ph.run_partition[id] = r.partition;
  }
  std::int64_t log_id = 0;
  for (const auto& t : run_db_.transitions()) {
    chaos::TransitionRow row;
    row.id = ++log_id;
    row.run = t.run.value;
    row.from = t.from_version.value == 0 ? "" : std::string(to_string(t.from));
    row.to = std::string(to_string(t.to));
    row.continuation = std::string(to_string(t.continuation));
    if (t.from_version.value != 0) row.from_version = t.from_version.value;
    row.to_version = t.to_version.value;
    row.attempt = t.attempt;
    row.epoch = t.epoch.value;
    row.commit_us = us(t.at);
    if (t.continuation_timeout_ms > 0) row.continuation_ms = t.continuation_timeout_ms;
    h.transitions.push_back(row);
    ph.fenced_by.push_back(t.partition);
  }
  for (const auto& lease : lease_dbs_) {
    auto& epochs = ph.epochs.emplace_back();
    for (const auto& e : lease->history())
      epochs.push_back({e.epoch.value, e.leader_id, e.incarnation, us(e.elected_at)});
  }
  for (const auto& a : run_db_.attempts())
    h.attempts.push_back(
        {a.run.value, a.attempt, a.worker, std::string(to_string(a.outcome)), a.lease_token, a.exit_code});
  h.durable_finishes = durable_;
  for (const auto& d : run_db_.dead_letters())
    h.dead_letters.push_back({d.run.value, std::string(to_string(d.final_state)), d.attempts});
  return ph;
}

}  // namespace

Knobs knobs_for(std::uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5DEECE66Dull);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  Knobs k;
  k.nodes = static_cast<int>(pick(1, 4));
  k.workers = static_cast<int>(pick(1, 4));
  k.capacity = static_cast<int>(pick(1, 3));
  k.fault_ms = pick(20, 90) * 1000;
  k.runs = static_cast<int>(pick(10, 60));
  k.quiet_ms = 600000;  // an upper bound: a history stops as soon as it is quiet
  k.frame_delay_min_ms = pick(0, 5);
  k.frame_delay_max_ms = k.frame_delay_min_ms + pick(0, 40);
  k.p_reset = pick(0, 1) ? real(0, 0.01) : 0;
  k.p_in_doubt = pick(0, 1) ? real(0, 0.05) : 0;
  k.faults_per_s = real(0.05, 0.8);
  for (int i = 0; i < k.nodes; ++i) k.node_rate.push_back(real(0.97, 1.03));
  for (int i = 0; i < k.workers; ++i) k.worker_rate.push_back(real(0.97, 1.03));
  k.p_success = real(0.5, 0.95);
  k.p_descendant = real(0, 0.6);
  k.task_max_ms = pick(200, 4000);
  k.lane_delay_max_ms = pick(0, 1) ? pick(1, 30) : 0;
  k.prefetch = pick(0, 1) ? static_cast<int>(pick(1, k.capacity)) : 0;
  k.hand_created = pick(0, 1) != 0;
  // Partitioned leadership (docs/scaling.md) in a third of the seeds, with
  // at least one worker per partition. Drawn last: the other knobs of a seed
  // are what they were before partitions were modelled.
  if (pick(0, 2) == 0) k.partitions = static_cast<int>(std::min<std::int64_t>(pick(2, 4), k.workers));
  // Workers of the previous version (the separate start) in a quarter of
  // the seeds; drawn after everything above for the same reason.
  k.protocol = pick(0, 3) == 0 ? 3 : protocol::protocol_version_max;
  // A cron job in half the unpartitioned seeds; drawn last, like the two
  // above.
  if (k.partitions == 1 && pick(0, 1) == 1) {
    static const char* const policies[] = {"allow", "forbid", "replace"};
    static const char* const misfires[] = {"run_latest", "run_all", "skip"};
    k.cron_every_s = static_cast<int>(pick(1, 3));
    k.cron_policy = policies[pick(0, 2)];
    k.cron_misfire = misfires[pick(0, 2)];
  }
  // Events and a run-after dependency in half the unpartitioned seeds.
  if (k.partitions == 1 && pick(0, 1) == 1) k.events = static_cast<int>(pick(3, 15));
  return k;
}

const std::vector<std::string>& checked_invariants() {
  static const std::vector<std::string> names{"no_overlapping_executions",
                                              "one_successful_execution",
                                              "success_recorded",
                                              "outcome_matches_process",
                                              "attempts_and_tokens",
                                              "confirming_not_cut_short",
                                              "dead_letter_iff_failed",
                                              "transition_history_continuous",
                                              "no_stale_epoch_writes",
                                              "one_leader_per_epoch",
                                              "legal_transitions",
                                              "quiescent",
                                              "writes_fenced_by_own_partition",
                                              "cron_slots_accounted",
                                              "events_once"};
  return names;
}

Outcome simulate(std::uint64_t seed, std::vector<std::string>* trace) {
  World world(seed, knobs_for(seed), trace);
  return world.run();
}

}  // namespace baton::sim
