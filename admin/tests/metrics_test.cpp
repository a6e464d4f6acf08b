// /metrics text: Prometheus naming conventions (counters end in _total,
// durations are histograms in seconds), and the per-job series.
#include "baton/admin/metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <sstream>

namespace baton::admin {
namespace {

TEST(Metrics, EverySeriesFollowsThePrometheusConventions) {
  Metrics m;
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

TEST(Metrics, FinishedAttemptsAreCountedAndTimedPerJob) {
  Metrics m;
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
}  // namespace baton::admin
