#pragma once
// Reconnect delay of a worker: capped exponential backoff with "equal
// jitter" in [d/2, d], so a fleet that lost its leader at the same moment
// does not reconnect in lock-step. Pure: the random draw is an argument.
#include <algorithm>
#include <cstdint>

#include "baton/base/clock.h"

namespace baton::worker {

/// `failures` >= 1 counts consecutive failed attempts; `random` is any
/// uniformly drawn 64-bit value.
inline Millis reconnect_delay(int failures, Millis base, Millis max, std::uint64_t random) {
  const int exponent = std::clamp(failures - 1, 0, 16);
  const Millis raw = base * (std::int64_t{1} << exponent);
  const Millis capped = std::min(raw, max);
  const std::int64_t half = capped.count() / 2;
  const std::int64_t span = capped.count() - half + 1;
  return Millis{half + static_cast<std::int64_t>(random % static_cast<std::uint64_t>(span))};
}

}  // namespace baton::worker
