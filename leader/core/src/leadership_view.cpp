#include "baton/leader_core/leadership_view.h"

namespace baton::leader_core {

const char* to_string(LeadershipView::State s) {
  switch (s) {
    case LeadershipView::State::leading: return "leading";
    case LeadershipView::State::not_renewing: return "not_renewing";
    case LeadershipView::State::none: return "none";
  }
  return "none";
}

LeadershipView view_leadership(const LeaseSighting& s, const NodeIdentity& me, bool leading_here, Millis lease,
                               Millis renew_every, const ReceptionLimits& limits) {
  LeadershipView v;
  if (s.lease) {
    v.last_leader_id = s.lease->leader_id;
    v.last_epoch = s.lease->epoch;
  }
  if (leading_here) {
    v.state = LeadershipView::State::leading;
    v.leader_id = me.node_id;
    v.last_leader_id = me.node_id;
    return v;
  }
  if (stale(s, limits)) return v;  // this node cannot tell: it says none rather than guess
  const Millis left = s.lease->remaining - s.age;
  if (s.lease->released || left.count() <= 0) return v;
  const Millis since_renewal = lease - left;
  if (since_renewal > 2 * renew_every + Millis{100} || s.lease->held_by(me)) {
    // Held by this node while its elector does not lead: it is stepping
    // down and will renew no more.
    v.state = LeadershipView::State::not_renewing;
    v.lease_left = left;
    return v;
  }
  v.state = LeadershipView::State::leading;
  v.leader_id = s.lease->leader_id;
  return v;
}

}  // namespace baton::leader_core
