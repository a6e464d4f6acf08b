#include "baton/leader_core/heartbeat_cadence.h"

#include <algorithm>
#include <cstdint>

namespace baton::leader_core {

HeartbeatCadence heartbeat_cadence(std::size_t attached, const RuntimeConfig& cfg) {
  const HeartbeatCadence configured{cfg.heartbeat_interval, cfg.heartbeat_timeout};
  if (cfg.max_heartbeats_per_second <= 0 || cfg.heartbeat_interval.count() <= 0) return configured;
  // The interval at which `attached` workers send max_heartbeats_per_second.
  const auto n = static_cast<std::int64_t>(attached);
  const std::int64_t wanted = (n * 1000 + cfg.max_heartbeats_per_second - 1) / cfg.max_heartbeats_per_second;
  const std::int64_t interval = cfg.heartbeat_interval.count();
  const std::int64_t timeout = cfg.heartbeat_timeout.count();
  if (wanted <= interval) return configured;
  // The timeout keeps its ratio to the interval, up to the margin.
  const std::int64_t cap = std::max(timeout, cfg.continuation_margin.count());
  std::int64_t stretched_timeout = wanted * timeout / interval;
  std::int64_t stretched_interval = wanted;
  if (stretched_timeout > cap) {
    stretched_timeout = cap;
    stretched_interval = cap * interval / timeout;
  }
  return {Millis{std::max(interval, stretched_interval)}, Millis{std::max(timeout, stretched_timeout)}};
}

}  // namespace baton::leader_core
