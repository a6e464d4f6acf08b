#include "baton/service/node_metrics.h"

#include <sstream>

namespace baton::service {

namespace {
/// One labelled series of a histogram: cumulative buckets (the last one
/// +Inf), sum and count.
void histogram_series(std::ostream& o, const char* name, const std::string& labels, const double* bounds,
                      std::size_t n_bounds, const std::int64_t* buckets, double sum, std::int64_t count) {
  std::int64_t cumulative = 0;
  for (std::size_t i = 0; i < n_bounds; ++i) {
    cumulative += buckets[i];
    o << name << "_bucket{" << labels << ",le=\"" << bounds[i] << "\"} " << cumulative << '\n';
  }
  cumulative += buckets[n_bounds];
  o << name << "_bucket{" << labels << ",le=\"+Inf\"} " << cumulative << '\n';
  o << name << "_sum{" << labels << "} " << sum << '\n';
  o << name << "_count{" << labels << "} " << count << '\n';
}
}  // namespace

void NodeMetrics::observe_cron_slot_delay_ms(std::int64_t ms) {
  std::size_t i = 0;
  while (i < cron_delay_buckets_s.size() && static_cast<double>(ms) / 1000.0 > cron_delay_buckets_s[i]) ++i;
  cron_delay_bucket[i]++;
  cron_delay_count++;
  cron_delay_sum_ms += ms;
}

void NodeMetrics::observe_dispatch_latency_us(std::int64_t us) {
  std::size_t i = 0;
  while (i < latency_buckets_ms.size() && static_cast<double>(us) / 1000.0 > latency_buckets_ms[i]) ++i;
  dispatch_latency_bucket[i]++;
  dispatch_latency_count++;
  dispatch_latency_sum_us += us;
}

void NodeMetrics::observe_attempt_finished(const std::string& job, const std::string& outcome,
                                           std::int64_t duration_ms) {
  const double s = static_cast<double>(duration_ms) / 1000.0;
  std::lock_guard lock(jobs_mutex_);
  auto& j = jobs_[job];
  j.by_outcome[outcome]++;
  std::size_t i = 0;
  while (i < duration_buckets_s.size() && s > duration_buckets_s[i]) ++i;
  j.duration_bucket[i]++;
  j.duration_count++;
  j.duration_sum_s += s;
}

void NodeMetrics::observe_http_request(const std::string& method, const std::string& route, int code,
                                       std::int64_t duration_us) {
  const double s = static_cast<double>(duration_us) / 1e6;
  std::lock_guard lock(http_mutex_);
  auto& h = http_[{method, route}];
  h.by_code[code]++;
  std::size_t i = 0;
  while (i < http_buckets_s.size() && s > http_buckets_s[i]) ++i;
  h.duration_bucket[i]++;
  h.duration_count++;
  h.duration_sum_s += s;
}

std::string NodeMetrics::render() const {
  std::ostringstream o;
  auto gauge = [&](const char* name, const char* help, std::int64_t v, const char* type = "gauge") {
    o << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n' << name << ' ' << v << '\n';
  };
  gauge("baton_epoch", "Leader epoch this node leads (0 when following).", epoch.load());
  gauge("baton_is_leader", "1 if this node is the leader.", is_leader.load());
  gauge("baton_attached_workers", "Workers attached to this node.", attached_workers.load());
  gauge("baton_fenced_writes_total", "Run writes rejected because a newer epoch holds the lease.", fenced_writes.load(),
        "counter");
  gauge("baton_conflict_writes_total", "Run writes that lost a version or state race.", conflict_writes.load(),
        "counter");
  gauge("baton_runs_assigned_total", "Runs assigned by this node.", runs_assigned.load(), "counter");
  gauge("baton_runs_started_total", "Start grants by this node.", runs_started.load(), "counter");
  gauge("baton_runs_finished_total", "Finishes recorded by this node.", runs_finished.load(), "counter");
  gauge("baton_runs_orphaned_total", "Runs this node moved to ORPHANED.", runs_orphaned.load(), "counter");
  gauge("baton_runs_requeued_total",
        "Runs this node took back from a worker's prefetch queue after the reassign delay (ORPHANED, not counted "
        "as lost placements).",
        runs_requeued.load(), "counter");
  gauge("baton_cron_runs_created_total", "Cron slots materialised by this node.", runs_created_by_cron.load(),
        "counter");
  gauge("baton_cron_skips_recorded_total",
        "Ranges of cron slots given up (misfire policy, catch-up limit, starting deadline) and recorded in the "
        "decision ledger by this node.",
        cron_skips_recorded.load(), "counter");
  gauge("baton_protocol_errors_total", "Frames rejected from workers.", protocol_errors.load(), "counter");
  gauge("baton_connections_refused_total", "Connections closed at accept: a connection cap was reached.",
        connections_refused.load(), "counter");
  gauge("baton_requests_rate_limited_total", "API calls answered 429: a token over its trigger or list-read rate.",
        requests_rate_limited.load(), "counter");
  gauge("baton_auth_throttled_total",
        "Requests and worker hellos refused before their credential was looked at: their source (an IPv4 address, "
        "an IPv6 /64) failed to authenticate more often than limits.auth_failure_rate allows.",
        auth_throttled.load(), "counter");
  gauge("baton_requests_shed_total",
        "API requests answered 503 with Retry-After at once: limits.admin_queue_max requests were already waiting "
        "for or in the admin threads.",
        requests_shed.load(), "counter");
  gauge("baton_api_reads_busy_total",
        "API reads (lists, searches, series) answered 503 reads_busy with Retry-After: the API's read connection "
        "stayed taken by another read for longer than the 250 ms a read waits for it.",
        reads_busy.load(), "counter");
  gauge("baton_api_token_lookups_total",
        "API tokens looked up in the database: of the issued shape, not the configured token, and not in the "
        "node's cache.",
        token_lookups.load(), "counter");
  gauge("baton_role_changes_total", "Leader/follower transitions of this node.", role_changes.load(), "counter");
  o << "# HELP baton_auth_failures_total API requests not authenticated: no token (missing), neither the configured "
       "token nor of the issued shape, refused without a lookup (malformed), looked up and not found or revoked "
       "(unknown).\n# TYPE baton_auth_failures_total counter\n";
  const char* reasons[] = {"missing", "malformed", "unknown"};
  for (std::size_t i = 0; i < auth_failures.size(); ++i)
    o << "baton_auth_failures_total{reason=\"" << reasons[i] << "\"} " << auth_failures[i].load() << '\n';
  o << "# HELP baton_dispatch_latency_seconds Time from a run first seen due to its assignment committed.\n"
       "# TYPE baton_dispatch_latency_seconds histogram\n";
  std::int64_t cumulative = 0;
  for (std::size_t i = 0; i < latency_buckets_ms.size(); ++i) {
    cumulative += dispatch_latency_bucket[i].load();
    o << "baton_dispatch_latency_seconds_bucket{le=\"" << latency_buckets_ms[i] / 1000.0 << "\"} " << cumulative
      << '\n';
  }
  cumulative += dispatch_latency_bucket.back().load();
  o << "baton_dispatch_latency_seconds_bucket{le=\"+Inf\"} " << cumulative << '\n';
  o << "baton_dispatch_latency_seconds_sum " << static_cast<double>(dispatch_latency_sum_us.load()) / 1e6 << '\n';
  o << "baton_dispatch_latency_seconds_count " << dispatch_latency_count.load() << '\n';
  o << "# HELP baton_cron_slot_delay_seconds How late each cron slot's run was created after its slot's time (0: on "
       "time or ahead of it), as this node led.\n"
       "# TYPE baton_cron_slot_delay_seconds histogram\n";
  cumulative = 0;
  for (std::size_t i = 0; i < cron_delay_buckets_s.size(); ++i) {
    cumulative += cron_delay_bucket[i].load();
    o << "baton_cron_slot_delay_seconds_bucket{le=\"" << cron_delay_buckets_s[i] << "\"} " << cumulative << '\n';
  }
  cumulative += cron_delay_bucket.back().load();
  o << "baton_cron_slot_delay_seconds_bucket{le=\"+Inf\"} " << cumulative << '\n';
  o << "baton_cron_slot_delay_seconds_sum " << static_cast<double>(cron_delay_sum_ms.load()) / 1e3 << '\n';
  o << "baton_cron_slot_delay_seconds_count " << cron_delay_count.load() << '\n';

  {
    // Methods and routes come from the route table or a fixed list, never
    // from the request: no escaping, and a bounded set of series.
    std::lock_guard lock(http_mutex_);
    o << "# HELP baton_http_requests_total HTTP requests this node answered, by method, route and status code.\n"
         "# TYPE baton_http_requests_total counter\n";
    for (const auto& [key, h] : http_)
      for (const auto& [code, n] : h.by_code)
        o << "baton_http_requests_total{method=\"" << key.first << "\",route=\"" << key.second << "\",code=\"" << code
          << "\"} " << n << '\n';
    o << "# HELP baton_http_request_duration_seconds How long this node took to answer, by method and route.\n"
         "# TYPE baton_http_request_duration_seconds histogram\n";
    for (const auto& [key, h] : http_)
      histogram_series(o, "baton_http_request_duration_seconds",
                       "method=\"" + key.first + "\",route=\"" + key.second + "\"", http_buckets_s.data(),
                       http_buckets_s.size(), h.duration_bucket.data(), h.duration_sum_s, h.duration_count);
  }
  // Job names are [A-Za-z0-9._-] (validated when defined): no label escaping needed.
  std::lock_guard lock(jobs_mutex_);
  o << "# HELP baton_job_attempts_total Attempts whose finish this node recorded, by job and outcome.\n"
       "# TYPE baton_job_attempts_total counter\n";
  for (const auto& [job, j] : jobs_)
    for (const auto& [outcome, n] : j.by_outcome)
      o << "baton_job_attempts_total{job=\"" << job << "\",outcome=\"" << outcome << "\"} " << n << '\n';
  o << "# HELP baton_job_attempt_duration_seconds How long finished attempts ran, by job (as the worker measured).\n"
       "# TYPE baton_job_attempt_duration_seconds histogram\n";
  for (const auto& [job, j] : jobs_)
    histogram_series(o, "baton_job_attempt_duration_seconds", "job=\"" + job + "\"", duration_buckets_s.data(),
                     duration_buckets_s.size(), j.duration_bucket.data(), j.duration_sum_s, j.duration_count);
  return o.str();
}

}  // namespace baton::service
