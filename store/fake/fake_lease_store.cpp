#include "baton/store_fake/fake_lease_store.h"

#include "baton/base/assert.h"

namespace baton::store::fake {

LeaseView FakeLeaseDb::view() const {
  LeaseView v;
  v.epoch = epoch_;
  v.leader_id = leader_id_;
  v.leader_incarnation = incarnation_;
  v.released = released_;
  v.remaining = std::chrono::floor<Millis>(expires_at_ - clock_.mono());
  v.handover_to = handover_to_;
  v.handover_left = handover_to_.empty() ? Millis{0} : std::chrono::floor<Millis>(handover_until_ - clock_.mono());
  return v;
}

CampaignResult FakeLeaseDb::campaign(const NodeIdentity& me, Millis lease) {
  LeaseView seen = view();
  if (!seen.expired() || seen.reserved_for_other(me)) return {false, seen};
  handover_to_.clear();
  const Epoch before = epoch_;
  epoch_ = Epoch{epoch_.value + 1};
  BATON_ASSERT(epoch_ > before);
  leader_id_ = me.node_id;
  incarnation_ = me.incarnation;
  released_ = false;
  expires_at_ = clock_.mono() + lease;
  history_.push_back({epoch_, me.node_id, me.incarnation, clock_.mono()});
  return {true, view()};
}

WriteOutcome FakeLeaseDb::renew(Epoch epoch, const NodeIdentity& me, Millis lease) {
  if (epoch != epoch_ || released_ || leader_id_ != me.node_id || incarnation_ != me.incarnation ||
      expires_at_ <= clock_.mono())
    return WriteOutcome::fenced;
  expires_at_ = clock_.mono() + lease;
  return WriteOutcome::applied;
}

void FakeLeaseDb::lose_writes_after(Epoch e) {
  epoch_ = e;
  released_ = true;
  expires_at_ = clock_.mono();
  std::erase_if(history_, [&](const EpochRecord& r) { return r.epoch > e; });
}

WriteOutcome FakeLeaseDb::release(Epoch epoch, const NodeIdentity& me) {
  if (epoch != epoch_ || released_ || leader_id_ != me.node_id || incarnation_ != me.incarnation)
    return WriteOutcome::fenced;
  released_ = true;
  expires_at_ = clock_.mono();
  return WriteOutcome::applied;
}

WriteOutcome FakeLeaseDb::hand_over(Epoch epoch, const NodeIdentity& me, const std::string& to, Millis reserved) {
  const WriteOutcome o = release(epoch, me);
  if (o != WriteOutcome::applied) return o;
  handover_to_ = to;
  handover_until_ = clock_.mono() + reserved;
  return o;
}

template <class T, class F>
Result<T> FakeLeaseStore::call(F&& f, bool is_write) {
  ++calls;
  if (during_call) during_call();
  if (unavailable) return make_error(Errc::db_unavailable, "fake: partitioned from the database");
  T out = f();
  if (is_write && lose_next_reply) {
    lose_next_reply = false;
    return make_error(Errc::outcome_unknown, "fake: reply lost after commit");
  }
  return out;
}

Result<LeaseView> FakeLeaseStore::observe() {
  return call<LeaseView>([&] { return db_.view(); }, false);
}
Result<CampaignResult> FakeLeaseStore::campaign(const NodeIdentity& me, Millis lease) {
  return call<CampaignResult>([&] { return db_.campaign(me, lease); }, true);
}
Result<WriteOutcome> FakeLeaseStore::renew(Epoch epoch, const NodeIdentity& me, Millis lease) {
  return call<WriteOutcome>([&] { return db_.renew(epoch, me, lease); }, true);
}
Result<WriteOutcome> FakeLeaseStore::release(Epoch epoch, const NodeIdentity& me) {
  return call<WriteOutcome>([&] { return db_.release(epoch, me); }, true);
}
Result<WriteOutcome> FakeLeaseStore::hand_over(Epoch epoch, const NodeIdentity& me, const std::string& to,
                                               Millis reserved, const std::string& /*actor: no audit log here*/) {
  return call<WriteOutcome>([&] { return db_.hand_over(epoch, me, to, reserved); }, true);
}
Result<bool> FakeLeaseStore::wait_for_change(Millis) {
  // Simulation time is advanced by the test's loop, not by waits.
  return call<bool>([] { return false; }, false);
}

}  // namespace baton::store::fake
