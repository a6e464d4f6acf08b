#include "baton/worker_core/finish_delivery.h"

#include <utility>

#include "baton/base/assert.h"
#include "baton/base/weaken.h"

namespace baton::worker_core {

const char* to_string(FinishState s) {
  switch (s) {
    case FinishState::writing: return "writing";
    case FinishState::durable: return "durable";
    case FinishState::undurable: return "undurable";
  }
  return "?";
}

void FinishDelivery::send(Held& h) {
  if (!attached_) return;
  h.sent = true;
  effects_.push_back(SendFinish{h.finish});
}

void FinishDelivery::loaded(const std::vector<protocol::Finish>& durable, MonoTime now) {
  for (const auto& f : durable) finishes_[f.ref] = Held{f, FinishState::durable, now, false};
  check_invariants();
}

void FinishDelivery::ended(protocol::Finish finish) {
  // An attempt ends once; a second report of it (none is made) changes
  // nothing already decided about the first.
  const auto [it, fresh] = finishes_.try_emplace(finish.ref, Held{finish, FinishState::writing, {}, false});
  if (fresh) effects_.push_back(WriteFinishes{{it->second.finish}});
  check_invariants();
}

void FinishDelivery::written(const std::vector<protocol::Finish>& group, bool durable, MonoTime now) {
  for (const auto& f : group) {
    auto it = finishes_.find(f.ref);
    if (it == finishes_.end()) continue;  // acknowledged meanwhile
    Held& h = it->second;
    if (durable) {
      h.state = FinishState::durable;
      h.durable_since = now;
    } else if (h.state != FinishState::durable) {
      // Not durable: still listed as finished (no leader declares it lost),
      // sent anyway, written again every outbox_retry_after. A retry that
      // fails after an earlier write succeeded leaves it durable.
      h.state = FinishState::undurable;
    }
    send(h);
  }
  check_invariants();
}

void FinishDelivery::acked(const protocol::AttemptRef& ref) {
  // Forgotten in the outbox even if not held here: a previous incarnation's
  // record, or a write that lands after the ack, must not be replayed forever.
  finishes_.erase(ref);
  effects_.push_back(ForgetFinish{ref});
  check_invariants();
}

void FinishDelivery::attached() {
  attached_ = true;
  for (auto& [ref, h] : finishes_)
    if (h.state == FinishState::durable) send(h);
  check_invariants();
}

void FinishDelivery::detached() {
  attached_ = false;
  // DELIBERATELY BROKEN in weakened chaos builds only (base/weaken.h): the
  // finishes not yet acknowledged are held in memory only until the next
  // connection, as if the outbox forgot them; the new leader never learns
  // that those attempts ended.
  if (weakened("forget_unacked_finishes")) finishes_.clear();
  check_invariants();
}

void FinishDelivery::tick(MonoTime now) {
  bool any_undurable = false;
  for (const auto& [ref, h] : finishes_) any_undurable |= h.state == FinishState::undurable;
  if (any_undurable && now - last_retry_ >= outbox_retry_after) {
    last_retry_ = now;
    WriteFinishes again;
    for (const auto& [ref, h] : finishes_)
      if (h.state == FinishState::undurable) again.group.push_back(h.finish);
    effects_.push_back(std::move(again));
  }
  if (attached_ && now - last_resend_ >= finish_resend_after) {
    last_resend_ = now;
    for (auto& [ref, h] : finishes_)
      if ((h.state == FinishState::durable && now - h.durable_since >= finish_resend_after) ||
          h.state == FinishState::undurable)
        send(h);
  }
  check_invariants();
}

std::vector<protocol::AttemptRef> FinishDelivery::unacknowledged() const {
  std::vector<protocol::AttemptRef> out;
  out.reserve(finishes_.size());
  for (const auto& [ref, h] : finishes_) out.push_back(ref);
  return out;
}

std::vector<protocol::Finish> FinishDelivery::durable() const {
  std::vector<protocol::Finish> out;
  for (const auto& [ref, h] : finishes_)
    if (h.state == FinishState::durable) out.push_back(h.finish);
  return out;
}

std::optional<FinishState> FinishDelivery::state(const protocol::AttemptRef& ref) const {
  const auto it = finishes_.find(ref);
  if (it == finishes_.end()) return std::nullopt;
  return it->second.state;
}

std::vector<DeliveryEffect> FinishDelivery::take_effects() { return std::exchange(effects_, {}); }

void FinishDelivery::check_invariants() const {
  for (const auto& [ref, h] : finishes_) {
    BATON_ASSERT(h.finish.ref == ref);
    // Durable before sent: nothing is sent while its first write is out.
    BATON_ASSERT(h.state != FinishState::writing || !h.sent);
  }
}

}  // namespace baton::worker_core
