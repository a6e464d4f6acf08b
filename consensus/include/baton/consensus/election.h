#pragma once
// The leader-election decision logic as pure functions over (state, what the
// database said, the node's monotonic clock). No I/O, no clock reads: the
// Elector (elector.h) feeds observations in and carries actions out, so every
// interleaving here is testable with a fake clock.
//
// Safety argument in one line: a leader stops leading at
// confirmed_at + lease - safety_margin by its own clock, where confirmed_at is
// when it SENT the write that set lease_expires_at = db_now() + lease; the
// database executed that write later than it was sent, so the lease cannot
// expire (and nobody can be elected) before the leader has stopped, as long as
// clock rates differ by less than safety_margin / lease.
#include <optional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/ids.h"
#include "baton/store/lease_store.h"
#include "baton/store/write_outcome.h"

namespace baton::consensus {

// Defaults: a kill -9 of the leader is noticed within one lease (2 s), so
// the next leader assigns within about 2.5 s; the leader tolerates three
// consecutive lost renewals (renew every 400 ms, steps down 1.4 s after its
// last confirmed one) before it gives up, and the 30% safety margin covers
// clock-rate differences far beyond what NTP-disciplined clocks show.
struct ElectionConfig {
  Millis lease{2000};         ///< lease length written to the database
  Millis renew_every{400};    ///< leader renews this often
  Millis safety_margin{600};  ///< leader stops this long before its lease could expire
  Millis poll_every{500};     ///< follower re-reads the lease at least this often
};

/// One message per bad field, naming the config key.
std::vector<std::string> validate(const ElectionConfig& cfg);

enum class Role { follower, leader };
const char* to_string(Role r);

struct ElectorState {
  Role role = Role::follower;
  Epoch epoch{0};           ///< leader: the epoch led; follower: the last epoch led, if any
  MonoTime confirmed_at{};  ///< leader: send time of the last write that confirmed the lease
  Epoch highest_epoch_seen{0};
  /// Set when we stopped leading without the database knowing (renewal not
  /// confirmed in time): release this epoch before doing anything else, so a
  /// follower need not wait for expiry and we never resume this epoch.
  std::optional<Epoch> must_release;
  std::uint64_t generation = 0;  ///< bumped on every role change
  /// Set when the database's lease epoch went below one this node had seen:
  /// the database lost committed writes (an asynchronous failover, a
  /// restore from backup), so an epoch number this node knew may be granted
  /// again -- and two leaders with one epoch are not fenced from each other.
  /// Sticky: this process never leads again (docs/operations.md,
  /// "PostgreSQL high availability").
  std::optional<Epoch> regressed_to;
};

struct RoleChange {
  Role from;
  Role to;
  Epoch epoch;
  std::string reason;  ///< elected | renew_unconfirmed | lease_lost | shutdown
};

struct Transition {
  ElectorState next;
  std::optional<RoleChange> change;
};

enum class ActionKind {
  release,  ///< give up state.must_release
  renew,    ///< renew state.epoch
  observe,  ///< read the lease (follower)
  wait,     ///< leader: nothing due before `wait` elapses
};

struct Action {
  ActionKind kind;
  Millis wait{0};
};

/// Time left before a leader must stop leading; <= 0 means now.
std::chrono::nanoseconds leadership_left(const ElectorState& s, MonoTime now, const ElectionConfig& cfg);

/// Steps down if the lease has gone unconfirmed for lease - safety_margin.
Transition enforce_deadline(const ElectorState& s, MonoTime now, const ElectionConfig& cfg);

/// What the elector should do next (after enforce_deadline).
Action next_action(const ElectorState& s, MonoTime now, const ElectionConfig& cfg);

/// Follower, having observed the lease: campaign now? Never after the lease
/// history went backwards.
bool should_campaign(const ElectorState& s, const store::LeaseView& seen);
/// Follower, lease held by someone else: how long to wait for a notification
/// before looking again (never past the lease's expiry by the DB clock).
Millis follower_wait(const store::LeaseView& seen, const ElectionConfig& cfg);

Transition on_observed(const ElectorState& s, const store::LeaseView& seen);
Transition on_campaign(const ElectorState& s, const store::CampaignResult& r, MonoTime sent_at, const NodeIdentity& me);
Transition on_renew(const ElectorState& s, store::WriteOutcome o, MonoTime sent_at);
Transition on_released(const ElectorState& s);
/// Leader -> follower now; `release` marks the epoch to be released.
Transition step_down(const ElectorState& s, const std::string& reason, bool release);

/// Programmer-error checks on every state (BATON_ASSERT).
void check_invariants(const ElectorState& s);

}  // namespace baton::consensus
