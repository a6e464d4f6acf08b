#include "baton/worker_core/attempt_table.h"

#include <algorithm>
#include <limits>

#include "baton/base/assert.h"
#include "baton/base/weaken.h"

namespace baton::worker_core {

const char* to_string(AttemptState s) {
  switch (s) {
    case AttemptState::assigned: return "assigned";
    case AttemptState::start_requested: return "start_requested";
    case AttemptState::running: return "running";
    case AttemptState::stopping: return "stopping";
  }
  return "?";
}

namespace {
bool alive(AttemptState s) { return s == AttemptState::running || s == AttemptState::stopping; }
}  // namespace

bool AttemptTable::other_alive(const protocol::AttemptRef& key, std::int64_t run) const {
  // A run's attempts are neighbours in the table (ordered by run first).
  const protocol::AttemptRef first{.run_id = run, .attempt = std::numeric_limits<int>::min(), .lease_token = {}};
  for (auto it = attempts_.lower_bound(first); it != attempts_.end() && it->first.run_id == run; ++it)
    if (alive(it->second.state) && it->first != key) return true;
  return false;
}

Millis AttemptTable::continuation_limit(const Attempt& a) const {
  // The timeout the assigning leader sent with the attempt: the one it
  // stored with the run, so every later leader waits for this very value.
  return Millis{a.assign.continuation_timeout_ms > 0 ? a.assign.continuation_timeout_ms : continuation_timeout_ms_};
}

void AttemptTable::request_starts(MonoTime now) {
  if (!attached_) return;  // asked at the next welcome
  if (draining_) return drop_unstarted();
  // One pass over the table (it holds capacity + prefetch attempts, and
  // this runs at every finish): the slots in use, the runs with a live
  // attempt, and the attempts waiting for a slot. Into buffers kept between
  // calls: a std::set built here cost one allocation per live run at every
  // finish (the worker's allocator was a quarter of its CPU in the
  // throughput phase, docs/performance.md).
  int free = capacity_;
  live_runs_.clear();
  waiting_.clear();
  for (auto& [key, a] : attempts_) {
    if (a.state != AttemptState::assigned) --free;
    if (alive(a.state)) live_runs_.push_back(a.assign.ref.run_id);
  }
  if (free <= 0) return;
  std::sort(live_runs_.begin(), live_runs_.end());
  // Oldest first: a prefetched run waits its turn, not the map's key order.
  for (auto& [key, a] : attempts_)
    if (a.state == AttemptState::assigned &&
        !std::binary_search(live_runs_.begin(), live_runs_.end(), a.assign.ref.run_id))
      waiting_.push_back({a.arrival, &a});
  std::sort(waiting_.begin(), waiting_.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [arrival, a] : waiting_) {
    if (free-- <= 0) break;
    a->state = AttemptState::start_requested;
    a->start_requested_at = now;
    effects_.push_back(Send{protocol::Start{a->assign.ref}});
  }
  waiting_.clear();  // no pointer into the table outlives the call
}

void AttemptTable::welcome(const protocol::Welcome& w, MonoTime now) {
  attached_ = true;
  continuation_timeout_ms_ = w.continuation_timeout_ms;
  // Only an adoption (the leader wrote the run at its epoch) restarts an
  // attempt's continuation clock; a welcome alone proves nothing about it.
  for (const auto& ref : w.adopted)
    if (auto it = attempts_.find(ref); it != attempts_.end()) it->second.detached_since.reset();
  for (auto& [k, a] : attempts_)
    if (a.state == AttemptState::start_requested) a.state = AttemptState::assigned;
  request_starts(now);
  check_invariants();
}

void AttemptTable::detached(MonoTime now) {
  if (attached_)
    for (auto& [k, a] : attempts_)
      if (alive(a.state) && !a.detached_since) a.detached_since = now;
  attached_ = false;
  check_invariants();
}

void AttemptTable::assign(const protocol::Assign& a, MonoTime now) {
  const protocol::AttemptRef& key = a.ref;
  if (attempts_.count(key)) return;  // a replayed assign
  // Sent before the leader read our drain: dropped unless it carries the
  // start (the run is RUNNING here: honoured, like a grant asked for).
  if (draining_ && !a.start_granted) return;
  Attempt& entry = attempts_[key];
  entry.assign = a;
  entry.arrival = arrivals_++;
  if (a.start_granted) {
    // The leader wrote the start with the assignment, committed before this
    // frame left: the grant itself. Honoured as a start_granted is, beyond
    // the free slots too (the leader counted one here); while another
    // attempt of the run is alive it waits, and its start is asked for once
    // that one ended (the leader grants a start already written again).
    if (!other_alive(key, a.ref.run_id)) {
      entry.state = AttemptState::running;
      effects_.push_back(Spawn{a});
      check_invariants();
      return;
    }
    if (draining_) {
      attempts_.erase(key);  // no start is asked for while draining: the leader finds it unlisted
      check_invariants();
      return;
    }
  }
  // DELIBERATELY BROKEN in weakened chaos builds only (base/weaken.h): the
  // old worker that ran what it was assigned without asking for the start.
  if (weakened("no_start_gating") && !other_alive(key, a.ref.run_id)) {
    entry.state = AttemptState::running;
    effects_.push_back(Spawn{a});
    check_invariants();
    return;
  }
  request_starts(now);
  check_invariants();
}

void AttemptTable::start_granted(const protocol::AttemptRef& ref) {
  auto it = attempts_.find(ref);
  if (it == attempts_.end() || alive(it->second.state)) return;  // unknown, or a repeated grant
  if (other_alive(it->first, ref.run_id)) {
    // Never two live attempts of one run here: ask again once the other ended.
    it->second.state = AttemptState::assigned;
    check_invariants();
    return;
  }
  it->second.state = AttemptState::running;
  effects_.push_back(Spawn{it->second.assign});
  check_invariants();
}

void AttemptTable::start_denied(const protocol::AttemptRef& ref, MonoTime now) {
  auto it = attempts_.find(ref);
  if (it == attempts_.end() || alive(it->second.state)) return;
  attempts_.erase(it);
  request_starts(now);  // its slot is free
  check_invariants();
}

void AttemptTable::cancel(const protocol::Cancel& c, MonoTime now) {
  auto it = attempts_.find(c.ref);
  if (it == attempts_.end()) return;
  if (!alive(it->second.state)) {
    attempts_.erase(it);  // never started: nothing to kill
    request_starts(now);  // a slot it asked for is free
  } else {
    it->second.state = AttemptState::stopping;
    effects_.push_back(Kill{c.ref, c.reason, KillCause::cancel});
  }
  check_invariants();
}

void AttemptTable::finished(const protocol::AttemptRef& ref, MonoTime now) {
  auto it = attempts_.find(ref);
  if (it == attempts_.end()) return;
  BATON_ASSERT(alive(it->second.state));
  attempts_.erase(it);
  request_starts(now);  // an attempt of the same run may have been waiting
  check_invariants();
}

void AttemptTable::tick(MonoTime now) {
  for (auto& [k, a] : attempts_) {
    if (a.state != AttemptState::running) continue;
    if (!a.detached_since || now - *a.detached_since <= continuation_limit(a)) {
      effects_.push_back(Renew{a.assign.ref});  // this attempt may go on
      continue;
    }
    // Cut off from every leader for its continuation timeout: the leader
    // retries after its own deadline + margin, so this one must end first.
    a.state = AttemptState::stopping;
    effects_.push_back(
        Kill{a.assign.ref, "continuation deadline passed while detached from the leader", KillCause::continuation});
  }
  if (attached_)
    for (auto& [k, a] : attempts_)
      if (a.state == AttemptState::start_requested && now - a.start_requested_at >= start_resend_after) {
        a.start_requested_at = now;
        effects_.push_back(Send{protocol::Start{a.assign.ref}});
      }
  check_invariants();
}

void AttemptTable::stop_all(const std::string& reason) {
  for (auto& [k, a] : attempts_)
    if (a.state == AttemptState::running) {
      a.state = AttemptState::stopping;
      effects_.push_back(Kill{a.assign.ref, reason, KillCause::stopping});
    }
  check_invariants();
}

void AttemptTable::drain() {
  draining_ = true;
  drop_unstarted();
  check_invariants();
}

void AttemptTable::drop_unstarted() {
  std::erase_if(attempts_, [](const auto& entry) { return entry.second.state == AttemptState::assigned; });
}

std::vector<protocol::AttemptRef> AttemptTable::running() const {
  std::vector<protocol::AttemptRef> out;
  for (const auto& [k, a] : attempts_)
    if (alive(a.state)) out.push_back(a.assign.ref);
  return out;
}

std::vector<protocol::AttemptRef> AttemptTable::assigned() const {
  std::vector<protocol::AttemptRef> out;
  for (const auto& [k, a] : attempts_)
    if (!alive(a.state)) out.push_back(a.assign.ref);
  return out;
}

std::optional<AttemptState> AttemptTable::state(const protocol::AttemptRef& ref) const {
  auto it = attempts_.find(ref);
  if (it == attempts_.end()) return std::nullopt;
  return it->second.state;
}

std::vector<Effect> AttemptTable::take_effects() {
  std::vector<Effect> out;
  out.swap(effects_);
  return out;
}

void AttemptTable::check_invariants() const {
  // At every input while the table is small (every test and simulated
  // worker); a table of hundreds (capacity plus prefetch) at every 64th, so
  // the check is not most of an input's cost.
  if (attempts_.size() > invariant_check_every_input_up_to && ++checks_skipped_ % 64 != 0) return;
  // Without allocating (it was 14% of a worker's CPU in the throughput
  // phase, a map and a key string per attempt at every input): a run's
  // attempts are one block of the table, ordered by run first.
  int asked = 0;
  std::int64_t block_run = -1;
  int block_live = 0;
  for (const auto& [k, a] : attempts_) {
    asked += a.state == AttemptState::start_requested;
    BATON_ASSERT(k == a.assign.ref);
    if (a.assign.ref.run_id != block_run) {
      block_run = a.assign.ref.run_id;
      block_live = 0;
    }
    if (alive(a.state)) BATON_ASSERT(++block_live == 1);  // one live attempt per run
    if (a.detached_since) BATON_ASSERT(alive(a.state));   // only live attempts count down
  }
  // Starts are asked for only into free slots (a grant is honoured even
  // beyond them: the leader gives one only to a start that was asked for).
  BATON_ASSERT(asked <= capacity_);
}

}  // namespace baton::worker_core
