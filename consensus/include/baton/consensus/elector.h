#pragma once
// The imperative shell around election.h: performs the actions the pure
// functions decide against a LeaseStore, and reports role changes.
//
// Threading: step() runs on one thread (the election thread) and may block in
// the database for as long as the database makes it. enforce_deadline() runs
// on a watchdog thread and steps the node down on time even while step() is
// blocked in a renewal that never returns: that is what makes "a leader whose
// database stops answering stops leading before its lease can expire" hold.
#include <atomic>
#include <functional>
#include <mutex>

#include "baton/consensus/election.h"
#include "baton/store/lease_store.h"

namespace baton::consensus {

class Elector {
 public:
  using RoleListener = std::function<void(const RoleChange&)>;
  using Sleep = std::function<void(Millis)>;

  /// `sleep` is used only when the database is unreachable (there is nothing
  /// to wait on); fakes make it advance a fake clock.
  Elector(store::LeaseStore& store, const Clock& clock, NodeIdentity me, ElectionConfig cfg, RoleListener on_change,
          Sleep sleep);

  /// One round: at most one database write plus one bounded wait.
  void step();
  /// Thread-safe; steps down if the lease has gone unconfirmed too long.
  void enforce_deadline();
  /// Graceful stop: step down and release the lease (with NOTIFY) through
  /// `via`, a store on its own connection, so shutdown need not wait for a
  /// step() in progress on the election thread.
  void shutdown(store::LeaseStore& via);

  /// Thread-safe. While false the elector still observes the lease and
  /// leads on if it leads, but never campaigns for it. Partitioned
  /// leadership's balance (docs/scaling.md): a node that leads its share of
  /// the partitions leaves the others to the nodes whose share they are,
  /// unless one stays without a leader. Leases keep the safety; this only
  /// spreads the load.
  void allow_campaigns(bool allowed) { campaigns_allowed_.store(allowed); }

  /// A planned handover (docs/operations.md, "Handing leadership over"):
  /// steps down and releases the lease through `via` with `to` named as
  /// the only node that may campaign for `reserved` (empty `to`: any other
  /// node). This node itself does not campaign for `reserved`, so that
  /// another takes over; if none does, it may lead again after that. The
  /// caller has stopped this node's control loop first. Returns the epoch
  /// handed over; an error when not leading, or when the release failed
  /// (then step() releases it as after any step-down). `actor`, who asked,
  /// is audited with the release (LeaseStore::hand_over).
  Result<Epoch> hand_over(store::LeaseStore& via, const std::string& to, Millis reserved, const std::string& actor);

  bool is_leader() const;
  Epoch leader_epoch() const;  ///< 0 when not leading
  ElectorState snapshot() const;
  /// The lease as last read or won (leader id and endpoint for redirects).
  /// Its `remaining` is as the database said at that read, not aged.
  std::optional<store::LeaseView> last_seen_lease() const;
  /// The same, with the time the read that returned it was sent (the clock
  /// given to the constructor), so a caller can age it and tell a node that
  /// reads the lease from one whose database calls fail or hang.
  struct Sighting {
    std::optional<store::LeaseView> lease;
    MonoTime read_sent_at{};
  };
  Sighting sighting() const;
  const NodeIdentity& identity() const { return me_; }

 private:
  void apply(const Transition& t);  // requires mutex_
  void report_error(const char* what, const Error& e);

  store::LeaseStore& store_;
  const Clock& clock_;
  NodeIdentity me_;
  ElectionConfig cfg_;
  RoleListener on_change_;
  Sleep sleep_;
  mutable std::mutex mutex_;
  ElectorState state_;
  std::optional<store::LeaseView> last_seen_;
  MonoTime last_seen_sent_at_{};
  Errc last_error_code_{};
  bool had_error_ = false;
  std::atomic<bool> stopping_{false};  // set by shutdown(): never campaign again
  std::atomic<bool> campaigns_allowed_{true};
  MonoTime campaigns_paused_until_{};  // requires mutex_: hand_over() holds this node back
  // hand_over() is releasing through its own connection: step() waits, so
  // that the election thread does not release the epoch first (without the
  // reservation) and make the handover's own release report Fenced.
  std::atomic<bool> handover_in_flight_{false};
};

}  // namespace baton::consensus
