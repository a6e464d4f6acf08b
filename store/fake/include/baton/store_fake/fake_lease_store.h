#pragma once
// An in-memory leader lease with the same predicates as PgLeaseStore, for
// deterministic tests and simulation. FakeLeaseDb is "the database" (one per
// simulated cluster, with its own clock); each node gets a FakeLeaseStore
// handle through which faults are injected for that node only.
#include <functional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/store/lease_store.h"

namespace baton::store::fake {

struct EpochRecord {
  Epoch epoch;
  std::string leader_id;
  std::string incarnation;
  MonoTime elected_at;  ///< by the database clock
};

class FakeLeaseDb {
 public:
  explicit FakeLeaseDb(const Clock& db_clock) : clock_(db_clock) {}

  LeaseView view() const;
  CampaignResult campaign(const NodeIdentity& me, Millis lease);
  WriteOutcome renew(Epoch epoch, const NodeIdentity& me, Millis lease);
  WriteOutcome release(Epoch epoch, const NodeIdentity& me);
  WriteOutcome hand_over(Epoch epoch, const NodeIdentity& me, const std::string& to, Millis reserved);

  /// The database loses every write after epoch `e` was granted, as an
  /// asynchronous failover to a standby that lagged does: the lease is back
  /// at `e` (expired), the later history gone.
  void lose_writes_after(Epoch e);

  Epoch epoch() const { return epoch_; }
  MonoTime expires_at() const { return expires_at_; }
  const std::vector<EpochRecord>& history() const { return history_; }

 private:
  const Clock& clock_;
  Epoch epoch_{0};
  std::string leader_id_;
  std::string incarnation_;
  bool released_ = true;
  MonoTime expires_at_{};
  std::string handover_to_;
  MonoTime handover_until_{};
  std::vector<EpochRecord> history_;
};

class FakeLeaseStore final : public LeaseStore {
 public:
  explicit FakeLeaseStore(FakeLeaseDb& db) : db_(db) {}

  Result<LeaseView> observe() override;
  Result<CampaignResult> campaign(const NodeIdentity& me, Millis lease) override;
  Result<WriteOutcome> renew(Epoch epoch, const NodeIdentity& me, Millis lease) override;
  Result<WriteOutcome> release(Epoch epoch, const NodeIdentity& me) override;
  Result<WriteOutcome> hand_over(Epoch epoch, const NodeIdentity& me, const std::string& to, Millis reserved,
                                 const std::string& actor) override;
  Result<bool> wait_for_change(Millis max) override;
  Result<void> record_node(const NodeIdentity&, const std::string&, Epoch) override { return {}; }

  /// While true every call fails with db_unavailable (a partition).
  bool unavailable = false;
  /// Runs inside every call before the database acts (a slow or hanging
  /// database: a test advances clocks and runs the watchdog from here).
  std::function<void()> during_call;
  /// When set, the next write is applied and then reported as outcome_unknown (the
  /// reply was lost after commit: the in-doubt case).
  bool lose_next_reply = false;
  int calls = 0;

 private:
  template <class T, class F>
  Result<T> call(F&& f, bool is_write);
  FakeLeaseDb& db_;
};

}  // namespace baton::store::fake
