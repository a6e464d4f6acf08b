#include "world.h"

namespace baton::sim::detail {

void World::boot_node(Node& n) {
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
    s.journal.reset();
    s.inbox.clear();
    s.lane_replies.clear();
  }
  n.crashed = n.paused = false;
  apply_db_cut(n);
}

void World::apply_db_cut(Node& n) {
  const bool cut = n.db_cut || db_down_;
  for (Seat& s : n.seats) {
    s.lease->unavailable = cut;
    s.runs->unavailable = cut;
    s.leader->unavailable = cut;
  }
}

bool World::leads_any(const Node& n) {
  return std::any_of(n.seats.begin(), n.seats.end(), [](const Seat& s) { return s.book != nullptr; });
}

std::string World::seat_name(const Node& n, const Seat& s) {
  return n.seats.size() == 1 ? n.identity.node_id : n.identity.node_id + "/p" + std::to_string(s.partition);
}

void World::step_node(Node& n) {
  if (n.crashed || n.paused) return;
  for (Seat& s : n.seats) step_seat(n, s);
}

void World::step_seat(Node& n, Seat& s) {
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
    const journal::BookHeader made{s.elector->leader_epoch(), n.identity.node_id, cfg_,
                                   static_cast<std::uint64_t>(s.elector->leader_epoch().value) * 7919u + 17u,
                                   n.clock->mono()};
    s.book = std::make_unique<lc::RunBook>(made.epoch, made.node_id, made.cfg, made.seed, made.started);
    note(seat_name(n, s) + " leads epoch " + std::to_string(s.elector->leader_epoch().value));
    if (journals_) record_journal(s, made);
    s.book->start(n.clock->mono());
    execute(n, s);
  }
  if (!loop_first) run_book(n, s);
}

void World::run_book(Node& n, Seat& s) {
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

void World::stop_book(Node& n, Seat& s, const char* why) {
  if (!s.book) return;
  note(seat_name(n, s) + " stops epoch " + std::to_string(s.book->epoch().value) + ": " + why);
  for (auto link : s.book->links()) close_node_side(link);
  for (auto& [id, c] : conns_)
    if (c.node == n.index && c.partition == s.partition && c.node_open) close_node_side(id);
  s.book.reset();
  s.journal.reset();
}

namespace {
/// Appends to one book's entry of the simulation's Journals.
class JournalLines final : public journal::LineSink {
 public:
  JournalLines(Journals& all, std::size_t index) : all_(all), index_(index) {}
  void line(std::string text) override { all_[index_].push_back(std::move(text)); }

 private:
  Journals& all_;
  std::size_t index_;
};
}  // namespace

void World::record_journal(Seat& s, const journal::BookHeader& made) {
  journals_->emplace_back();
  s.journal_sink = std::make_unique<JournalLines>(*journals_, journals_->size() - 1);
  s.journal = std::make_unique<journal::BookRecorder>(
      made, [this] { return now_ns() / ms_ns; }, *s.journal_sink);
  s.book->set_journal(s.journal.get());
}

void World::execute(Node& n, Seat& s) {
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
            // ObserveDispatchLatency, ObserveRunFinished, AppendRunOutput,
            // ObserveCronSlotDelay:
            // nothing to model.
          },
          effect);
    }
  }
}

void World::run_call(Node& n, Seat& s, store_calls::Call call) {
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

void World::on_lane(Node& n, Seat& s, store_calls::Call call) {
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

}  // namespace baton::sim::detail
