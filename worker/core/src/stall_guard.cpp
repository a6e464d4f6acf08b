#include "baton/worker_core/stall_guard.h"

#include <algorithm>

namespace baton::worker_core {

Millis StallGuard::limit_for(Millis heartbeat_interval, Millis heartbeat_timeout) {
  return std::max<Millis>((heartbeat_timeout - heartbeat_interval) / 2, Millis{250});
}

bool StallGuard::stalled(MonoTime now) {
  const bool was = started_ && now - last_ > limit_;
  started_ = true;
  last_ = std::max(last_, now);
  return was;
}

}  // namespace baton::worker_core
