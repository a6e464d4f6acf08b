#include "world.h"

namespace baton::sim::detail {

void World::create_run() {
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

void World::post_event(int i) {
  const std::string key = "ping-" + std::to_string(i);
  const std::int64_t id = run_db_.post_event(event_kind, key);
  if (chance(0.3)) run_db_.post_event(event_kind, key);
  posted_keys_.push_back(key);
  note("event " + std::to_string(id) + " posted, key " + key);
}

bool World::quiet() const {
  for (const auto& [id, r] : run_db_.runs())
    if (!is_terminal(r.state)) return false;
  for (const auto& e : run_db_.events())
    if (!e.processed) return false;
  for (const auto& t : trees_)
    if (!t.main.dead || (t.child && !t.child->dead)) return false;
  return true;
}

void World::advance() {
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

}  // namespace baton::sim::detail
