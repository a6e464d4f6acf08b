// The OpenAPI document as a newcomer's generator takes it (docs/clients.md,
// "A generated client"): the document served by a follower passes Redocly's
// recommended lint with no error, openapi-typescript turns it into types,
// tsc checks a client built on them (openapi-fetch), and that client drives
// a live cluster through the follower: a trigger answered 307 goes to the
// leader with the token, the run is followed to SUCCEEDED, the same
// Idempotency-Key at the leader gives the same run back.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "cluster.h"

using namespace baton::testing;
namespace json = boost::json;

namespace {

const char* jobs = R"(jobs:
  - name: greet
    parameters: {who: world}
    tasks:
      - kind: PROGRAM
        command: [/bin/sh, -c, 'echo "hello $0"', '{{param.who}}']
)";

}  // namespace

TEST(GeneratedClient, ATypeScriptClientFromTheDocumentDrivesTheLeaderThroughAFollower) {
  ClusterOptions o;
  o.tls = false;  // node's fetch and the test's plain HTTP; TLS is tls_test's
  Cluster c("genclient", jobs, o);
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  c.start_node("n2");
  c.start_worker("w1", 2);
  ASSERT_TRUE(c.wait_for_workers("n1", 1));
  // The follower knows the leader (it serves the document and redirects).
  ASSERT_TRUE(wait_until(
      [&] {
        return c.http(c.port("n2"), "GET", "/status")
                   .body.find("\"leader_endpoint\":\"127.0.0.1:" + std::to_string(c.port("n1"))) != std::string::npos;
      },
      10s));

  const auto doc = c.http(c.port("n2"), "GET", "/api/v1/openapi.json");
  ASSERT_EQ(doc.status, 200);
  const std::string work = c.dir() + "/generated-client";
  std::filesystem::create_directories(work);
  std::ofstream(work + "/openapi.json") << doc.body;
  const std::string follower = "http://127.0.0.1:" + std::to_string(c.port("n2"));
  const std::string leader = "http://127.0.0.1:" + std::to_string(c.port("n1"));
  ChildProcess check({std::string(BATON_SOURCE_DIR) + "/clients/typescript/check", work + "/openapi.json", follower,
                      leader, admin_token, "greet", work},
                     work + "/check.log");
  ASSERT_EQ(check.wait_for_exit(300s), 0) << check.log();
  const std::string log = check.log();
  // Redocly prints its verdict: no error (a warning is allowed).
  EXPECT_NE(log.find("Woohoo! Your API description is valid."), std::string::npos) << log;
  EXPECT_EQ(log.find("error"), std::string::npos) << log;

  const auto last = log.substr(log.rfind("{\"run_id\""));
  const auto out = json::parse(last).as_object();
  const auto run = out.at("run_id").as_int64();
  EXPECT_EQ(out.at("state").as_string(), "SUCCEEDED") << last;
  EXPECT_GE(out.at("redirects").as_int64(), 1) << "the trigger went to the follower and was sent on: " << last;
  EXPECT_EQ(out.at("again_run_id").as_int64(), run) << last;
  EXPECT_FALSE(out.at("again_created").as_bool()) << last;
  EXPECT_EQ(out.at("missing_code").as_string(), "not_found") << last;
  // One run, made by the leader, with the parameters the client sent.
  auto r = c.db().run(run);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, "SUCCEEDED");
  EXPECT_EQ(c.db().scalar("SELECT count(*) FROM job_runs WHERE idempotency_key LIKE 'generated-client-%'"), "1");
  EXPECT_EQ(c.db().scalar("SELECT payload->'parameters'->>'who' FROM job_runs WHERE id = " + std::to_string(run)),
            "generated client");
}
