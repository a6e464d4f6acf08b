#pragma once
// The fixture of the `baton ctl` tests: a real cluster (two nodes, one
// worker, a private PostgreSQL), every call a real `baton ctl` process
// pointed at the follower (so every leader-only call is redirected).
#include <gtest/gtest.h>

#include <regex>

#include "cluster.h"

namespace baton::testing {

inline const char* ctl_test_jobs = R"(jobs:
  - name: breaks
    tasks:
      - {kind: PROGRAM, command: [/bin/sh, -c, 'echo disk full on /var; exit 3']}
  - name: quick
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
  - name: nightly
    schedule: '0 0 3 * * *'
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
)";

struct CtlResult {
  int code = -1;
  std::string output;  ///< stdout and stderr
};

class CtlTest : public ::testing::Test {
 protected:
  ChildProcess* n1 = nullptr;  ///< the first leader
  void SetUp() override {
    n1 = &cluster.start_node("n1");
    ASSERT_EQ(cluster.wait_for_leader(), "n1");
    cluster.start_node("n2");
    // Every call goes to n2: it must know the leader before the first one.
    ASSERT_TRUE(cluster.wait_for_ready("n2"));
    cluster.start_worker("w1", 4, {"n1"});
    ASSERT_TRUE(cluster.wait_for_workers("n1", 1));
  }

  /// `baton ctl ARGS...` with BATON_ADDR (the follower) and BATON_TOKEN set.
  CtlResult ctl(std::vector<std::string> args, const std::string& token = admin_token) {
    std::vector<std::string> argv{"/usr/bin/env",         "BATON_ADDR=127.0.0.1:" + std::to_string(cluster.port("n2")),
                                  "BATON_TOKEN=" + token, "HOME=" + cluster.dir(),
                                  BATON_BINARY,           "ctl"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv, cluster.dir() + "/ctl-" + std::to_string(++calls) + ".log");
    auto rc = p.wait_for_exit(60s);
    return {rc.value_or(-1), p.log()};
  }
  /// `baton ctl apply -f DIR`, exit 0; what it said when it was not.
  ::testing::AssertionResult applied(const std::string& dir) {
    auto r = ctl({"apply", "-f", dir});
    if (r.code == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "baton ctl apply -f " << dir << " exited " << r.code << ": " << r.output;
  }
  std::int64_t number_after(const std::string& text, const std::string& key) {
    std::smatch m;
    std::regex re("\"" + key + "\": ?(\\d+)");
    return std::regex_search(text, m, re) ? std::stoll(m[1]) : 0;
  }

  static ClusterOptions options() {
    ClusterOptions o;
    o.log_archive = true;  // one directory shared by both nodes
    o.runtime_extra = ", output_db_bytes: 65536, prune_every: 1s";
    // Webhook receivers of the tests serve a certificate of the cluster's CA.
    // The receivers of these tests listen on loopback, which the shipped
    // destination policy refuses (docs/webhooks.md).
    o.node_extra = "webhooks: {ca_file: " + ThrowawayCa::shared().ca() + ", timeout: 5s, allow_loopback: true}\n";
    return o;
  }
  Cluster cluster{"ctl", ctl_test_jobs, options()};
  int calls = 0;
};

}  // namespace baton::testing
