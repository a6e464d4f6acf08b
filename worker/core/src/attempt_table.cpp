#include "baton/worker_core/attempt_table.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <set>
#include <string_view>

#include "baton/core/assert.h"
#include "baton/core/weaken.h"

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

namespace {
// "run:attempt:" of a key, in `buf` (no allocation).
std::string_view key_head(const protocol::AttemptRef& r, std::array<char, 48>& buf) {
  char* p = std::to_chars(buf.data(), buf.data() + buf.size(), r.run_id).ptr;
  *p++ = ':';
  p = std::to_chars(p, buf.data() + buf.size(), r.attempt).ptr;
  *p++ = ':';
  return {buf.data(), static_cast<std::size_t>(p - buf.data())};
}

bool key_matches(std::string_view key, const protocol::AttemptRef& r) {
  std::array<char, 48> buf;
  const std::string_view head = key_head(r, buf);
  return key.size() == head.size() + r.lease_token.size() && key.substr(0, head.size()) == head &&
         key.substr(head.size()) == r.lease_token;
}
}  // namespace

std::string AttemptTable::key_of(const protocol::AttemptRef& r) {
  std::array<char, 48> buf;
  const std::string_view head = key_head(r, buf);
  std::string key;
  key.reserve(head.size() + r.lease_token.size());
  key.append(head).append(r.lease_token);
  return key;
}

bool AttemptTable::other_alive(const std::string& key, std::int64_t run) const {
  for (const auto& [k, a] : attempts_)
    if (a.assign.ref.run_id == run && alive(a.state) && k != key) return true;
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
  // attempt, and the attempts waiting for a slot.
  int free = capacity_;
  std::set<std::int64_t> live_runs;
  std::vector<std::pair<std::uint64_t, Attempt*>> waiting;
  for (auto& [key, a] : attempts_) {
    if (a.state != AttemptState::assigned) --free;
    if (alive(a.state)) live_runs.insert(a.assign.ref.run_id);
  }
  if (free <= 0) return;
  // Oldest first: a prefetched run waits its turn, not the map's key order.
  for (auto& [key, a] : attempts_)
    if (a.state == AttemptState::assigned && !live_runs.count(a.assign.ref.run_id)) waiting.push_back({a.arrival, &a});
  std::sort(waiting.begin(), waiting.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [arrival, a] : waiting) {
    if (free-- <= 0) break;
    a->state = AttemptState::start_requested;
    a->start_requested_at = now;
    effects_.push_back(Send{protocol::Start{a->assign.ref}});
  }
}

void AttemptTable::welcome(const protocol::Welcome& w, MonoTime now) {
  attached_ = true;
  continuation_timeout_ms_ = w.continuation_timeout_ms;
  // Only an adoption (the leader wrote the run at its epoch) restarts an
  // attempt's continuation clock; a welcome alone proves nothing about it.
  for (const auto& ref : w.adopted)
    if (auto it = attempts_.find(key_of(ref)); it != attempts_.end()) it->second.detached_since.reset();
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
  const std::string key = key_of(a.ref);
  if (attempts_.count(key)) return;  // a replayed assign
  // Sent before the leader read our drain: dropped unless it carries the
  // start (the run is RUNNING here: honoured, like a grant asked for).
  if (draining_ && !a.start_granted) return;
  attempts_[key].assign = a;
  attempts_[key].arrival = arrivals_++;
  if (a.start_granted) {
    // The leader wrote the start with the assignment, committed before this
    // frame left: the grant itself. Honoured as a start_granted is, beyond
    // the free slots too (the leader counted one here); while another
    // attempt of the run is alive it waits, and its start is asked for once
    // that one ended (the leader grants a start already written again).
    if (!other_alive(key, a.ref.run_id)) {
      attempts_[key].state = AttemptState::running;
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
  // DELIBERATELY BROKEN in weakened chaos builds only (core/weaken.h): the
  // old worker that ran what it was assigned without asking for the start.
  if (weakened("no_start_gating") && !other_alive(key, a.ref.run_id)) {
    attempts_[key].state = AttemptState::running;
    effects_.push_back(Spawn{a});
    check_invariants();
    return;
  }
  request_starts(now);
  check_invariants();
}

void AttemptTable::start_granted(const protocol::AttemptRef& ref) {
  const std::string key = key_of(ref);
  auto it = attempts_.find(key);
  if (it == attempts_.end() || alive(it->second.state)) return;  // unknown, or a repeated grant
  if (other_alive(key, ref.run_id)) {
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
  auto it = attempts_.find(key_of(ref));
  if (it == attempts_.end() || alive(it->second.state)) return;
  attempts_.erase(it);
  request_starts(now);  // its slot is free
  check_invariants();
}

void AttemptTable::cancel(const protocol::Cancel& c, MonoTime now) {
  auto it = attempts_.find(key_of(c.ref));
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
  auto it = attempts_.find(key_of(ref));
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
  auto it = attempts_.find(key_of(ref));
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
  // attempts are one block of the table, every key of it starting "run:".
  int asked = 0;
  std::int64_t block_run = -1;
  int block_live = 0;
  for (const auto& [k, a] : attempts_) {
    asked += a.state == AttemptState::start_requested;
    BATON_ASSERT(key_matches(k, a.assign.ref));
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
