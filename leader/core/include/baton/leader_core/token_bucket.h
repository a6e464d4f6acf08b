#pragma once
// A token bucket on the leader's monotonic clock: at most `burst` at once and
// `per_second` on average. Pure (the caller passes the time). The leader
// uses one to pace reassignments of ORPHANED runs, so a new leader that
// inherits hundreds of them from a lost worker or a failover does not hand
// them all out in one pass (docs/scheduling.md, "Load shaping").
#include <algorithm>
#include <chrono>
#include <optional>

#include "baton/base/clock.h"

namespace baton::leader_core {

class TokenBucket {
 public:
  /// per_second <= 0: no limit.
  TokenBucket(double per_second, double burst) : rate_(per_second), burst_(burst), tokens_(burst) {}

  /// How many of `wanted` may go now (each taken).
  int take(int wanted, MonoTime now) {
    if (rate_ <= 0) return wanted;
    if (last_) {
      const double seconds = std::chrono::duration<double>(now - *last_).count();
      tokens_ = std::min(burst_, tokens_ + std::max(0.0, seconds) * rate_);
    }
    last_ = now;
    const int granted = std::min(wanted, static_cast<int>(tokens_));
    tokens_ -= granted;
    return granted;
  }

 private:
  double rate_;
  double burst_;
  double tokens_;
  std::optional<MonoTime> last_;
};

}  // namespace baton::leader_core
