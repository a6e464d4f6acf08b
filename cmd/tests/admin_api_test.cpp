// The admin API's routes against a real PostgreSQL: the OpenAPI document
// matches the route table, lists page with cursors and filter, and bad
// input of each kind gets a JSON error that names what was wrong.
#include "baton/leader/admin_api.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>

#include "baton/store_pg/pg_leader_store.h"
#include "baton/store_pg/pg_lease_store.h"
#include "baton/store_pg/pg_run_store.h"
#include "baton/store_testing/pg_instance.h"

namespace baton::leader {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

class AdminApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto won = lease.campaign(NodeIdentity{"n1", "n1-i1", "127.0.0.1:7001"}, Millis{60000});
    ASSERT_TRUE(won && won->won);
    epoch = won->lease.epoch;
    for (int i = 0; i < 5; ++i) {
      store::NewRun n;
      auto c = runs.create_run(epoch, n);
      ASSERT_TRUE(c && c->outcome == store::WriteOutcome::applied);
      ids.push_back(c->run.value);
    }
    auto a = runs.assign({RunId{ids[2]}, Version{1}, epoch}, "w1");
    ASSERT_TRUE(a && a->outcome == store::WriteOutcome::applied);
    ASSERT_TRUE(leader_store.worker_attached("w1", "{\"zone\":\"a\"}", 2, "n1", epoch));
    store::JobDefinition every_minute;
    every_minute.name = "every-minute";
    every_minute.schedule = "0 * * * * *";
    ASSERT_TRUE(leader_store.upsert_job(every_minute));
    store::JobDefinition manual;
    manual.name = "manual";
    ASSERT_TRUE(leader_store.upsert_job(manual));
  }
  HttpResponse post(const std::string& target) {
    return api.handle({"POST", target, {{"authorization", "Bearer secret"}}, ""});
  }

  HttpResponse get(const std::string& target) { return api.handle({"GET", target, {}, ""}); }
  static json::value body(const HttpResponse& r) { return json::parse(r.body); }
  /// The error's code, after checking it is a JSON error naming `mentions`.
  static std::string error_code(const HttpResponse& r, const std::string& mentions) {
    auto v = body(r).as_object();
    EXPECT_TRUE(v.contains("code") && v.contains("message")) << r.body;
    EXPECT_NE(std::string(v["message"].as_string()).find(mentions), std::string::npos) << r.body;
    return std::string(v["code"].as_string());
  }

  std::string url = baton::testing::PgInstance::shared().fresh_database("api");
  store::pg::PgLeaseStore lease{url, "api-test"};
  store::pg::PgRunStore runs{url, "api-test"};
  store::pg::PgLeaderStore leader_store{url, "api-test"};
  Metrics metrics;
  Epoch epoch{0};
  std::vector<std::int64_t> ids;
  AdminApi api{[this] { return NodeStatus{"n1", "n1-i1", "leader", epoch.value, "n1", "127.0.0.1:7001", 1}; },
               leader_store,
               metrics,
               "secret",
               [](std::int64_t, const std::string&) { return true; },
               {}};
};

TEST_F(AdminApiTest, TheOpenApiDocumentIsTheRouteTable) {
  auto res = get("/api/v1/openapi.json");
  ASSERT_EQ(res.status, 200);
  auto paths = body(res).as_object()["paths"].as_object();
  std::size_t operations = 0;
  for (const auto& [path, ops] : paths) operations += ops.as_object().size();
  EXPECT_EQ(operations, api.routes().size()) << "one operation per route";
  for (const auto& route : api.routes()) {
    std::string method = route.method;
    for (auto& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ASSERT_TRUE(paths.contains(route.pattern)) << route.pattern;
    EXPECT_TRUE(paths[route.pattern].as_object().contains(method)) << route.method << " " << route.pattern;
  }
  // Every documented GET without path parameters answers (no 404/405).
  for (const auto& [path, ops] : paths)
    if (ops.as_object().contains("get") && std::string(path).find('{') == std::string::npos) {
      const auto r = get(std::string(path));
      EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    }
}

TEST_F(AdminApiTest, RunsPageNewestFirstWithACursor) {
  std::vector<std::int64_t> seen;
  std::string target = "/api/v1/runs?limit=2";
  for (int pages = 0; pages < 10; ++pages) {
    auto res = get(target);
    ASSERT_EQ(res.status, 200) << res.body;
    auto page = body(res).as_object();
    const auto& items = page["items"].as_array();
    EXPECT_LE(items.size(), 2u);
    for (const auto& item : items) seen.push_back(item.as_object().at("id").as_int64());
    if (page["next_cursor"].is_null()) break;
    target = "/api/v1/runs?limit=2&cursor=" + std::string(page["next_cursor"].as_string());
  }
  std::vector<std::int64_t> expected(ids.rbegin(), ids.rend());
  EXPECT_EQ(seen, expected) << "every run once, newest first";
}

TEST_F(AdminApiTest, RunsFilterByStateWorkerAndKey) {
  auto res = get("/api/v1/runs?state=ASSIGNED");
  ASSERT_EQ(res.status, 200);
  auto items = body(res).as_object()["items"].as_array();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].as_object().at("id").as_int64(), ids[2]);
  EXPECT_EQ(items[0].as_object().at("worker_id").as_string(), "w1");
  EXPECT_EQ(body(get("/api/v1/runs?worker=w1")).as_object()["items"].as_array().size(), 1u);
  EXPECT_EQ(body(get("/api/v1/runs?state=PENDING")).as_object()["items"].as_array().size(), 4u);
  EXPECT_EQ(body(get("/api/v1/runs?idempotency_key=none%20such")).as_object()["items"].as_array().size(), 0u);
}

