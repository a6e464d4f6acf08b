#pragma once
// Process-wide counters and gauges for GET /metrics (Prometheus text format).
// Written by the control loop and the elector's listener, read by the HTTP
// server: everything is atomic.
#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace baton::leader {

struct Metrics {
  std::atomic<std::int64_t> epoch{0};
  std::atomic<int> is_leader{0};
  std::atomic<int> attached_workers{0};
  std::atomic<std::int64_t> fenced_writes{0};    ///< writes rejected because a newer epoch exists
  std::atomic<std::int64_t> conflict_writes{0};  ///< writes that lost a version/state race
  std::atomic<std::int64_t> runs_assigned{0};
  std::atomic<std::int64_t> runs_started{0};
  std::atomic<std::int64_t> runs_finished{0};
  std::atomic<std::int64_t> runs_orphaned{0};
  std::atomic<std::int64_t> runs_created_by_cron{0};
  std::atomic<std::int64_t> protocol_errors{0};
  std::atomic<std::int64_t> role_changes{0};

  /// Dispatch latency: first seen due by this leader -> assign committed.
  static constexpr std::array<double, 10> latency_buckets_ms{1, 2, 5, 10, 25, 50, 100, 250, 1000, 5000};
  std::array<std::atomic<std::int64_t>, 11> dispatch_latency_bucket{};  ///< last = +Inf
  std::atomic<std::int64_t> dispatch_latency_count{0};
  std::atomic<std::int64_t> dispatch_latency_sum_us{0};

  void observe_dispatch_latency_us(std::int64_t us);
  /// Prometheus exposition text; `runs_by_state` lines are added by the caller.
  std::string render() const;
};

}  // namespace baton::leader
