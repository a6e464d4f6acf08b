#include "baton/consensus/elector.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "baton/base/assert.h"

namespace baton::consensus {

Elector::Elector(store::LeaseStore& store, const Clock& clock, NodeIdentity me, ElectionConfig cfg,
                 RoleListener on_change, Sleep sleep)
    : store_(store),
      clock_(clock),
      me_(std::move(me)),
      cfg_(cfg),
      on_change_(std::move(on_change)),
      sleep_(std::move(sleep)) {
  BATON_ASSERT(validate(cfg_).empty());
}

void Elector::apply(const Transition& t) {
  if (t.next.regressed_to && !state_.regressed_to)
    spdlog::critical(
        "lease_history_regressed node={} highest_epoch_seen={} database_epoch={}: the coordinator database lost "
        "committed writes (an asynchronous failover or a restore); this node will not lead again until it is "
        "restarted (docs/operations.md, \"PostgreSQL high availability\")",
        me_.node_id, t.next.highest_epoch_seen.value, t.next.regressed_to->value);
  state_ = t.next;
  check_invariants(state_);
  if (t.change && on_change_) on_change_(*t.change);
}

void Elector::report_error(const char* what, const Error& e) {
  // Log a failing database once per kind of failure, not once per tick.
  if (!had_error_ || last_error_code_ != e.code) {
    spdlog::warn("election_db_error op={} node={} error={}", what, me_.node_id, e.message);
  }
  had_error_ = true;
  last_error_code_ = e.code;
}

void Elector::enforce_deadline() {
  std::lock_guard lock(mutex_);
  apply(consensus::enforce_deadline(state_, clock_.mono(), cfg_));
}

void Elector::step() {
  enforce_deadline();
  if (handover_in_flight_.load()) return sleep_(Millis{5});
  ElectorState s;
  Action action;
  {
    std::lock_guard lock(mutex_);
    s = state_;
    action = next_action(s, clock_.mono(), cfg_);
  }
  const MonoTime sent_at = clock_.mono();
  auto same_generation = [&] { return state_.generation == s.generation; };

  switch (action.kind) {
    case ActionKind::release: {
      auto r = store_.release(*s.must_release, me_);
      if (!r) return report_error("release", r.error()), sleep_(cfg_.poll_every);
      had_error_ = false;
      std::lock_guard lock(mutex_);
      // hand_over() or shutdown() may have released it meanwhile, through
      // their own connection.
      if (same_generation() && state_.must_release == s.must_release) apply(on_released(state_));
      spdlog::info("lease_released node={} epoch={} outcome={}", me_.node_id, s.must_release->value,
                   store::to_string(*r));
      return;
    }
    case ActionKind::renew: {
      auto r = store_.renew(s.epoch, me_, cfg_.lease);
      if (!r) return report_error("renew", r.error());  // the deadline decides, not one failure
      had_error_ = false;
      std::lock_guard lock(mutex_);
      // The watchdog may have stepped us down while the renewal was in flight;
      // a late confirmation must not revive leadership.
      if (same_generation()) apply(on_renew(state_, *r, sent_at));
      return;
    }
    case ActionKind::wait: {
      auto r = store_.wait_for_change(action.wait);
      if (!r) report_error("wait", r.error()), sleep_(action.wait);
      return;
    }
    case ActionKind::observe: break;
  }

  auto seen = store_.observe();
  if (!seen) return report_error("observe", seen.error()), sleep_(cfg_.poll_every);
  had_error_ = false;
  {
    std::lock_guard lock(mutex_);
    apply(on_observed(state_, *seen));
    last_seen_ = *seen;
    last_seen_sent_at_ = sent_at;
  }
  if (seen->held_by(me_)) {
    // Our own incarnation holds an unexpired lease but we are a follower:
    // only possible after a local step-down whose release has not landed.
    std::lock_guard lock(mutex_);
    if (!state_.must_release && state_.role == Role::follower) state_.must_release = seen->epoch;
    return;
  }
  std::chrono::nanoseconds paused{0};
  {
    std::lock_guard lock(mutex_);
    paused = campaigns_paused_until_ - clock_.mono();
  }
  // Holding back after a handover of its own, unless a later handover
  // names this node.
  if (seen->handover_to == me_.node_id && seen->handover_left.count() > 0) paused = {};
  if (!should_campaign(state_, *seen) || stopping_.load() || !campaigns_allowed_.load() ||
      seen->reserved_for_other(me_) || paused.count() > 0) {
    Millis wait = follower_wait(*seen, cfg_);
    if (paused.count() > 0) wait = std::clamp(std::chrono::ceil<Millis>(paused), Millis{1}, cfg_.poll_every);
    auto r = store_.wait_for_change(wait);
    if (!r) report_error("wait", r.error()), sleep_(cfg_.poll_every);
    return;
  }
  const MonoTime campaign_sent = clock_.mono();
  auto won = store_.campaign(me_, cfg_.lease);
  if (!won) return report_error("campaign", won.error()), sleep_(cfg_.poll_every);
  std::lock_guard lock(mutex_);
  last_seen_ = won->lease;
  last_seen_sent_at_ = campaign_sent;
  if (same_generation()) apply(on_campaign(state_, *won, campaign_sent, me_));
}

void Elector::shutdown(store::LeaseStore& via) {
  stopping_.store(true);
  std::optional<Epoch> to_release;
  {
    std::lock_guard lock(mutex_);
    if (state_.role == Role::leader) apply(step_down(state_, "shutdown", /*release=*/true));
    to_release = state_.must_release;
  }
  if (!to_release) return;
  auto r = via.release(*to_release, me_);
  if (!r) {
    spdlog::warn("lease_release_failed node={} epoch={} error={}", me_.node_id, to_release->value, r.error().message);
    return;
  }
  std::lock_guard lock(mutex_);
  if (state_.must_release == to_release) state_.must_release.reset();
  spdlog::info("lease_released node={} epoch={} outcome={}", me_.node_id, to_release->value, store::to_string(*r));
}

Result<Epoch> Elector::hand_over(store::LeaseStore& via, const std::string& to, Millis reserved,
                                 const std::string& actor) {
  std::optional<Epoch> to_release;
  {
    std::lock_guard lock(mutex_);
    if (state_.role != Role::leader) return make_error(Errc::bad_input, "this node is not leading");
    handover_in_flight_.store(true);
    apply(step_down(state_, "handover", /*release=*/true));
    to_release = state_.must_release;
    campaigns_paused_until_ = clock_.mono() + reserved;
  }
  BATON_ASSERT(to_release.has_value());
  auto r = via.hand_over(*to_release, me_, to, reserved, actor);
  handover_in_flight_.store(false);
  if (!r) {
    spdlog::warn("lease_handover_failed node={} epoch={} error={}", me_.node_id, to_release->value, r.error().message);
    return r.error();
  }
  {
    std::lock_guard lock(mutex_);
    if (state_.must_release == to_release) state_.must_release.reset();
  }
  spdlog::info("lease_handed_over node={} epoch={} to={} reserved_ms={} outcome={}", me_.node_id, to_release->value,
               to.empty() ? "(any)" : to, reserved.count(), store::to_string(*r));
  if (*r != store::WriteOutcome::applied)
    return make_error(Errc::bad_input, "the lease of epoch " + std::to_string(to_release->value) +
                                           " was no longer this node's: " + std::string(store::to_string(*r)));
  return *to_release;
}

bool Elector::is_leader() const {
  std::lock_guard lock(mutex_);
  return state_.role == Role::leader;
}

Epoch Elector::leader_epoch() const {
  std::lock_guard lock(mutex_);
  return state_.role == Role::leader ? state_.epoch : Epoch{0};
}

Elector::Sighting Elector::sighting() const {
  std::lock_guard lock(mutex_);
  return Sighting{last_seen_, last_seen_sent_at_};
}

std::optional<store::LeaseView> Elector::last_seen_lease() const {
  std::lock_guard lock(mutex_);
  return last_seen_;
}

ElectorState Elector::snapshot() const {
  std::lock_guard lock(mutex_);
  return state_;
}

}  // namespace baton::consensus
