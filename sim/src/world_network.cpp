#include "world.h"

namespace baton::sim::detail {

void World::send(std::uint64_t conn, bool to_node, const protocol::Message& m) {
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

void World::reset(std::uint64_t conn) {
  // Both sides learn of it, each a little later.
  later(uniform(1, 30), [this, conn] { close_worker_side(conn); });
  later(uniform(1, 30), [this, conn] { close_node_side_by_peer(conn); });
}

std::int64_t World::after_data(const Conn& c, bool to_node) {
  const std::int64_t last = to_node ? c.last_to_node_ns : c.last_to_worker_ns;
  return std::max<std::int64_t>(uniform(1, 20), (last - now_ns()) / ms_ns + 1);
}

void World::later(std::int64_t in_ms, std::function<void()> f) {
  timers_.push({now_ns() + in_ms * ms_ns, ++seq_, std::move(f)});
}

bool World::reachable(const Conn& c) const {
  return !workers_[static_cast<std::size_t>(c.worker)].cut && !cut_pairs_.count({c.worker, c.node});
}

void World::deliver(const Frame& f) {
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

void World::node_receives(Node& n, std::uint64_t conn, const protocol::Message& m) {
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

void World::close_node_side(std::uint64_t conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end() || !it->second.node_open) return;
  it->second.node_open = false;
  // The worker sees the close after a moment (and after the frames sent
  // before it), unless it is cut off: then it finds out by its own silence
  // timeout.
  if (reachable(it->second)) later(after_data(it->second, false), [this, conn] { close_worker_side(conn); });
}

void World::close_node_side_by_peer(std::uint64_t conn) {
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

void World::close_worker_side(std::uint64_t conn) {
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

}  // namespace baton::sim::detail
