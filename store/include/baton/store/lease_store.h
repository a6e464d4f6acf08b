#pragma once
// Port for the leader lease (the single `leader_lease` row). The election
// logic in consensus/ talks only to this interface; store/pg implements it on
// PostgreSQL and store/fake in memory with the same predicates.
//
// Liveness is judged by the database clock only: `remaining` is
// lease_expires_at - now() computed inside PostgreSQL.
#include <string>

#include "baton/base/clock.h"
#include "baton/base/result.h"
#include "baton/store/lease_rows.h"
#include "baton/store/write_outcome.h"

namespace baton::store {

class LeaseStore {
 public:
  virtual ~LeaseStore() = default;

  virtual Result<LeaseView> observe() = 0;
  /// Bumps the epoch and takes the lease iff it is expired or released (by
  /// the database clock), under FOR UPDATE on the lease row so no fenced write
  /// of the old epoch can commit after this does.
  virtual Result<CampaignResult> campaign(const NodeIdentity& me, Millis lease) = 0;
  /// Extends our lease at the same epoch; Fenced if it is no longer ours or
  /// has already expired (then we must campaign for a new epoch).
  virtual Result<WriteOutcome> renew(Epoch epoch, const NodeIdentity& me, Millis lease) = 0;
  /// Gives the lease up and notifies followers so one takes over at once.
  virtual Result<WriteOutcome> release(Epoch epoch, const NodeIdentity& me) = 0;
  /// A planned handover: release `epoch` as release() does, and keep the
  /// lease for `to` alone for `reserved` (empty `to`: for no one in
  /// particular; the caller itself holds back). Fenced like release().
  /// `actor` (the token's name that asked) is audited as `leader.handover`
  /// in the transaction that releases: recorded if and only if it happened.
  virtual Result<WriteOutcome> hand_over(Epoch epoch, const NodeIdentity& me, const std::string& to, Millis reserved,
                                         const std::string& actor) = 0;
  /// Blocks up to `max` for a lease-change notification; true if one came.
  virtual Result<bool> wait_for_change(Millis max) = 0;
  /// Upserts this process in the node registry with its current role and
  /// the epoch it leads (zero while it follows: the registry keeps the
  /// last epoch it led in this incarnation).
  virtual Result<void> record_node(const NodeIdentity& me, const std::string& role, Epoch leading) = 0;
};

}  // namespace baton::store
