#pragma once
// Process-wide counters and gauges for GET /metrics (Prometheus text format).
// Written by the control loop and the elector's listener, read by the HTTP
// server: everything is atomic.
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace baton::service {

struct NodeMetrics {
  std::atomic<std::int64_t> epoch{0};
  std::atomic<int> is_leader{0};
  std::atomic<int> attached_workers{0};
  std::atomic<std::int64_t> fenced_writes{0};    ///< writes rejected because a newer epoch exists
  std::atomic<std::int64_t> conflict_writes{0};  ///< writes that lost a version/state race
  std::atomic<std::int64_t> runs_assigned{0};
  std::atomic<std::int64_t> runs_started{0};
  std::atomic<std::int64_t> runs_finished{0};
  std::atomic<std::int64_t> runs_orphaned{0};
  std::atomic<std::int64_t> runs_requeued{0};
  std::atomic<std::int64_t> runs_created_by_cron{0};
  std::atomic<std::int64_t> cron_skips_recorded{0};
  std::atomic<std::int64_t> protocol_errors{0};
  std::atomic<std::int64_t> connections_refused{0};    ///< at a connection cap
  std::atomic<std::int64_t> requests_rate_limited{0};  ///< API calls answered 429
  std::atomic<std::int64_t> auth_throttled{0};         ///< requests and hellos refused: their source failed too often
  std::atomic<std::int64_t> requests_shed{0};          ///< requests answered 503: the admin queue was full
  std::atomic<std::int64_t> reads_busy{0};     ///< API reads answered 503: the read connection stayed taken (N6)
  std::atomic<std::int64_t> token_lookups{0};  ///< API tokens looked up in the database (not found in the cache)
  std::atomic<std::int64_t> role_changes{0};
  /// API requests not authenticated, by reason (api_auth.h AuthFailure:
  /// missing, malformed, unknown).
  std::array<std::atomic<std::int64_t>, 3> auth_failures{};

  /// Dispatch latency: first seen due by this leader -> assign committed.
  static constexpr std::array<double, 10> latency_buckets_ms{1, 2, 5, 10, 25, 50, 100, 250, 1000, 5000};
  std::array<std::atomic<std::int64_t>, 11> dispatch_latency_bucket{};  ///< last = +Inf
  std::atomic<std::int64_t> dispatch_latency_count{0};
  std::atomic<std::int64_t> dispatch_latency_sum_us{0};

  void observe_dispatch_latency_us(std::int64_t us);

  // How late each cron slot's run was created after its slot
  // (baton_cron_slot_delay_seconds; docs/scheduling.md, "Cadence").
  static constexpr std::array<double, 11> cron_delay_buckets_s{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  std::array<std::atomic<std::int64_t>, 12> cron_delay_bucket{};  ///< last = +Inf
  std::atomic<std::int64_t> cron_delay_count{0};
  std::atomic<std::int64_t> cron_delay_sum_ms{0};
  void observe_cron_slot_delay_ms(std::int64_t ms);

  /// Per job: attempts finished by outcome and their durations. Jobs are few
  /// (definitions, not runs), so the label set stays small.
  static constexpr std::array<double, 10> duration_buckets_s{0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600};
  void observe_attempt_finished(const std::string& job, const std::string& outcome, std::int64_t duration_ms);
  /// API and page requests, by method, route (the route table's pattern,
  /// or a fixed name: bounded whatever is asked) and status code.
  static constexpr std::array<double, 10> http_buckets_s{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 10};
  void observe_http_request(const std::string& method, const std::string& route, int code, std::int64_t duration_us);
  /// Prometheus exposition text; `runs_by_state` lines are added by the caller.
  std::string render() const;

 private:
  struct JobSeries {
    std::map<std::string, std::int64_t> by_outcome;
    std::array<std::int64_t, 11> duration_bucket{};  ///< last = +Inf
    std::int64_t duration_count = 0;
    double duration_sum_s = 0;
  };
  mutable std::mutex jobs_mutex_;
  std::map<std::string, JobSeries> jobs_;
  struct HttpSeries {
    std::map<int, std::int64_t> by_code;
    std::array<std::int64_t, 11> duration_bucket{};  ///< last = +Inf
    std::int64_t duration_count = 0;
    double duration_sum_s = 0;
  };
  mutable std::mutex http_mutex_;
  std::map<std::pair<std::string, std::string>, HttpSeries> http_;  ///< by (method, route)
};

}  // namespace baton::service
