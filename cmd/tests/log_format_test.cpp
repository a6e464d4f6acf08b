// Logs a shipper understands, from real processes: a node and a worker with
// `log_format: json` write one JSON object per line, each with its UTC
// timestamp, level, process and event, and the fields named (base/log.h).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <sstream>

#include "cluster.h"

using namespace baton::testing;

namespace {

/// Every line of `log` as JSON (a line that is not fails the test), and the
/// first one of `event`.
boost::json::object first_of(const std::string& log, const std::string& event) {
  std::istringstream lines(log);
  boost::json::object found;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    boost::system::error_code ec;
    auto v = boost::json::parse(line, ec);
    EXPECT_FALSE(ec) << "not JSON: " << line;
    if (ec || !v.is_object()) continue;
    const auto& o = v.as_object();
    EXPECT_TRUE(o.contains("ts") && o.contains("level") && o.contains("process")) << line;
    if (o.contains("ts")) {
      EXPECT_EQ(o.at("ts").as_string().back(), 'Z') << line;
    }
    if (found.empty() && o.contains("event") && o.at("event").as_string() == event) found = o;
  }
  return found;
}

TEST(LogFormat, ANodeAndAWorkerWriteJsonLinesWithTheirFieldsNamed) {
  ClusterOptions o;
  o.node_extra = "log_format: json\n";
  Cluster cluster("logjson", "jobs: []\n", o);
  cluster.start_node("n1");
  ASSERT_EQ(cluster.wait_for_leader(), "n1");
  cluster.worker_auth_override["w1"] =
      "log_format: json\ntoken_file: " + std::string(BATON_SOURCE_DIR) + "/cmd/tests/tokens/worker.token\n";
  cluster.start_worker("w1", 2);
  ASSERT_TRUE(cluster.wait_for_workers("n1", 1));

  const auto change = first_of(cluster.proc("n1").log(), "role_change");
  ASSERT_FALSE(change.empty()) << cluster.proc("n1").log();
  EXPECT_EQ(change.at("process").as_string(), "n1");
  EXPECT_EQ(change.at("level").as_string(), "info");
  EXPECT_EQ(change.at("node").as_string(), "n1");
  EXPECT_EQ(change.at("to").as_string(), "leader");
  EXPECT_TRUE(change.contains("epoch"));
  const auto attached = first_of(cluster.proc("w1").log(), "worker_attached");
  ASSERT_FALSE(attached.empty()) << cluster.proc("w1").log();
  EXPECT_EQ(attached.at("process").as_string(), "w1");
}

}  // namespace