TEST_F(AdminApiTest, BadQueriesGetAJsonErrorNamingTheParameter) {
  struct Case {
    std::string target, mentions;
  };
  for (const auto& c : std::vector<Case>{{"/api/v1/runs?state=DONE", "'state'"},
                                         {"/api/v1/runs?limit=0", "'limit'"},
                                         {"/api/v1/runs?limit=100000", "'limit'"},
                                         {"/api/v1/runs?cursor=abc", "'cursor'"},
                                         {"/api/v1/runs?created_after=yesterday", "'created_after'"},
                                         {"/api/v1/runs?colour=red", "'colour'"},
                                         {"/api/v1/runs?limit=1&limit=2", "'limit'"},
                                         {"/api/v1/epochs?limit=-1", "'limit'"},
                                         {"/api/v1/workers?page=2", "'page'"},
                                         {"/api/v1/runs/abc", "'abc'"}}) {
    auto res = get(c.target);
    EXPECT_EQ(res.status, 400) << c.target << ": " << res.body;
    EXPECT_EQ(error_code(res, c.mentions), "bad_request") << c.target;
  }
  // Every route checks its query, mutations too, before doing anything.
  auto res = post("/api/v1/jobs/manual/pause?force=1");
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(error_code(res, "'force'"), "bad_request");
  EXPECT_FALSE(body(get("/api/v1/jobs/manual")).as_object()["paused"].as_bool()) << "nothing changed";
}

TEST_F(AdminApiTest, UnknownRoutesWrongMethodsAndMissingTokensAreJsonErrors) {
  auto res = get("/api/v1/nothing");
  EXPECT_EQ(res.status, 404);
  EXPECT_EQ(error_code(res, "/api/v1/nothing"), "not_found");
  res = api.handle({"DELETE", "/api/v1/runs", {}, ""});
  EXPECT_EQ(res.status, 405);
  EXPECT_EQ(error_code(res, "GET"), "method_not_allowed");
  EXPECT_EQ(res.headers["Allow"], "GET");
  res = api.handle({"POST", "/api/v1/runs/1/cancel", {}, ""});
  EXPECT_EQ(res.status, 401);
  EXPECT_EQ(error_code(res, "Bearer"), "unauthenticated");
  res = api.handle({"POST", "/api/v1/runs/1/cancel", {{"authorization", "Bearer secret"}}, ""});
  EXPECT_EQ(res.status, 202) << res.body;
}

TEST_F(AdminApiTest, EpochsShowWhoLedAndWhichIsCurrent) {
  auto res = get("/api/v1/epochs");
  ASSERT_EQ(res.status, 200);
  auto items = body(res).as_object()["items"].as_array();
  ASSERT_GE(items.size(), 1u);
  auto first = items[0].as_object();
  EXPECT_EQ(first.at("epoch").as_int64(), epoch.value);
  EXPECT_EQ(first.at("leader_id").as_string(), "n1");
  EXPECT_TRUE(first.at("current").as_bool());
}

TEST_F(AdminApiTest, WorkersShowLabelsCapacityAndWhatTheyHold) {
  auto res = get("/api/v1/workers");
  ASSERT_EQ(res.status, 200);
  auto items = body(res).as_object()["items"].as_array();
  ASSERT_EQ(items.size(), 1u);
  auto w = items[0].as_object();
  EXPECT_EQ(w.at("worker_id").as_string(), "w1");
  EXPECT_EQ(w.at("state").as_string(), "ATTACHED");
  EXPECT_EQ(w.at("capacity").as_int64(), 2);
  EXPECT_EQ(w.at("in_flight").as_int64(), 1);
  EXPECT_EQ(w.at("labels").as_object().at("zone").as_string(), "a");
}

