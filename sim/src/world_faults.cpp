#include "world.h"

namespace baton::sim::detail {

void World::inject() {
  Draw kind = unpartitioned_draws[uniform(0, static_cast<std::int64_t>(std::size(unpartitioned_draws)) - 1)];
  // Drawn only when partitioned: other seeds unchanged.
  if (k_.partitions > 1 && chance(1.0 / static_cast<double>(std::size(unpartitioned_draws)))) kind = Draw::move_worker;
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
      record(name_of(checker::Fault::kill9_node), n.identity.node_id, ms);
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
      record(name_of(leads_any(n) ? checker::Fault::pause_leader : checker::Fault::pause_node), n.identity.node_id, ms);
      n.paused = true;
      later(ms, [this, node] { nodes_[node].paused = false; });
      break;
    }
    case Draw::cut_node_from_db: {  // a node cut from the database
      if (n.db_cut) return;
      const std::int64_t ms = uniform(300, 4000);
      record(name_of(checker::Fault::partition_node_db), n.identity.node_id, ms);
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
      record(name_of(checker::Fault::partition_workers), w.id, ms);
      w.cut = true;  // each side notices by its own silence timeout
      later(ms, [this, worker] { workers_[worker].cut = false; });
      break;
    }
    case Draw::kill_worker: {  // kill -9 of a worker: its trees die with their supervisors' control pipes
      if (w.crashed) return;
      const std::int64_t ms = uniform(200, 3000);
      record(name_of(checker::Fault::kill9_worker), w.id, ms);
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
      record(name_of(checker::Fault::pause_worker), w.id, ms);
      w.paused = true;
      later(ms, [this, worker] { workers_[worker].paused = false; });
      break;
    }
    case Draw::reset_connection: {  // a connection reset
      if (!w.conn) return;
      record(name_of(checker::Fault::proxy_reset), w.id, 0);
      reset(*w.conn);
      break;
    }
    case Draw::clock_rate: {  // a clock runs at another rate for a while
      const bool on_node = chance(0.5);
      const double rate = on_node ? (chance(0.5) ? 0.8 : 1.25) : (chance(0.5) ? 0.9 : 1.1);
      const std::int64_t ms = uniform(2000, 8000);
      record(name_of(checker::Fault::clock_rate), on_node ? n.identity.node_id : w.id, ms);
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
          record(name_of(checker::Fault::kill_supervisor), w.id, 0);
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
          record(name_of(checker::Fault::cancel), "run " + std::to_string(run.value), 0);
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
      record(name_of(checker::Fault::partition_pair), w.id + "-" + n.identity.node_id, ms);
      cut_pairs_.insert(pair);
      later(ms, [this, pair] { cut_pairs_.erase(pair); });
      break;
    }
    case Draw::move_worker: {  // a rebalancer moves a worker to another partition for a while
      const int home = w.partition;
      const int to = (home + 1) % k_.partitions;
      if (w.moving_to || !may_leave(w, home)) return;
      const std::int64_t ms = uniform(1000, 20000);
      record(name_of(checker::Fault::move_worker), w.id + " p" + std::to_string(home) + "->p" + std::to_string(to), ms);
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
      record(name_of(checker::Fault::pg_restart), "postgres", ms);
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

void World::heal_all() {
  // Timers heal everything they started; the rest runs out here.
  for (auto& n : nodes_) n.db_cut = false;
  for (auto& w : workers_) w.cut = false;
  cut_pairs_.clear();
  db_down_ = false;
  for (auto& n : nodes_) apply_db_cut(n);
}

}  // namespace baton::sim::detail
