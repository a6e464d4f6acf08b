#pragma once
// The simulated world of one seed (simulation.h): its clocks, nodes, workers,
// task trees, network and faults over one virtual time. Internal to the
// simulator; its parts are defined in world_nodes.cpp, world_network.cpp,
// world_workers.cpp, world_faults.cpp and world_run.cpp, and its run and
// history in simulation.cpp.
#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "baton/base/assert.h"
#include "baton/base/weaken.h"
#include "baton/checker/faults.h"
#include "baton/consensus/elector.h"
#include "baton/journal/book_recorder.h"
#include "baton/leader_core/run_book.h"
#include "baton/protocol/vocabulary.h"
#include "baton/sim/partitioned_history.h"
#include "baton/sim/simulation.h"
#include "baton/store_calls/store_call.h"
#include "baton/store_fake/fake_leader_store.h"
#include "baton/store_fake/fake_lease_store.h"
#include "baton/store_fake/fake_run_store.h"
#include "baton/worker_core/attempt_table.h"
#include "baton/worker_core/finish_delivery.h"
#include "baton/worker_core/stall_guard.h"

namespace baton::sim::detail {

using namespace std::chrono_literals;
using std::chrono::nanoseconds;
namespace lc = leader_core;
namespace wc = worker_core;

using checker::name_of;

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

inline lc::RuntimeConfig runtime_config() {
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

inline consensus::ElectionConfig election_config() {
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
/// vocabulary (baton/checker/faults.h), which the harness shares.
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
  /// Its incident journal, when the simulation keeps them (Journals).
  std::unique_ptr<journal::LineSink> journal_sink;
  std::unique_ptr<journal::BookRecorder> journal;
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
  World(std::uint64_t seed, Knobs k, std::vector<std::string>* trace, Journals* journals = nullptr)
      : seed_(seed),
        k_(std::move(k)),
        rng_(seed * 0x9E3779B97F4A7C15ull + 1),
        trace_(trace),
        journals_(journals),
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
  void boot_node(Node& n);
  void apply_db_cut(Node& n);
  static bool leads_any(const Node& n);
  static std::string seat_name(const Node& n, const Seat& s);
  void step_node(Node& n);
  void step_seat(Node& n, Seat& s);
  void run_book(Node& n, Seat& s);
  void stop_book(Node& n, Seat& s, const char* why);
  /// Gives the book just made in `s` a journal in journals_.
  void record_journal(Seat& s, const journal::BookHeader& made);

  /// The control loop's drain: every effect carried out in order. A store
  /// effect becomes the same call as in the control loop (store_calls); where
  /// it runs is the loop's choice, modelled here: on the loop's thread with
  /// its result fed back at once, or on a lane, later.
  void execute(Node& n, Seat& s);
  void run_call(Node& n, Seat& s, store_calls::Call call);

  /// A lane's statement (ControlLoop's assign, start, finish and read
  /// lanes): it runs now or when its reply is due, and the reply reaches
  /// the book later, after other inputs; a reply to a book that is gone is
  /// dropped (its statement still ran: the lane thread outlives the loop's
  /// epoch).
  /// As in ControlLoop, a read's rows age by the time its reply waited
  /// between the statement's return and the book.
  void on_lane(Node& n, Seat& s, store_calls::Call call);

  // ---- network ----------------------------------------------------------------
  void send(std::uint64_t conn, bool to_node, const protocol::Message& m);
  void reset(std::uint64_t conn);

  /// Milliseconds from now until a close sent now reaches the other side.
  std::int64_t after_data(const Conn& c, bool to_node);
  void later(std::int64_t in_ms, std::function<void()> f);
  bool reachable(const Conn& c) const;
  void deliver(const Frame& f);
  void node_receives(Node& n, std::uint64_t conn, const protocol::Message& m);

  /// The node closes its side (its book said so, or it stops leading).
  void close_node_side(std::uint64_t conn);

  /// The node learns that the worker side closed (a FIN or a reset).
  void close_node_side_by_peer(std::uint64_t conn);
  void close_worker_side(std::uint64_t conn);

  // ---- workers ----------------------------------------------------------------
  void boot_worker(Worker& w);

  /// The documented at-least-once window is about a worker that cannot
  /// talk with the current leader for longer than the leader waits for it:
  /// the simulator knows exactly when that was, whatever chain of faults
  /// caused it, and records it for the checker as a `worker_cut_off` fault
  /// (docs/simulation.md).
  void track_leaderless(Worker& w);

  /// Ends `w`'s interval without a leader at `end_ns` (when its link began).
  void end_leaderless(Worker& w, std::int64_t end_ns);
  void worker_lost_connection(Worker& w);
  protocol::Hello hello(const Worker& w) const;

  /// The partition a worker serves once its pending move (if any) is made.
  static int bound_to(const Worker& w) { return w.moving_to.value_or(w.partition); }

  /// A partition keeps at least one worker: `w` may leave `from` only if
  /// another worker stays bound to it.
  bool may_leave(const Worker& w, int from) const;

  /// Nothing of `w`'s is in flight: no attempt assigned or running, no task
  /// process alive, every finish acknowledged.
  bool idle(const Worker& w) const;

  /// Partitioned leadership binds a worker to one partition's leader; a
  /// rebalancer moves it (docs/scaling.md). The move is made when the worker
  /// is idle (drained): an attempt of its old partition must end and its
  /// finish be acknowledged by that partition's leader first, because the
  /// new partition's leader can neither see nor record it. The worker then
  /// drops its connection and attaches to its new partition's leader.
  void move_if_drained(Worker& w);
  void step_worker(Worker& w);
  void worker_receives(Worker& w, std::uint64_t conn, const protocol::Message& m);

  /// Carries out what a worker's FinishDelivery decided: the outbox is
  /// written at once and durably (a crash keeps what it holds).
  void delivery_effects(Worker& w);
  void worker_effects(Worker& w);
  Millis switch_timeout() const { return std::max<Millis>(cfg_.continuation_margin / 2, 200ms); }

  void spawn(Worker& w, const protocol::Assign& a);
  void kill_tree(Tree& t, wc::KillCause cause);

  /// Natural exits, dead-man's switches, and the finishes of ended trees.
  void step_trees();
  Worker& worker_of(const Tree& t);

  // ---- faults -----------------------------------------------------------------
  void inject();
  void heal_all();

  // ---- the run ------------------------------------------------------------------
  void create_run();

  /// An event posted as the API does (any node, no fence), sometimes twice
  /// with its dedupe key (a client's retry): recorded once.
  void post_event(int i);
  bool quiet() const;
  void advance();
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
  Journals* journals_;
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
  std::vector<checker::DurableFinish> durable_;
  bool db_down_ = false;
  std::uint64_t seq_ = 0, next_conn_ = 0;
  std::int64_t next_pid_ = 1000;
  std::int64_t start_ns_ = 0, end_faults_ns_ = 0, end_ns_ = 0;
  std::int64_t frames_sent_ = 0, created_ = 0, requeued_ = 0;  // requeued_: prefetched runs taken back
  std::int64_t granted_ = 0;                                   ///< assign frames that carried the start (protocol 4)
  std::int64_t moves_ = 0;                                     // workers moved to another partition
  std::vector<std::string> posted_keys_;                       ///< dedupe keys of the events posted
};

}  // namespace baton::sim::detail
