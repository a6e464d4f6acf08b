#include "baton/consensus/election.h"

#include <algorithm>

#include "baton/base/assert.h"
#include "baton/base/duration.h"

namespace baton::consensus {

std::vector<std::string> validate(const ElectionConfig& c) {
  std::vector<std::string> errors;
  if (c.lease.count() < 100) errors.push_back("election.lease: must be at least 100ms");
  if (c.renew_every.count() <= 0) errors.push_back("election.renew_every: must be positive");
  if (c.safety_margin.count() <= 0) errors.push_back("election.safety_margin: must be positive");
  if (c.safety_margin >= c.lease) errors.push_back("election.safety_margin: must be less than election.lease");
  if (c.renew_every >= c.lease - c.safety_margin)
    errors.push_back("election.renew_every: must be less than lease - safety_margin (" +
                     format_duration(c.lease - c.safety_margin) + "), or a leader steps down between renewals");
  if (c.poll_every.count() <= 0) errors.push_back("election.poll_every: must be positive");
  return errors;
}

const char* to_string(Role r) { return r == Role::leader ? "leader" : "follower"; }

std::chrono::nanoseconds leadership_left(const ElectorState& s, MonoTime now, const ElectionConfig& cfg) {
  BATON_ASSERT(s.role == Role::leader);
  return (s.confirmed_at + (cfg.lease - cfg.safety_margin)) - now;
}

Transition step_down(const ElectorState& s, const std::string& reason, bool release) {
  BATON_ASSERT(s.role == Role::leader);
  ElectorState n = s;
  n.role = Role::follower;
  n.generation++;
  if (release) n.must_release = s.epoch;
  check_invariants(n);
  return {n, RoleChange{Role::leader, Role::follower, s.epoch, reason}};
}

Transition enforce_deadline(const ElectorState& s, MonoTime now, const ElectionConfig& cfg) {
  if (s.role != Role::leader || leadership_left(s, now, cfg).count() > 0) return {s, std::nullopt};
  return step_down(s, "renew_unconfirmed", /*release=*/true);
}

Action next_action(const ElectorState& s, MonoTime now, const ElectionConfig& cfg) {
  if (s.must_release) return {ActionKind::release, Millis{0}};
  if (s.role == Role::follower) return {ActionKind::observe, Millis{0}};
  BATON_ASSERT(leadership_left(s, now, cfg).count() > 0);
  auto since = now - s.confirmed_at;
  if (since >= cfg.renew_every) return {ActionKind::renew, Millis{0}};
  auto left = std::chrono::ceil<Millis>(cfg.renew_every - since);
  return {ActionKind::wait, std::max(left, Millis{1})};
}

bool should_campaign(const ElectorState& s, const store::LeaseView& seen) { return !s.regressed_to && seen.expired(); }

namespace {
/// The database showed `epoch`: below what we had seen means it went back.
void note_epoch(ElectorState& n, Epoch epoch) {
  if (epoch < n.highest_epoch_seen && !n.regressed_to) n.regressed_to = epoch;
  n.highest_epoch_seen = std::max(n.highest_epoch_seen, epoch);
}
}  // namespace

Millis follower_wait(const store::LeaseView& seen, const ElectionConfig& cfg) {
  // Wake a little after the holder's lease would expire by the DB clock; a
  // release or election NOTIFY wakes us earlier.
  Millis until_expiry = std::max(seen.remaining, Millis{0}) + Millis{10};
  // A lease kept for a node by a planned handover: that node's election's
  // NOTIFY wakes us; otherwise look again when the reservation ends.
  if (seen.expired() && !seen.handover_to.empty())
    until_expiry = std::max(until_expiry, seen.handover_left + Millis{10});
  return std::clamp(until_expiry, Millis{1}, cfg.poll_every);
}

Transition on_observed(const ElectorState& s, const store::LeaseView& seen) {
  BATON_ASSERT(seen.epoch >= Epoch{0});
  ElectorState n = s;
  note_epoch(n, seen.epoch);
  check_invariants(n);
  return {n, std::nullopt};
}

Transition on_campaign(const ElectorState& s, const store::CampaignResult& r, MonoTime sent_at,
                       const NodeIdentity& me) {
  BATON_ASSERT(s.role == Role::follower);
  ElectorState n = s;
  if (!r.won) {
    note_epoch(n, r.lease.epoch);
    return {n, std::nullopt};
  }
  BATON_ASSERT(r.lease.held_by(me));
  // Exactly one winner per epoch: a win is a strictly newer epoch than any
  // we have seen -- unless the database went back and handed out a number
  // again. Then we do not lead it (another node may still act on it): the
  // lease is released and this process stays a follower.
  if (r.lease.epoch <= s.highest_epoch_seen) {
    if (!n.regressed_to) n.regressed_to = r.lease.epoch;
    n.must_release = r.lease.epoch;
    return {n, std::nullopt};
  }
  n.role = Role::leader;
  n.epoch = r.lease.epoch;
  n.highest_epoch_seen = r.lease.epoch;
  n.confirmed_at = sent_at;
  n.generation++;
  check_invariants(n);
  return {n, RoleChange{Role::follower, Role::leader, n.epoch, "elected"}};
}

Transition on_renew(const ElectorState& s, store::WriteOutcome o, MonoTime sent_at) {
  BATON_ASSERT(s.role == Role::leader);
  if (o == store::WriteOutcome::applied) {
    ElectorState n = s;
    n.confirmed_at = std::max(s.confirmed_at, sent_at);
    return {n, std::nullopt};
  }
  // The lease is no longer ours (expired or taken): nothing to release.
  return step_down(s, "lease_lost", /*release=*/false);
}

Transition on_released(const ElectorState& s) {
  BATON_ASSERT(s.must_release.has_value());
  ElectorState n = s;
  n.must_release.reset();
  return {n, std::nullopt};
}

void check_invariants(const ElectorState& s) {
  BATON_ASSERT(s.epoch <= s.highest_epoch_seen || s.highest_epoch_seen == Epoch{0});
  if (s.role == Role::leader) {
    BATON_ASSERT(!s.regressed_to.has_value());
    BATON_ASSERT(s.epoch > Epoch{0});
    BATON_ASSERT(s.epoch == s.highest_epoch_seen);
    BATON_ASSERT(!s.must_release.has_value());
  }
  if (s.must_release) BATON_ASSERT(s.role == Role::follower);
}

}  // namespace baton::consensus
