// /metrics text: Prometheus naming conventions (counters end in _total,
// durations are histograms in seconds), and the per-job series.
#include "baton/service/node_metrics.h"

#include <gtest/gtest.h>

#include "baton/service/process_metrics.h"
#include "baton/testing/prometheus_conventions.h"

#include <map>
#include <regex>
#include <sstream>

namespace baton::service {
namespace {

TEST(NodeMetrics, EverySeriesFollowsThePrometheusConventions) {
  NodeMetrics m;
  m.observe_attempt_finished("nightly", "SUCCEEDED", 1500);
  m.observe_dispatch_latency_us(3000);
  std::istringstream text(m.render());
  std::map<std::string, std::string> types;
  for (std::string line; std::getline(text, line);) {
    std::smatch t;
    if (std::regex_match(line, t, std::regex(R"(# TYPE (\S+) (\S+))"))) types[t[1]] = t[2];
  }
  ASSERT_FALSE(types.empty());
  for (const auto& [name, type] : types) {
    EXPECT_EQ(name.rfind("baton_", 0), 0u) << name;
    EXPECT_EQ(type == "counter", name.ends_with("_total")) << name << " is a " << type;
    if (type == "histogram") {
      EXPECT_TRUE(name.ends_with("_seconds")) << name << ": durations in base units";
    }
    EXPECT_EQ(name.find("_ms"), std::string::npos) << name << ": seconds, not milliseconds";
  }
}

// Everything a node adds to its own series: what it is, its process, and the
// requests it answered (the cluster's gauges are checked on a real scrape:
// cmd/tests/admin_api_test.cpp).
TEST(NodeMetrics, BuildProcessAndRequestSeriesAreThereByTheirConventionalNames) {
  NodeMetrics m;
  m.observe_http_request("GET", "/api/v1/runs/{id}", 200, 1200);
  m.observe_http_request("GET", "/api/v1/runs/{id}", 404, 300);
  m.observe_http_request("POST", "/api/v1/jobs/{name}/trigger", 201, 40000);
  auto process = read_process_stats();
  ASSERT_TRUE(process);
  EXPECT_GT(process->cpu_seconds, 0);
  EXPECT_GT(process->resident_bytes, 1 << 20);
  EXPECT_GE(process->open_fds, 3);
  EXPECT_GT(process->start_time_seconds, 1.7e9);
  const std::string text = render_build_info("0.14.0", 1, 6) + m.render() + render_process_metrics(*process);
  EXPECT_EQ(baton::testing::exposition_problems(text), std::vector<std::string>{}) << text;
  for (const char* family : {"baton_build_info", "process_cpu_seconds_total", "process_resident_memory_bytes",
                             "process_open_fds", "process_max_fds", "process_start_time_seconds",
                             "baton_http_requests_total", "baton_http_request_duration_seconds"})
    EXPECT_NE(text.find("# TYPE " + std::string(family) + " "), std::string::npos) << family;
  EXPECT_NE(text.find("baton_build_info{version=\"0.14.0\",protocol=\"1-6\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("baton_http_requests_total{method=\"GET\",route=\"/api/v1/runs/{id}\",code=\"404\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("baton_http_request_duration_seconds_bucket{method=\"POST\",route=\"/api/v1/jobs/{name}/"
                      "trigger\",le=\"0.025\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("baton_http_request_duration_seconds_count{method=\"GET\",route=\"/api/v1/runs/{id}\"} 2\n"),
            std::string::npos);
  // The checker itself catches what it is for.
  EXPECT_FALSE(
      baton::testing::exposition_problems("# HELP baton_x_ms y\n# TYPE baton_x_ms gauge\nbaton_x_ms 1\n").empty());
  EXPECT_FALSE(baton::testing::exposition_problems("# HELP baton_x y\n# TYPE baton_x counter\nbaton_x 1\n").empty());
  EXPECT_FALSE(baton::testing::exposition_problems("baton_y 1\n").empty());
}

TEST(NodeMetrics, FinishedAttemptsAreCountedAndTimedPerJob) {
  NodeMetrics m;
  m.observe_attempt_finished("nightly", "SUCCEEDED", 1500);
  m.observe_attempt_finished("nightly", "FAILED", 20);
  m.observe_attempt_finished("nightly", "SUCCEEDED", 4000);
  m.observe_attempt_finished("hourly", "SUCCEEDED", 7200000);
  const std::string text = m.render();
  EXPECT_NE(text.find("baton_job_attempts_total{job=\"nightly\",outcome=\"SUCCEEDED\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("baton_job_attempts_total{job=\"nightly\",outcome=\"FAILED\"} 1\n"), std::string::npos);
  // Cumulative buckets: 0.02 s <= 0.1; 1.5 s <= 5; 4 s <= 5.
  EXPECT_NE(text.find("baton_job_attempt_duration_seconds_bucket{job=\"nightly\",le=\"0.1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("baton_job_attempt_duration_seconds_bucket{job=\"nightly\",le=\"1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("baton_job_attempt_duration_seconds_bucket{job=\"nightly\",le=\"5\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("baton_job_attempt_duration_seconds_count{job=\"nightly\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("baton_job_attempt_duration_seconds_bucket{job=\"hourly\",le=\"3600\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("baton_job_attempt_duration_seconds_bucket{job=\"hourly\",le=\"+Inf\"} 1\n"), std::string::npos);
}

}  // namespace
}  // namespace baton::service
