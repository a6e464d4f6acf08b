#include "world.h"

namespace baton::sim::detail {

void World::boot_worker(Worker& w) {
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

void World::track_leaderless(Worker& w) {
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

void World::end_leaderless(Worker& w, std::int64_t end_ns) {
  if (!w.leaderless_since_ns) return;
  const std::int64_t since = *w.leaderless_since_ns;
  w.leaderless_since_ns.reset();
  const std::int64_t window = (cfg_.continuation_timeout + cfg_.continuation_margin).count() * ms_ns;
  if (end_ns - since >= window) faults_.push_back({name_of(checker::Fault::worker_cut_off), w.id, since, end_ns});
}

void World::worker_lost_connection(Worker& w) {
  w.conn.reset();
  w.welcomed = false;
  w.table->detached(w.clock->mono());
  w.delivery.detached();
  worker_effects(w);
  w.reconnect_at_ns = now_ns() + uniform(50, 400) * ms_ns;
}

protocol::Hello World::hello(const Worker& w) const {
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

bool World::may_leave(const Worker& w, int from) const {
  return std::any_of(workers_.begin(), workers_.end(),
                     [&](const Worker& x) { return x.index != w.index && bound_to(x) == from; });
}

bool World::idle(const Worker& w) const {
  if (!w.table->running().empty() || !w.table->assigned().empty() || !w.delivery.delivered()) return false;
  return std::none_of(trees_.begin(), trees_.end(), [&](const Tree& t) {
    return t.worker == w.id && (!t.main.dead || (t.child && !t.child->dead) || !t.reported);
  });
}

void World::move_if_drained(Worker& w) {
  if (!w.moving_to || w.crashed) return;
  // DELIBERATELY BROKEN in weakened chaos builds only (base/weaken.h): the
  // worker moves at once, with attempts of its old partition in flight.
  if (!idle(w) && !weakened("move_busy_worker")) return;
  note(w.id + " moves from partition " + std::to_string(w.partition) + " to " + std::to_string(*w.moving_to));
  w.partition = *w.moving_to;
  w.moving_to.reset();
  ++moves_;
  if (w.conn) close_worker_side(*w.conn);
}

void World::step_worker(Worker& w) {
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

void World::worker_receives(Worker& w, std::uint64_t conn, const protocol::Message& m) {
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

void World::delivery_effects(Worker& w) {
  for (auto effects = w.delivery.take_effects(); !effects.empty(); effects = w.delivery.take_effects())
    for (auto& effect : effects) {
      if (auto* write = std::get_if<wc::WriteFinishes>(&effect)) {
        w.delivery.written(write->group, true, w.clock->mono());
      } else if (auto* s = std::get_if<wc::SendFinish>(&effect)) {
        if (w.conn) send(*w.conn, true, s->finish);
      }
    }
}

void World::worker_effects(Worker& w) {
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

void World::spawn(Worker& w, const protocol::Assign& a) {
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

void World::kill_tree(Tree& t, wc::KillCause cause) {
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

void World::step_trees() {
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

Worker& World::worker_of(const Tree& t) {
  for (auto& w : workers_)
    if (w.id == t.worker) return w;
  BATON_ASSERT(false);
  return workers_.front();
}

}  // namespace baton::sim::detail
