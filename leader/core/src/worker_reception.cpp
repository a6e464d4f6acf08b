#include "baton/leader_core/worker_reception.h"

#include <algorithm>

namespace baton::leader_core {

ReceptionLimits reception_limits(Millis poll_every, Millis continuation_timeout, Millis continuation_margin) {
  ReceptionLimits l;
  l.stale_after = std::max(2 * poll_every, Millis{1000});
  l.park_max = std::clamp((continuation_timeout + continuation_margin) / 3, Millis{100}, Millis{5000});
  return l;
}

bool stale(const LeaseSighting& s, const ReceptionLimits& limits) { return !s.lease || s.age > limits.stale_after; }

std::optional<store::LeaseView> known_leader(const LeaseSighting& s, const NodeIdentity& me,
                                             const ReceptionLimits& limits) {
  if (stale(s, limits)) return std::nullopt;
  store::LeaseView v = *s.lease;
  v.remaining -= s.age;  // counted from the read's send: never longer than the truth
  if (v.expired() || v.held_by(me) || v.leader_endpoint.empty()) return std::nullopt;
  return v;
}

namespace {
Reception redirect(std::string endpoint, Epoch epoch, const char* reason) {
  return Reception{Reception::Kind::redirect, std::move(endpoint), epoch, reason};
}
Epoch seen_epoch(const LeaseSighting& s) { return s.lease ? s.lease->epoch : Epoch{0}; }
}  // namespace

Reception receive_hello(const LeaseSighting& s, const NodeIdentity& me, std::string_view unreachable_leader,
                        bool stopping, const ReceptionLimits& limits) {
  const auto leader = known_leader(s, me, limits);
  if (leader && leader->leader_endpoint != unreachable_leader)
    return redirect(leader->leader_endpoint, leader->epoch, "not the leader");
  if (stopping) return redirect("", seen_epoch(s), "node stopping");
  // This node cannot learn who leads soon (its database reads fail or hang):
  // holding the worker would only delay its next coordinator.
  if (stale(s, limits)) return redirect("", seen_epoch(s), "lease not seen lately");
  // No leader known (an election is under way), or only the one the worker
  // could not reach: hold the connection and tell the worker as soon as one
  // is, instead of making it poll the coordinators with growing backoff.
  return Reception{Reception::Kind::park, "", leader ? leader->epoch : Epoch{0}, "no leader known"};
}

Reception release(const LeaseSighting& s, const NodeIdentity& me, Millis held, Epoch skip_epoch,
                  const ReceptionLimits& limits) {
  if (const auto leader = known_leader(s, me, limits);
      leader && (leader->epoch > skip_epoch || held > limits.unreachable_hold))
    return redirect(leader->leader_endpoint, leader->epoch, "not the leader");
  if (stale(s, limits)) return redirect("", seen_epoch(s), "lease not seen lately");
  if (held > limits.park_max) return redirect("", seen_epoch(s), "no leader elected yet");
  return Reception{Reception::Kind::park, "", skip_epoch, "no leader known"};
}

}  // namespace baton::leader_core