TEST_F(AdminApiTest, JobsListTheirScheduleNextFireAndPauseState) {
  auto res = get("/api/v1/jobs");
  ASSERT_EQ(res.status, 200) << res.body;
  auto items = body(res).as_object()["items"].as_array();
  ASSERT_EQ(items.size(), 2u);
  auto cron = items[0].as_object();  // by name: every-minute, manual
  EXPECT_EQ(cron.at("name").as_string(), "every-minute");
  EXPECT_FALSE(cron.at("paused").as_bool());
  ASSERT_TRUE(cron.at("next_fire_unix").is_int64()) << res.body;
  EXPECT_EQ(cron.at("next_fire_unix").as_int64() % 60, 0) << "a whole minute";
  EXPECT_TRUE(items[1].as_object().at("next_fire_unix").is_null()) << "no schedule, no next fire";
  res = get("/api/v1/jobs/manual");
  ASSERT_EQ(res.status, 200);
  EXPECT_EQ(body(res).as_object()["name"].as_string(), "manual");
  res = get("/api/v1/jobs/nope");
  EXPECT_EQ(res.status, 404);
  EXPECT_EQ(error_code(res, "nope"), "not_found");
}

TEST_F(AdminApiTest, PauseAndResumeAreRecordedWithTheChangeAndSurviveAFileUpsert) {
  EXPECT_EQ(api.handle({"POST", "/api/v1/jobs/every-minute/pause", {}, ""}).status, 401);
  auto res = post("/api/v1/jobs/every-minute/pause");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_TRUE(body(res).as_object()["paused"].as_bool());
  auto job = body(get("/api/v1/jobs/every-minute")).as_object();
  EXPECT_TRUE(job["paused"].as_bool());
  EXPECT_TRUE(job["next_fire_unix"].is_null()) << "a paused job fires no more";
  // The leader's cron does not see it.
  auto scheduled = leader_store.scheduled_jobs();
  ASSERT_TRUE(scheduled);
  EXPECT_TRUE(scheduled->empty());
  // A node upserting its job files at start does not undo an operator's pause.
  store::JobDefinition again;
  again.name = "every-minute";
  again.schedule = "0 * * * * *";
  ASSERT_TRUE(leader_store.upsert_job(again));
  EXPECT_TRUE(body(get("/api/v1/jobs/every-minute")).as_object()["paused"].as_bool());
  res = post("/api/v1/jobs/every-minute/resume");
  ASSERT_EQ(res.status, 200);
  EXPECT_FALSE(body(get("/api/v1/jobs/every-minute")).as_object()["paused"].as_bool());
  EXPECT_EQ(leader_store.scheduled_jobs()->size(), 1u);
  EXPECT_EQ(post("/api/v1/jobs/nope/pause").status, 404);
  // Both changes are in the audit log, with what was before and after.
  auto audit = body(get("/api/v1/audit?subject=job:every-minute")).as_object()["items"].as_array();
  ASSERT_EQ(audit.size(), 2u);
  auto resume = audit[0].as_object();  // newest first
  auto pause = audit[1].as_object();
  EXPECT_EQ(pause.at("action").as_string(), "job.pause");
  EXPECT_FALSE(pause.at("details").at("before").at("paused").as_bool());
  EXPECT_TRUE(pause.at("details").at("after").at("paused").as_bool());
  EXPECT_EQ(resume.at("action").as_string(), "job.resume");
  EXPECT_EQ(pause.at("epoch").as_int64(), epoch.value);
}

TEST_F(AdminApiTest, DeadLettersListWithTheirTriageStatus) {
  // A run that fails for good leaves a dead letter.
  auto [att, v] = [&] {
    auto a = runs.assign({RunId{ids[0]}, Version{1}, epoch}, "w1");
    store::AttemptFence f{"w1", a->attempt, a->lease_token};
    auto s = runs.start({RunId{ids[0]}, a->new_version, epoch}, f, Millis{1000});
    return std::pair{f, s->new_version};
  }();
  store::Finish fin;
  fin.final_state = RunState::failed;
  fin.error_code = "failed";
  fin.exit_code = 3;
  ASSERT_TRUE(runs.finish({RunId{ids[0]}, v, epoch}, att, fin));
  auto res = get("/api/v1/dead-letters");
  ASSERT_EQ(res.status, 200) << res.body;
  auto items = body(res).as_object()["items"].as_array();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].as_object().at("run_id").as_int64(), ids[0]);
  EXPECT_EQ(items[0].as_object().at("triage_status").as_string(), "pending");
  EXPECT_EQ(body(get("/api/v1/dead-letters?status=closed")).as_object()["items"].as_array().size(), 0u);
  res = get("/api/v1/dead-letters?status=gone");
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(error_code(res, "'status'"), "bad_request");
}

}  // namespace
}  // namespace baton::leader
