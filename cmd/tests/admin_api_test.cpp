// The admin API's routes against a real PostgreSQL: the OpenAPI document
// matches the route table, lists page with cursors and filter, and bad
// input of each kind gets a JSON error that names what was wrong.
#include "baton/admin/admin_api.h"
#include "baton/admin/payload_denylist.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <ctime>
#include <fstream>
#include <future>
#include <set>
#include <sstream>
#include <thread>

#include "baton/store_pg/pg_admin_store.h"
#include "baton/store_pg/pg_leader_store.h"
#include "baton/store_pg/pg_lease_store.h"
#include "baton/store_pg/pg_run_store.h"
#include "baton/store_testing/pg_instance.h"
#include "baton/testing/fake_clock.h"
#include "baton/testing/prometheus_conventions.h"

namespace baton::admin {
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
    ASSERT_TRUE(admin_store.create_job(store::Actor{"test", epoch}, every_minute));
    store::JobDefinition manual;
    manual.name = "manual";
    manual.parameter_rules_json = R"({"region": {}, "customer": {}})";
    ASSERT_TRUE(admin_store.create_job(store::Actor{"test", epoch}, manual));
  }
  HttpResponse post(const std::string& target) {
    return api.handle({"POST", target, {{"authorization", "Bearer secret"}}, ""});
  }

  HttpResponse get(const std::string& target, const std::string& token = "secret") {
    return api.handle({"GET", target, {{"authorization", "Bearer " + token}}, ""});
  }
  HttpResponse send(const std::string& method, const std::string& target, const std::string& body,
                    const std::string& token = "secret") {
    return api.handle({method, target, {{"authorization", "Bearer " + token}}, body});
  }
  static json::value body(const HttpResponse& r) { return json::parse(r.body); }
  /// A run of job `manual`, driven to FAILED on its only attempt (a dead letter).
  std::int64_t failed_run() {
    auto c = admin_store.trigger(store::Actor{"test", epoch}, "manual", std::nullopt, std::nullopt);
    EXPECT_TRUE(c && c->outcome == store::WriteOutcome::applied);
    const RunId id = c->run;
    auto a = runs.assign({id, Version{1}, epoch}, "w1");
    store::AttemptFence f{"w1", a->attempt, a->lease_token};
    auto st = runs.start({id, a->new_version, epoch}, f, Millis{1000});
    store::Finish fin;
    fin.final_state = RunState::failed;
    fin.error_code = "failed";
    fin.exit_code = 3;
    EXPECT_TRUE(runs.finish({id, st->new_version, epoch}, f, fin));
    return id.value;
  }
  /// The newest audit record's action and details.
  json::object last_audit() {
    return body(get("/api/v1/audit?limit=1")).as_object()["items"].as_array().at(0).as_object();
  }
  /// A token of `role` made through the API.
  std::string token(const std::string& name, const std::string& role) {
    auto r = send("POST", "/api/v1/tokens", "{\"name\":\"" + name + "\",\"role\":\"" + role + "\"}");
    EXPECT_EQ(r.status, 201) << r.body;
    return std::string(body(r).as_object()["token"].as_string());
  }
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
  store::pg::PgAdminStore admin_store{url, "api-test"};
  service::NodeMetrics metrics;
  baton::testing::FakeClock clock;
  Epoch epoch{0};
  std::vector<std::int64_t> ids;
  std::string role = "leader";
  std::vector<std::int64_t> cancelled;
  AdminApi api{AdminApiPorts{[this] { return NodeStatus{"n1", "n1-i1", role, epoch.value, "n1", "127.0.0.1:7001", 1}; },
                             [this](std::int64_t run, const std::string&) {
                               cancelled.push_back(run);
                               return true;
                             },
                             {}},
               admin_store, metrics, clock, "secret"};
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
  // Every documented GET without path parameters answers (no 404/405); a
  // node with an incident journal (this one's answers from a fake).
  api.set_incident_export([](std::int64_t from_ms, std::int64_t to_ms) -> Result<std::string> {
    return "{\"k\":\"window\",\"from_ms\":" + std::to_string(from_ms) + ",\"to_ms\":" + std::to_string(to_ms) + "}\n";
  });
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
                                         {"/api/v1/runs?colour=red", "\"colour\""},
                                         {"/api/v1/runs?limit=1&limit=2", "'limit'"},
                                         {"/api/v1/epochs?limit=-1", "'limit'"},
                                         {"/api/v1/workers?page=2", "\"page\""},
                                         {"/api/v1/runs/abc", "\"abc\""}}) {
    auto res = get(c.target);
    EXPECT_EQ(res.status, 400) << c.target << ": " << res.body;
    EXPECT_EQ(error_code(res, c.mentions), "bad_request") << c.target;
  }
  // Every route checks its query, mutations too, before doing anything.
  auto res = post("/api/v1/jobs/manual/pause?force=1");
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(error_code(res, "\"force\""), "bad_request");
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

// GET /api/v1/jobs/{name}/why: the slot at a time in the job's zone, its
// run or the skipped range covering it, and the sentence explaining it.
TEST_F(AdminApiTest, WhyExplainsASlotFromTheLedger) {
  ASSERT_EQ(send("PUT", "/api/v1/jobs/hourly",
                 R"({"schedule":"0 * * * *","time_zone":"Europe/Berlin","misfire_policy":"run_latest",)"
                 R"("tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})")
                .status,
            201);
  constexpr std::int64_t kMidnight = 1767225600;  // 2026-01-01T00:00:00Z = 01:00 in Berlin
  auto created = leader_store.create_cron_run(epoch, "hourly", kMidnight + 10 * 3600, true, 0);
  ASSERT_TRUE(created && created->outcome == store::WriteOutcome::applied);
  ASSERT_EQ(
      leader_store
          .skip_cron_slots(epoch, "hourly", {{kMidnight + 5 * 3600, kMidnight + 9 * 3600, 5, 5, "misfire_policy"}},
                           R"({"policy":"run_latest","gap_cause":"not_planned"})")
          ->outcome,
      store::WriteOutcome::applied);

  auto res = get("/api/v1/jobs/hourly/why?at=2026-01-01T10:00:00Z");
  ASSERT_EQ(res.status, 200) << res.body;
  auto o = body(res).as_object();
  EXPECT_EQ(o.at("slot").as_string(), "2026-01-01T11:00:00+01:00");
  EXPECT_TRUE(o.at("is_slot").as_bool());
  EXPECT_EQ(o.at("run").as_object().at("id").as_int64(), created->run.value);
  EXPECT_NE(std::string(o.at("explanation").as_string()).find("was created for the slot"), std::string::npos);
  EXPECT_EQ(o.at("decisions").as_array().at(0).as_object().at("reason").as_string(), "caught_up");

  // 08:10 Berlin, no offset: the wall clock in the job's zone; the slot is 09:00 Berlin = 08:00 UTC.
  res = get("/api/v1/jobs/hourly/why?at=2026-01-01%2008:10");
  ASSERT_EQ(res.status, 200) << res.body;
  o = body(res).as_object();
  EXPECT_FALSE(o.at("is_slot").as_bool());
  EXPECT_EQ(o.at("slot_unix").as_int64(), kMidnight + 8 * 3600);
  EXPECT_TRUE(o.at("run").is_null());
  const std::string why(o.at("explanation").as_string());
  EXPECT_NE(why.find("was given up by epoch " + std::to_string(epoch.value)), std::string::npos) << why;
  EXPECT_NE(why.find("misfire_policy run_latest"), std::string::npos) << why;
  EXPECT_EQ(o.at("decisions").as_array().at(0).as_object().at("slot_count").as_int64(), 5);

  // After the cursor: nothing recorded yet.
  o = body(get("/api/v1/jobs/hourly/why?at=2026-06-01T00:00:00Z")).as_object();
  EXPECT_NE(std::string(o.at("explanation").as_string()).find("nothing is recorded"), std::string::npos);

  EXPECT_EQ(get("/api/v1/jobs/hourly/why").status, 400);
  EXPECT_EQ(get("/api/v1/jobs/hourly/why?at=yesterday").status, 400);
  EXPECT_EQ(get("/api/v1/jobs/manual/why?at=2026-01-01T00:00:00Z").status, 409) << "no schedule";
  EXPECT_EQ(get("/api/v1/jobs/nope/why?at=2026-01-01T00:00:00Z").status, 404);
}

// A run whose selector no attached, active worker satisfies is counted in
// /status (the dashboard's card) and /metrics, and the leader's query finds
// it for the label sets it is given.
TEST_F(AdminApiTest, RunsNoWorkerCanTakeAreCountedAndFound) {
  ASSERT_EQ(
      send("PUT", "/api/v1/jobs/gpu", R"({"selector":{"gpu":"yes"},"tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})")
          .status,
      201);
  ASSERT_EQ(
      send("PUT", "/api/v1/jobs/zone-a", R"({"selector":{"zone":"a"},"tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})")
          .status,
      201);
  ASSERT_EQ(post("/api/v1/jobs/gpu/trigger").status, 201);
  ASSERT_EQ(post("/api/v1/jobs/zone-a/trigger").status, 201);
  auto status = body(api.handle({"GET", "/status", {}, ""})).as_object();
  EXPECT_EQ(status.at("unmatched_runs").as_int64(), 1) << "w1 carries zone=a, nobody gpu=yes";
  EXPECT_NE(api.handle({"GET", "/metrics", {}, ""}).body.find("baton_runs_unmatched 1\n"), std::string::npos);
  // The whole scrape, the cluster's gauges with the node's own, keeps the
  // exposition's conventions, and says its charset.
  const auto scrape = api.handle({"GET", "/metrics", {}, ""});
  EXPECT_EQ(scrape.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(baton::testing::exposition_problems(scrape.body), std::vector<std::string>{}) << scrape.body;
  EXPECT_NE(scrape.body.find("# TYPE baton_oldest_pending_run_age_seconds gauge\n"), std::string::npos);
  EXPECT_NE(scrape.body.find("baton_http_requests_total{method=\"GET\",route=\"/metrics\",code=\"200\"}"),
            std::string::npos)
      << scrape.body;
  auto found = leader_store.unmatched_runs({{{"zone", "a"}}}, 10);
  ASSERT_TRUE(found);
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ(found->front().job_name, "gpu");
  EXPECT_TRUE(leader_store.unmatched_runs({{{"zone", "a"}, {"gpu", "yes"}}}, 10)->empty());
  // A drained worker takes no runs: its labels do not count -- from the
  // next scan: /status reuses one for a second, whatever the request rate.
  ASSERT_EQ(post("/api/v1/workers/w1/drain").status, 200);
  EXPECT_EQ(body(api.handle({"GET", "/status", {}, ""})).as_object().at("unmatched_runs").as_int64(), 1)
      << "the same second: the same scan";
  clock.advance(std::chrono::seconds(1));
  EXPECT_EQ(body(api.handle({"GET", "/status", {}, ""})).as_object().at("unmatched_runs").as_int64(), 2);
}

// Parameters: a job's defaults overlaid by a trigger's reach the due run;
// names and values on the payload denylist are refused with an error naming
// them, and nothing is created.
TEST_F(AdminApiTest, ParametersAreMergedAndSecretsRefused) {
  ASSERT_EQ(send("PUT", "/api/v1/jobs/report",
                 R"({"parameters":{"region":"eu","format":"pdf","rows":{"type":"integer"}},)"
                 R"("tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})")
                .status,
            201);
  auto created = send("POST", "/api/v1/jobs/report/trigger", R"({"parameters":{"format":"csv","rows":3}})");
  ASSERT_EQ(created.status, 201) << created.body;
  const auto run = body(created).as_object().at("run_id").as_int64();
  auto due = leader_store.due_runs(100, {}, Millis{0}, {{}});
  ASSERT_TRUE(due);
  bool found = false;
  for (const auto& d : *due) {
    if (d.id.value != run) continue;
    found = true;
    EXPECT_EQ(d.parameters, (std::map<std::string, std::string>{{"region", "eu"}, {"format", "csv"}, {"rows", "3"}}));
  }
  EXPECT_TRUE(found);

  auto secret = send("POST", "/api/v1/jobs/report/trigger", R"({"parameters":{"db_password":"hunter2"}})");
  EXPECT_EQ(secret.status, 400);
  EXPECT_NE(secret.body.find("parameters.db_password: the name contains"), std::string::npos) << secret.body;
  auto key = send("POST", "/api/v1/events", R"({"kind":"k","payload":{"cert":"-----BEGIN PRIVATE KEY-----"}})");
  EXPECT_EQ(key.status, 400);
  EXPECT_NE(key.body.find("payload.cert: the value contains"), std::string::npos) << key.body;
  auto job = send("PUT", "/api/v1/jobs/leaky",
                  R"({"parameters":{"GITHUB_TOKEN":"x"},"tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})");
  EXPECT_EQ(job.status, 400);
  EXPECT_NE(job.body.find("parameters.GITHUB_TOKEN"), std::string::npos) << job.body;
  EXPECT_EQ(get("/api/v1/jobs/leaky").status, 404) << "nothing created";
  // The denylist is the node's to set.
  api.set_payload_denylist({"region"});
  EXPECT_EQ(send("POST", "/api/v1/jobs/report/trigger", R"({"parameters":{"region":"us"}})").status, 400);
}

// run_at: a one-off that may not start before its time, kept in the run
// (start_after) and not among its parameters; a bad time names run_at.
TEST_F(AdminApiTest, ATriggerWithRunAtWaitsForItsTime) {
  ASSERT_EQ(
      send("PUT", "/api/v1/jobs/later", R"({"parameters":{"a":"z"},"tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})")
          .status,
      201);
  const std::time_t in_an_hour = std::time(nullptr) + 3600;
  std::tm utc{};
  gmtime_r(&in_an_hour, &utc);
  char at_text[32];
  std::strftime(at_text, sizeof at_text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  const std::string at = at_text;
  auto created = send("POST", "/api/v1/jobs/later/trigger", R"({"run_at":")" + at + R"(","parameters":{"a":"b"}})");
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(body(created).as_object().at("run_at").as_string(), at);
  const auto run = body(created).as_object().at("run_id").as_int64();
  auto due_now = leader_store.due_runs(100, {}, Millis{0}, {{}});
  ASSERT_TRUE(due_now);
  for (const auto& d : *due_now) EXPECT_NE(d.id.value, run) << "not due before its time";
  auto ahead = leader_store.due_runs(100, {}, Millis{2 * 3600 * 1000}, {{}});
  ASSERT_TRUE(ahead);
  bool found = false;
  for (const auto& d : *ahead) {
    if (d.id.value != run) continue;
    found = true;
    EXPECT_GT(d.starts_in_ms, 3500 * 1000);
    EXPECT_EQ(d.parameters, (std::map<std::string, std::string>{{"a", "b"}})) << "run_at is not a parameter";
  }
  EXPECT_TRUE(found);
  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"run_at":"tomorrow"})", "run_at: "},
           {R"({"run_at":1764000000})", "'run_at' must be an ISO 8601 time"},
           {R"({"run_at":"2099-01-01T00:00:00Z"})", "run_at: at most a year ahead"},
           {R"({"run_at":"2026-12-01T09:00:00Z","at":1})", "unknown key"}}) {
    auto refused = send("POST", "/api/v1/jobs/later/trigger", bad);
    EXPECT_EQ(refused.status, 400) << bad;
    EXPECT_NE(refused.body.find(why), std::string::npos) << refused.body;
  }
}

// The typed contract (admin/api/contract.json): it covers every route of
// the table and no other; the document is served without a token, typed
// (every operation answers with a schema, parameters included); and
// docs/api/openapi.json is what a node serves (BATON_WRITE_OPENAPI=1 writes
// it, compact: `python3 -m json.tool` makes it readable, which the
// comparison ignores).
TEST_F(AdminApiTest, TheTypedContractCoversEveryRouteAndDocsHoldWhatANodeServes) {
  for (const auto& drift : api.contract_drift()) ADD_FAILURE() << drift;
  auto served = api.handle({"GET", "/api/v1/openapi.json", {}, ""});
  ASSERT_EQ(served.status, 200) << served.body;
  const json::value doc = json::parse(served.body);
  EXPECT_EQ(doc.at("openapi").as_string(), "3.1.0");
  EXPECT_TRUE(doc.at("components").at("schemas").as_object().contains("Error"));
  // What a generator needs (issue 63): a named operation each, named
  // schemas, servers, the open routes saying so, the 307 where a follower
  // answers it, typed states and times.
  EXPECT_GE(doc.at("components").at("schemas").as_object().size(), 15u);
  EXPECT_EQ(doc.at("servers").as_array().size(), 1u);
  std::set<std::string> operation_ids;
  for (const auto& [path, ops] : doc.at("paths").as_object())
    for (const auto& [method, op] : ops.as_object()) {
      const auto& responses = op.at("responses").as_object();
      EXPECT_GE(responses.size(), 3u) << method << " " << path << ": a typed answer beside the errors";
      EXPECT_TRUE(responses.contains("4XX")) << method << " " << path;
      for (const auto& p : op.at("parameters").as_array())
        EXPECT_TRUE(p.at("schema").as_object().size() >= 1) << method << " " << path;
      ASSERT_TRUE(op.as_object().contains("operationId")) << method << " " << path;
      EXPECT_TRUE(operation_ids.insert(std::string(op.at("operationId").as_string())).second) << method << " " << path;
      EXPECT_EQ(op.at("security").as_array().empty(), op.at("x-baton-role") == "anyone") << method << " " << path;
      EXPECT_EQ(responses.contains("307"), op.as_object().contains("x-baton-leader-only")) << method << " " << path;
    }
  EXPECT_EQ(doc.at("paths").at("/api/v1/runs/{id}").at("get").at("operationId"), "getRun");
  const auto& run = doc.at("components").at("schemas").at("Run").at("properties");
  EXPECT_EQ(run.at("state").at("enum").as_array().size(), 9u);
  EXPECT_EQ(run.at("created_at").at("format"), "date-time");
  EXPECT_EQ(doc.at("paths")
                .at("/api/v1/runs")
                .at("get")
                .at("responses")
                .at("200")
                .at("content")
                .at("application/json")
                .at("schema")
                .at("properties")
                .at("items")
                .at("items")
                .at("$ref"),
            "#/components/schemas/RunSummary");
  EXPECT_EQ(doc.at("paths").at("/api/v1/runs").at("get").at("parameters").as_array()[6].at("schema").at("type"),
            "integer")
      << "limit is typed";
  const std::string file = std::string(BATON_SOURCE_DIR) + "/docs/api/openapi.json";
  if (std::getenv("BATON_WRITE_OPENAPI")) std::ofstream(file) << served.body << '\n';
  std::ifstream in(file);
  std::stringstream committed;
  committed << in.rdbuf();
  boost::system::error_code ec;
  const json::value on_disk = json::parse(committed.str(), ec);
  ASSERT_FALSE(ec) << file << " is not JSON";
  EXPECT_TRUE(on_disk == doc) << file
                              << " is not what a node serves: regenerate it with BATON_WRITE_OPENAPI=1 "
                                 "build/cmd/baton_admin_api_test --gtest_filter=*TheTypedContract* and python3 -m "
                                 "json.tool";
}

// More to say when triggering: a run's own priority and timeout within what
// the job allows, and many runs in one call (all or none).
TEST_F(AdminApiTest, ATriggerSetsItsRunsPriorityAndTimeoutAndABatchCreatesAllOrNone) {
  ASSERT_EQ(send("PUT", "/api/v1/jobs/bulk",
                 R"({"priority":3,"timeout":"1m","parameters":{"n":{}},"tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})")
                .status,
            201);
  auto one = send("POST", "/api/v1/jobs/bulk/trigger", R"({"priority":-7,"timeout_ms":5000})");
  ASSERT_EQ(one.status, 201) << one.body;
  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"priority":4})", "priority 4 is outside what the job allows"},
           {R"({"timeout_ms":60001})", "longer than the job allows"},
           {R"({"priority":"high"})", "'priority' must be an integer"},
           {R"({"timeout_ms":0})", "'timeout_ms' must be a positive integer"}}) {
    auto refused = send("POST", "/api/v1/jobs/bulk/trigger", bad);
    EXPECT_EQ(refused.status, 400) << bad;
    EXPECT_NE(refused.body.find(why), std::string::npos) << refused.body;
  }
  auto batch = send("POST", "/api/v1/triggers",
                    R"({"runs":[{"job":"bulk","idempotency_key":"k1","parameters":{"n":"1"}},)"
                    R"({"job":"bulk","idempotency_key":"k2","priority":1}]})");
  ASSERT_EQ(batch.status, 201) << batch.body;
  const json::array runs = body(batch).as_object().at("runs").as_array();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_TRUE(runs[0].as_object().at("created").as_bool());
  const auto first = runs[0].as_object().at("run_id").as_int64();
  auto again =
      send("POST", "/api/v1/triggers", R"({"runs":[{"job":"bulk","idempotency_key":"k1","parameters":{"n":"1"}}]})");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(body(again).as_object().at("runs").as_array()[0].as_object().at("run_id").as_int64(), first);
  // The key with other parameters is another request (schemas/0048).
  auto other = send("POST", "/api/v1/triggers", R"({"runs":[{"job":"bulk","idempotency_key":"k1"}]})");
  EXPECT_EQ(other.status, 409) << other.body;
  EXPECT_EQ(error_code(other, "submitted with other parameters"), "idempotency_key_conflict");
  const std::string count = "SELECT count(*) FROM job_runs";
  baton::testing::DbInspector db(url);
  const std::string before = db.scalar(count);
  auto refused = send("POST", "/api/v1/triggers",
                      R"({"runs":[{"job":"bulk","idempotency_key":"k3"},{"job":"bulk","parameters":{"m":"x"}}]})");
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find(R"(runs[1] (job \"bulk\"): parameter 'm' is not declared)"), std::string::npos)
      << refused.body;
  EXPECT_EQ(db.scalar(count), before) << "nothing was triggered";
  auto unknown = send("POST", "/api/v1/triggers", R"({"runs":[{"job":"nope"}]})");
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  for (const auto& [bad, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"runs":[]})", "'runs' must be an array of 1-500"},
           {R"({"runs":[{"job":"bulk","password":"x"}]})", "runs[0]: unknown key"},
           {R"({"runs":[{"job":"bulk","parameters":{"api_key":"x"}}]})", "runs[0]: parameters.api_key"},
           {R"({"runs":[{"parameters":{}}]})", "runs[0]: 'job' must be"},
           {R"({"runs":[{"job":"bulk","idempotency_key":""}]})", "'idempotency_key' must be 1-200"}}) {
    auto r = send("POST", "/api/v1/triggers", bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(r.body.find(why), std::string::npos) << r.body;
  }
}

// A job's declarations (schemas/0027) refuse a trigger with an error that
// names the parameter, and nothing is created; a parameter declared
// `operate: false` takes an admin token.
TEST_F(AdminApiTest, ParameterDeclarationsRefuseATriggerNamingTheParameter) {
  ASSERT_EQ(send("PUT", "/api/v1/jobs/deploy",
                 R"({"parameters":{"env":{"enum":["staging","prod"],"required":true},)"
                 R"("force":{"type":"boolean","operate":false}},"tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})")
                .status,
            201);
  const auto runs = json::parse(admin_store.list_runs({}).value().items_json).as_array().size();
  auto undeclared = send("POST", "/api/v1/jobs/deploy/trigger", R"({"parameters":{"env":"prod","x":"1"}})");
  EXPECT_EQ(undeclared.status, 400);
  EXPECT_EQ(body(undeclared).as_object().at("code").as_string(), "invalid_parameters");
  EXPECT_NE(undeclared.body.find("parameter 'x' is not declared"), std::string::npos) << undeclared.body;
  auto wrong = send("POST", "/api/v1/jobs/deploy/trigger", R"({"parameters":{"env":"prod; touch pwned"}})");
  EXPECT_EQ(wrong.status, 400);
  EXPECT_NE(wrong.body.find("must be one of 'staging', 'prod'"), std::string::npos) << wrong.body;
  auto missing = send("POST", "/api/v1/jobs/deploy/trigger", "");
  EXPECT_EQ(missing.status, 400);
  EXPECT_NE(missing.body.find("parameter 'env' is required"), std::string::npos) << missing.body;
  EXPECT_EQ(json::parse(admin_store.list_runs({}).value().items_json).as_array().size(), runs) << "nothing created";
  EXPECT_EQ(send("POST", "/api/v1/jobs/deploy/trigger", R"({"parameters":{"env":"prod"}})").status, 201);
  EXPECT_EQ(send("POST", "/api/v1/jobs/deploy/trigger", R"({"parameters":{"env":"prod","force":true}})").status, 201)
      << "the test's token is an admin's";
  // The declarations are part of the job as the API shows it.
  auto shown = body(get("/api/v1/jobs/deploy")).as_object();
  EXPECT_EQ(json::serialize(shown.at("parameter_rules").at("force")), R"({"type":"boolean","operate":false})");
  // Apply-time checks name the key.
  auto bad =
      send("PUT", "/api/v1/jobs/bad",
           R"({"parameters":{"n":{"type":"integer","default":"ten"}},"tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("parameters.n.default: is not an integer"), std::string::npos) << bad.body;
}

TEST_F(AdminApiTest, PauseAndResumeAreRecordedWithTheChangeAndSurviveAnApply) {
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
  // Re-applying the job's file (a changed definition) does not undo an
  // operator's pause.
  ASSERT_EQ(send("PUT", "/api/v1/jobs/every-minute",
                 R"({"schedule":"0 * * * * *","max_attempts":2,"tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})")
                .status,
            200);
  EXPECT_TRUE(body(get("/api/v1/jobs/every-minute")).as_object()["paused"].as_bool());
  res = post("/api/v1/jobs/every-minute/resume");
  ASSERT_EQ(res.status, 200);
  EXPECT_FALSE(body(get("/api/v1/jobs/every-minute")).as_object()["paused"].as_bool());
  EXPECT_EQ(leader_store.scheduled_jobs()->size(), 1u);
  EXPECT_EQ(post("/api/v1/jobs/nope/pause").status, 404);
  // Every change is in the audit log, with what was before and after:
  // create, pause, update, resume (newest first).
  auto audit = body(get("/api/v1/audit?subject=job:every-minute")).as_object()["items"].as_array();
  ASSERT_EQ(audit.size(), 4u);
  auto resume = audit[0].as_object();
  EXPECT_EQ(audit[1].as_object().at("action").as_string(), "job.update");
  auto pause = audit[2].as_object();
  EXPECT_EQ(audit[3].as_object().at("action").as_string(), "job.create");
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

// docs/security.md, "Failed authentications": a credential that cannot be
// checked (the database is unreachable) is a 503 that says so and when to
// retry, never the database's error text (its host, its port) to a caller
// who has not authenticated; and token lookups use their own connection.
TEST_F(AdminApiTest, ACredentialThatCannotBeCheckedIsA503WithoutTheDatabasesWords) {
  store::pg::PgAdminStore unreachable{"postgresql://baton@127.0.0.1:1/nowhere?connect_timeout=1", "api-test-tokens"};
  api.set_token_stores({&unreachable});
  const std::string issued_shape = "baton_" + std::string(64, '7');
  for (const auto& [method, target] :
       {std::pair{"GET", "/api/v1/runs"}, std::pair{"POST", "/api/v1/jobs/manual/trigger"}}) {
    auto res = send(method, target, "", issued_shape);
    EXPECT_EQ(res.status, 503) << target << ": " << res.body;
    EXPECT_EQ(error_code(res, "retry"), "unavailable") << res.body;
    EXPECT_EQ(res.headers["Retry-After"], "1");
    EXPECT_EQ(res.body.find("127.0.0.1"), std::string::npos) << res.body;
    EXPECT_EQ(res.body.find("port"), std::string::npos) << res.body;
    EXPECT_EQ(res.body.find("nowhere"), std::string::npos) << res.body;
  }
  // The configured token needs no lookup; a made-up one of another shape is
  // refused without one (401, not 503: the database was not asked).
  EXPECT_EQ(get("/api/v1/runs").status, 200);
  EXPECT_EQ(get("/api/v1/runs", "not-a-token-of-any-issued-shape").status, 401);
  EXPECT_EQ(send("POST", "/api/v1/enroll", "{\"worker_id\": \"w9\"}", "made-up").status, 401);
}

// docs/operations.md, "Idempotency keys" (security review N3,
// schemas/0048): a key names one request of one caller for one job.
// Another caller's trigger with it is refused, not answered with that run
// (before, it got `created: false` and a run of whatever job had the key);
// the same key on another job is another run; the same caller with other
// parameters is refused; an event's dedupe key likewise, per kind.
TEST_F(AdminApiTest, AKeyNamesOneRequestOfOneCallerForOneJob) {
  const std::string app_a = token("app-a", "operate"), app_b = token("app-b", "operate");
  auto keyed = [&](const std::string& job, const std::string& key, const std::string& tok,
                   const std::string& params = "") {
    return api.handle({"POST",
                       "/api/v1/jobs/" + job + "/trigger",
                       {{"authorization", "Bearer " + tok}, {"idempotency-key", key}},
                       params.empty() ? "" : "{\"parameters\":" + params + "}"});
  };
  auto first = keyed("manual", "order-43", app_b, R"({"region":"eu"})");
  ASSERT_EQ(first.status, 201) << first.body;
  const auto run = body(first).as_object().at("run_id").as_int64();
  // The same request again (a lost answer): the same run.
  auto retried = keyed("manual", "order-43", app_b, R"({"region":"eu"})");
  ASSERT_EQ(retried.status, 200) << retried.body;
  EXPECT_EQ(body(retried).as_object().at("run_id").as_int64(), run);
  // Another caller: refused, and told nothing of the run.
  auto squatted = keyed("manual", "order-43", app_a, R"({"region":"eu"})");
  EXPECT_EQ(squatted.status, 409) << squatted.body;
  EXPECT_EQ(error_code(squatted, "taken by another caller"), "idempotency_key_conflict");
  EXPECT_EQ(squatted.body.find(std::to_string(run)), std::string::npos) << squatted.body;
  // The same caller with other parameters: refused, naming its run.
  auto changed = keyed("manual", "order-43", app_b, R"({"region":"us"})");
  EXPECT_EQ(changed.status, 409) << changed.body;
  EXPECT_EQ(error_code(changed, "run " + std::to_string(run) + ", submitted with other parameters"),
            "idempotency_key_conflict");
  // A key taken first on another job takes nothing from this one.
  auto elsewhere = keyed("every-minute", "order-44", app_a);
  ASSERT_EQ(elsewhere.status, 201) << elsewhere.body;
  auto mine = keyed("manual", "order-44", app_b);
  ASSERT_EQ(mine.status, 201) << mine.body;
  EXPECT_NE(body(mine).as_object().at("run_id").as_int64(), body(elsewhere).as_object().at("run_id").as_int64());
  // In a batch: the item is refused, and nothing of the batch is made.
  auto batch = send("POST", "/api/v1/triggers",
                    R"({"runs":[{"job":"every-minute","idempotency_key":"b-1"},)"
                    R"({"job":"manual","idempotency_key":"order-43","parameters":{"region":"eu"}}]})",
                    app_a);
  EXPECT_EQ(batch.status, 409) << batch.body;
  EXPECT_EQ(error_code(batch, "runs[1]"), "idempotency_key_conflict");
  EXPECT_EQ(baton::testing::DbInspector(url).scalar("SELECT count(*) FROM job_runs WHERE idempotency_key = 'b-1'"),
            "0");

  // Events: a dedupe key per kind and per caller.
  auto event = [&](const std::string& kind, const std::string& tok) {
    return send("POST", "/api/v1/events", R"({"kind":")" + kind + R"(","dedupe_key":"shipment-7"})", tok);
  };
  auto posted = event("shipped", app_b);
  ASSERT_EQ(posted.status, 201) << posted.body;
  EXPECT_EQ(event("shipped", app_b).status, 200);  // the same event again
  auto taken = event("shipped", app_a);
  EXPECT_EQ(taken.status, 409) << taken.body;
  EXPECT_EQ(error_code(taken, "was used by another caller"), "conflict");
  EXPECT_EQ(event("delivered", app_a).status, 201);  // another kind, another event
}

// docs/security.md, "Denial of service" (review N6): the API's lists,
// searches and series run on a connection of their own. A read held there
// (here by a lock on dead_letters, as a slow unindexed search would hold
// it) delays neither a trigger, on the API's own connection, nor the reads
// behind it past read_wait: they are answered 503 reads_busy, Retry-After.
// Each answer is checked to come while the held read is still waiting, so
// neither waited behind it.
TEST_F(AdminApiTest, AReadHeldOnItsConnectionDelaysNoTriggerAndHoldsNoOtherRead) {
  store::pg::PgAdminStore tokens{url, "api-test-tokens"}, reads{url, "api-test-reads"};
  api.set_token_stores({&tokens}, &reads);
  baton::testing::DbInspector db(url);
  std::thread locker(
      [&] { db.scalar("BEGIN; LOCK TABLE dead_letters IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(4); COMMIT"); });
  auto waiting_on_lock = [&](const std::string& application) {
    for (int i = 0; i < 250; ++i) {
      if (db.scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + application +
                    "' AND wait_event_type = 'Lock'") == "1")
        return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  };
  for (int i = 0; i < 250 && db.scalar("SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
                                       " WHERE c.relname = 'dead_letters' AND l.granted"
                                       " AND l.mode = 'AccessExclusiveLock'") != "1";
       ++i)
    std::this_thread::sleep_for(20ms);
  auto held = std::async(std::launch::async, [&] { return get("/api/v1/dead-letters"); });
  ASSERT_TRUE(waiting_on_lock("api-test-reads")) << "the read did not reach its own connection";

  auto triggered = post("/api/v1/jobs/every-minute/trigger");
  EXPECT_EQ(triggered.status, 201) << triggered.body;
  EXPECT_EQ(held.wait_for(0s), std::future_status::timeout) << "the trigger waited for the held read";

  auto busy = get("/api/v1/runs");
  EXPECT_EQ(busy.status, 503) << busy.body;
  EXPECT_EQ(error_code(busy, "read connection"), "reads_busy");
  EXPECT_EQ(busy.headers["Retry-After"], "1");
  EXPECT_EQ(metrics.reads_busy.load(), 1);
  EXPECT_EQ(held.wait_for(0s), std::future_status::timeout) << "the second read waited for the held one";

  EXPECT_EQ(held.get().status, 200);  // once the lock is gone
  locker.join();
  EXPECT_EQ(get("/api/v1/runs").status, 200);
}

// The dashboard cannot be framed by another site (clickjacking of its
// cancel and evict buttons) and runs only its own script.
TEST_F(AdminApiTest, TheDashboardRefusesToBeFramedAndRunsOnlyItsOwnScript) {
  const std::string node_endpoint = "127.0.0.1:7001";
  ASSERT_TRUE(lease.record_node(NodeIdentity{"n1", "n1-i1", node_endpoint}, "leader", epoch));
  // A registered endpoint that is not a HOST:PORT never reaches the header.
  ASSERT_TRUE(lease.record_node(NodeIdentity{"n9", "n9-i1", "evil.example; script-src *"}, "follower", Epoch{0}));
  for (const char* target : {"/", "/dashboard/app.js"}) {
    auto res = api.handle({"GET", target, {}, ""});
    ASSERT_EQ(res.status, 200) << target;
    const std::string csp = res.headers["Content-Security-Policy"];
    EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
    EXPECT_NE(csp.find("default-src 'self'"), std::string::npos) << csp;
    EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
    // Its connections go to this node and the cluster's nodes, nowhere else
    // (checked failing with the old "connect-src 'self' http: https:").
    EXPECT_EQ(csp.find(" http:"), std::string::npos) << csp;
    EXPECT_EQ(csp.find(" https:"), std::string::npos) << csp;
    EXPECT_NE(csp.find("connect-src 'self' " + node_endpoint + ";"), std::string::npos) << csp;
    EXPECT_EQ(csp.find("evil"), std::string::npos) << csp;
    EXPECT_EQ(res.headers["X-Frame-Options"], "DENY");
    EXPECT_EQ(res.headers["Referrer-Policy"], "no-referrer");
  }
}

// Path parameters are percent-decoded (Boost.URL), and what they decode to
// is judged like any other: an encoded '/' does not split a segment, it is
// a character a name cannot hold.
TEST_F(AdminApiTest, PathParametersArePercentDecodedBeforeTheyAreJudged) {
  auto res = get("/api/v1/jobs/every%2Dminute");
  EXPECT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(body(res).as_object()["name"].as_string(), "every-minute");
  res = get("/api/v1/jobs/every%2Fminute");
  EXPECT_EQ(res.status, 400) << res.body;
  res = get("/api/v1/jobs/every%zzminute");
  EXPECT_EQ(res.status, 400) << res.body;
  EXPECT_NE(res.body.find("not a valid URL path"), std::string::npos) << res.body;
  // A worker id holds only the node ids' characters.
  res = send("POST", "/api/v1/workers/w%201/enrollments", R"({"capacity": 1})");
  EXPECT_EQ(res.status, 400) << res.body;
  EXPECT_NE(res.body.find("letters, digits"), std::string::npos) << res.body;
}

TEST_F(AdminApiTest, TokensCarryARoleAndOnlyTheirHashIsStored) {
  const std::string reader = token("dashboard", "read");
  const std::string operator_token = token("oncall", "operate");
  EXPECT_EQ(get("/api/v1/runs", reader).status, 200);
  // Every /api/v1 route needs a token, reads too.
  auto res = api.handle({"GET", "/api/v1/runs", {}, ""});
  EXPECT_EQ(res.status, 401);
  EXPECT_EQ(error_code(res, "Bearer"), "unauthenticated");
  EXPECT_EQ(get("/api/v1/runs", "baton_" + std::string(64, '0')).status, 401);
  // A role below the route's is refused by name, and nothing changes.
  res = send("POST", "/api/v1/jobs/manual/pause", "", reader);
  EXPECT_EQ(res.status, 403);
  EXPECT_EQ(error_code(res, "operate"), "forbidden");
  EXPECT_FALSE(body(get("/api/v1/jobs/manual")).as_object()["paused"].as_bool());
  EXPECT_EQ(send("POST", "/api/v1/jobs/manual/pause", "", operator_token).status, 200);
  EXPECT_EQ(last_audit()["actor"].as_string(), "oncall") << "the token's name is the actor";
  EXPECT_EQ(send("PUT", "/api/v1/settings/dispatch_enabled", "{\"value\":false}", operator_token).status, 403);
  EXPECT_EQ(get("/api/v1/tokens", operator_token).status, 403);
  // Listed without the token; the database holds its SHA-256 only.
  auto listed = body(get("/api/v1/tokens")).as_object()["items"].as_array();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_FALSE(listed[0].as_object().contains("token"));
  auto grant = admin_store.token_by_hash(sha256_hex(reader));
  ASSERT_TRUE(grant && *grant);
  EXPECT_EQ((*grant)->role, "read");
  EXPECT_FALSE(*admin_store.token_by_hash(reader)) << "the token itself is not a key";
  // A second live token of one name is refused.
  res = send("POST", "/api/v1/tokens", "{\"name\":\"oncall\",\"role\":\"admin\"}");
  EXPECT_EQ(res.status, 409);
  EXPECT_EQ(send("POST", "/api/v1/tokens", "{\"name\":\"x\",\"role\":\"root\"}").status, 400);
  // Revoked: another node, which has not cached it, refuses it at once.
  const auto id = listed[0].as_object()["id"].as_int64();
  ASSERT_EQ(send("POST", "/api/v1/tokens/" + std::to_string(id) + "/revoke", "").status, 200);
  AdminApi other{
      AdminApiPorts{[this] { return NodeStatus{"n2", "n2-i1", "follower", epoch.value, "n1", "", 0}; }, {}, {}},
      admin_store, metrics, clock, "secret"};
  EXPECT_EQ(other.handle({"GET", "/api/v1/runs", {{"authorization", "Bearer " + operator_token}}, ""}).status, 401);
  // This node cached it as valid: it refuses it once the cache (5 s) expires.
  EXPECT_EQ(get("/api/v1/runs", operator_token).status, 200);
  clock.advance(Millis{5001});
  EXPECT_EQ(get("/api/v1/runs", operator_token).status, 401);
  EXPECT_EQ(last_audit()["action"].as_string(), "token.revoke");
}

// A token made with a time to live is refused once it has passed, by every
// node (here: a node that has not cached it), and listed with its expiry.
TEST_F(AdminApiTest, ATokenWithATimeToLiveIsRefusedOnceItHasPassed) {
  auto res = send("POST", "/api/v1/tokens", R"({"name":"ci","role":"read","ttl_seconds":3600})");
  ASSERT_EQ(res.status, 201) << res.body;
  const std::string ci(body(res).as_object()["token"].as_string());
  EXPECT_FALSE(body(res).as_object()["expires_at"].is_null()) << res.body;
  EXPECT_EQ(get("/api/v1/runs", ci).status, 200);
  EXPECT_EQ(send("POST", "/api/v1/tokens", R"({"name":"x","role":"read","ttl_seconds":5})").status, 400);
  EXPECT_EQ(send("POST", "/api/v1/tokens", R"({"name":"x","role":"read","ttl_seconds":"1h"})").status, 400);
  // An hour later (the expiry moved into the past instead of waiting).
  baton::testing::DbInspector(url).scalar(
      "UPDATE api_tokens SET created_at = now() - interval '2 hours', expires_at = now() - interval '1 hour'"
      " WHERE name = 'ci'");
  AdminApi other{
      AdminApiPorts{[this] { return NodeStatus{"n2", "n2-i1", "follower", epoch.value, "n1", "", 0}; }, {}, {}},
      admin_store, metrics, clock, "secret"};
  EXPECT_EQ(other.handle({"GET", "/api/v1/runs", {{"authorization", "Bearer " + ci}}, ""}).status, 401);
  auto listed = body(get("/api/v1/tokens")).as_object()["items"].as_array();
  ASSERT_FALSE(listed.empty());
  EXPECT_EQ(listed[0].as_object()["name"].as_string(), "ci");
  EXPECT_FALSE(listed[0].as_object()["expires_at"].is_null());
  // A token without one does not expire.
  EXPECT_TRUE(
      body(send("POST", "/api/v1/tokens", R"({"name":"forever","role":"read"})")).as_object()["expires_at"].is_null());
}

TEST_F(AdminApiTest, JobsAreCreatedReplacedWithAVersionAndDeletedSoftly) {
  const std::string def =
      R"({"name":"nightly","schedule":"0 0 3 * * *","max_attempts":2,"tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})";
  auto res = send("POST", "/api/v1/jobs", def);
  ASSERT_EQ(res.status, 201) << res.body;
  EXPECT_EQ(send("POST", "/api/v1/jobs", def).status, 409);
  auto job = body(get("/api/v1/jobs/nightly")).as_object();
  EXPECT_EQ(job["max_attempts"].as_int64(), 2);
  const auto version = job["version"].as_int64();
  auto created = last_audit();
  EXPECT_EQ(created["action"].as_string(), "job.create");
  EXPECT_EQ(created["details"].at("after").at("schedule").as_string(), "0 0 3 * * *");

  // A dry run says what would change and changes nothing.
  const std::string changed =
      R"({"schedule":"0 0 4 * * *","max_attempts":2,"tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})";
  res = send("PUT", "/api/v1/jobs/nightly?dry_run=true", changed);
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(body(res).as_object()["action"].as_string(), "update");
  EXPECT_EQ(json::serialize(body(res).as_object()["changes"]), R"(["schedule"])");
  EXPECT_EQ(body(get("/api/v1/jobs/nightly")).as_object()["schedule"].as_string(), "0 0 3 * * *");
  // Applying the same definition again is no change at all.
  res = send("PUT", "/api/v1/jobs/nightly", def);
  EXPECT_EQ(body(res).as_object()["action"].as_string(), "unchanged");
  EXPECT_EQ(body(get("/api/v1/jobs/nightly")).as_object()["version"].as_int64(), version);
  // A stale version is refused with the current definition; nothing changes.
  res = send("PUT", "/api/v1/jobs/nightly?version=" + std::to_string(version + 7), changed);
  ASSERT_EQ(res.status, 409) << res.body;
  EXPECT_EQ(body(res).as_object()["current"].at("version").as_int64(), version);
  res = send("PUT", "/api/v1/jobs/nightly?version=" + std::to_string(version), changed);
  ASSERT_EQ(res.status, 200) << res.body;
  auto update = last_audit();
  EXPECT_EQ(update["action"].as_string(), "job.update");
  EXPECT_EQ(update["details"].at("before").at("schedule").as_string(), "0 0 3 * * *");
  EXPECT_EQ(update["details"].at("after").at("schedule").as_string(), "0 0 4 * * *");

  // Bad definitions are refused by key, with nothing written.
  res = send("PUT", "/api/v1/jobs/nightly", R"({"schedule":"61 * * * *","tasks":[]})");
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(error_code(res, "schedule"), "invalid_job");
  EXPECT_NE(body(res).as_object()["message"].as_string().find("tasks"), std::string::npos) << res.body;
  EXPECT_EQ(error_code(send("PUT", "/api/v1/jobs/nightly", R"({"name": "other", "tasks": [)"), "JSON"), "bad_json");
  EXPECT_EQ(error_code(send("PUT", "/api/v1/jobs/nightly",
                            R"({"name":"other","tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})"),
                       "URL"),
            "invalid_job");
  EXPECT_EQ(error_code(send("PUT", "/api/v1/jobs/nightly", R"({"colour":"red"})"), "colour"), "invalid_job");
  EXPECT_EQ(send("PUT", "/api/v1/jobs/nightly",
                 R"({"selector":{"zone":{"a":1}},"tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})")
                .status,
            400);
  EXPECT_EQ(send("PUT", "/api/v1/jobs/nightly", std::string(70000, ' ')).status, 413);
  EXPECT_EQ(body(get("/api/v1/jobs/nightly")).as_object()["schedule"].as_string(), "0 0 4 * * *");

  // Deleted softly: gone from the list, its runs kept, the name reusable.
  ASSERT_EQ(send("POST", "/api/v1/jobs/nightly/trigger", "").status, 201);
  res = send("DELETE", "/api/v1/jobs/nightly?version=1", "");
  EXPECT_EQ(res.status, 409);
  res = send("DELETE", "/api/v1/jobs/nightly", "");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(get("/api/v1/jobs/nightly").status, 404);
  EXPECT_EQ(body(get("/api/v1/runs?job=nightly")).as_object()["items"].as_array().size(), 1u);
  EXPECT_EQ(send("POST", "/api/v1/jobs/nightly/trigger", "").status, 404);
  EXPECT_EQ(last_audit()["action"].as_string(), "job.delete");
  EXPECT_EQ(send("POST", "/api/v1/jobs", def).status, 201);
}

TEST_F(AdminApiTest, WorkersAreDrainedEvictedAndResumedAndTheLeaderReadsIt) {
  auto res = send("POST", "/api/v1/workers/w1/drain", "");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(body(get("/api/v1/workers/w1")).as_object()["admin_state"].as_string(), "draining");
  auto controls = leader_store.read_controls();
  ASSERT_TRUE(controls);
  EXPECT_EQ(controls->worker_holds.at("w1"), "draining");
  EXPECT_EQ(last_audit()["action"].as_string(), "worker.drain");
  ASSERT_EQ(send("POST", "/api/v1/workers/w1/evict", "").status, 200);
  EXPECT_EQ(leader_store.read_controls()->worker_holds.at("w1"), "evicted");
  ASSERT_EQ(send("POST", "/api/v1/workers/w1/resume", "").status, 200);
  EXPECT_TRUE(leader_store.read_controls()->worker_holds.empty());
  auto resumed = last_audit();
  EXPECT_EQ(resumed["details"].at("before").at("admin_state").as_string(), "evicted");
  EXPECT_EQ(resumed["details"].at("after").at("admin_state").as_string(), "active");
  EXPECT_EQ(send("POST", "/api/v1/workers/nobody/drain", "").status, 404);
  EXPECT_EQ(get("/api/v1/workers/nobody").status, 404);
  auto shown = body(get("/api/v1/workers/w1")).as_object();
  EXPECT_EQ(shown["runs"].as_array().size(), 1u) << "the run it holds";
}

TEST_F(AdminApiTest, SettingsAreTypedAndReachTheLeadersControls) {
  auto all = body(get("/api/v1/settings")).as_object();
  EXPECT_TRUE(all.at("dispatch_enabled").at("value").as_bool());
  EXPECT_EQ(all.size(), 11u) << "only settings a node applies are offered";
  EXPECT_EQ(all.at("retention_days").at("value").as_int64(), 30);
  EXPECT_TRUE(all.at("reassign_after_ms").at("value").is_null()) << "unset: the node config's";
  EXPECT_EQ(all.at("reassign_after_ms").at("default").as_int64(), 10000);
  EXPECT_EQ(all.at("reassign_after_ms").at("max").as_int64(), 86400000);
  ASSERT_EQ(send("PUT", "/api/v1/settings/dispatch_enabled", R"({"value":false})").status, 200);
  EXPECT_FALSE(leader_store.read_controls()->dispatch_enabled);
  auto audit = last_audit();
  EXPECT_EQ(audit["action"].as_string(), "setting.set");
  EXPECT_TRUE(audit["details"].at("before").as_bool());
  EXPECT_FALSE(audit["details"].at("after").as_bool());
  EXPECT_EQ(body(get("/api/v1/settings")).as_object().at("dispatch_enabled").at("updated_by").as_string(), "config");
  EXPECT_EQ(error_code(send("PUT", "/api/v1/settings/dispatch_enabled", R"({"value":"no"})"), "boolean"),
            "bad_request");
  EXPECT_EQ(error_code(send("PUT", "/api/v1/settings/reassign_after", R"({"value":3})"), "reassign_after_ms"),
            "not_found");
  EXPECT_EQ(error_code(send("PUT", "/api/v1/settings/reassign_after_ms", R"({"value":3})"),
                       "setting 'reassign_after_ms' is a whole number of milliseconds from 1000 to 86400000"),
            "bad_request");
  // Timings are checked together: the margin must cover the timeout.
  EXPECT_EQ(error_code(send("PUT", "/api/v1/settings/heartbeat_timeout_ms", R"({"value":20000})"),
                       "continuation_margin_ms (10000) must be at least heartbeat_timeout_ms (20000)"),
            "bad_request");
  ASSERT_EQ(send("PUT", "/api/v1/settings/continuation_margin_ms", R"({"value":30000})").status, 200);
  ASSERT_EQ(send("PUT", "/api/v1/settings/heartbeat_timeout_ms", R"({"value":20000})").status, 200);
  EXPECT_EQ(error_code(send("PUT", "/api/v1/settings/continuation_margin_ms", R"({"value":null})"),
                       "must be at least heartbeat_timeout_ms"),
            "bad_request")
      << "unsetting the margin would break the rule too";
  ASSERT_EQ(send("PUT", "/api/v1/settings/heartbeat_timeout_ms", R"({"value":null})").status, 200);
  EXPECT_EQ(last_audit()["details"].at("after"), json::value(nullptr));
  EXPECT_EQ(leader_store.read_controls()->settings.count("heartbeat_timeout_ms"), 0u) << "null unsets the key";
  EXPECT_EQ(leader_store.read_controls()->settings.at("continuation_margin_ms"), std::vector<std::string>{"30000"});
  EXPECT_EQ(error_code(send("PUT", "/api/v1/settings/dispatch_paused_selectors", R"({"value":["pool"]})"),
                       "\"pool\" is not k=v[,k=v]"),
            "bad_request");
  ASSERT_EQ(
      send("PUT", "/api/v1/settings/dispatch_paused_selectors", R"({"value":["pool=gpu","zone=b,pool=cpu"]})").status,
      200);
  EXPECT_EQ(leader_store.read_controls()->settings.at("dispatch_paused_selectors"),
            (std::vector<std::string>{"pool=gpu", "zone=b,pool=cpu"}));
  EXPECT_EQ(error_code(send("PUT", "/api/v1/settings/retention_days", R"({"value":0})"), "1 to 36500"), "bad_request");
  EXPECT_EQ(error_code(send("PUT", "/api/v1/settings/retention_days", R"({"value":"30"})"), "whole number"),
            "bad_request");
  ASSERT_EQ(send("PUT", "/api/v1/settings/retention_days", R"({"value":90})").status, 200);
  EXPECT_EQ(send("PUT", "/api/v1/settings/dispatch_enabled", "[true]").status, 400);
  EXPECT_FALSE(leader_store.read_controls()->dispatch_enabled) << "a refused change changes nothing";
}

TEST_F(AdminApiTest, ADeadLetterIsShownTriagedAndReplayedAsANewRunOfItsJob) {
  const auto failed = failed_run();
  auto letters = body(get("/api/v1/dead-letters")).as_object()["items"].as_array();
  ASSERT_EQ(letters.size(), 1u);
  const auto letter = letters[0].as_object().at("id").as_int64();
  const std::string path = "/api/v1/dead-letters/" + std::to_string(letter);
  EXPECT_EQ(body(get(path)).as_object()["run_id"].as_int64(), failed);
  auto res = send("POST", path + "/triage", R"({"status":"acknowledged","notes":"disk full on w1"})");
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(body(get(path)).as_object()["notes"].as_string(), "disk full on w1");
  EXPECT_EQ(send("POST", path + "/triage", R"({"status":"gone"})").status, 400);
  EXPECT_EQ(send("POST", path + "/triage", R"({"status":"closed","colour":1})").status, 400);
  EXPECT_EQ(body(get(path)).as_object()["triage_status"].as_string(), "acknowledged");

  res = send("POST", path + "/replay", "");
  ASSERT_EQ(res.status, 201) << res.body;
  const auto replayed = body(res).as_object()["run_id"].as_int64();
  auto run = body(get("/api/v1/runs/" + std::to_string(replayed))).as_object();
  EXPECT_EQ(run["job"].as_string(), "manual");
  EXPECT_EQ(run["trigger_kind"].as_string(), "replay");
  EXPECT_EQ(run["rerun_of"].as_int64(), failed);
  EXPECT_EQ(body(get(path)).as_object()["triage_status"].as_string(), "replayed");
  auto audit = last_audit();
  EXPECT_EQ(audit["action"].as_string(), "dead_letter.replay");
  EXPECT_EQ(audit["details"].at("after").at("run_id").as_int64(), replayed);

  // Many at once: one result each, an unknown id among them.
  const auto second = failed_run();
  letters = body(get("/api/v1/dead-letters?status=pending")).as_object()["items"].as_array();
  ASSERT_EQ(letters.size(), 1u);
  res = send("POST", "/api/v1/dead-letters/replay",
             "{\"ids\":[" + std::to_string(letters[0].as_object().at("id").as_int64()) + ",999999]}");
  ASSERT_EQ(res.status, 200) << res.body;
  auto results = body(res).as_object()["results"].as_array();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].as_object().contains("run_id"));
  EXPECT_EQ(results[1].as_object().at("error").as_string(), "not_found");
  EXPECT_EQ(body(get("/api/v1/runs/" + std::to_string(results[0].as_object().at("run_id").as_int64())))
                .as_object()["rerun_of"]
                .as_int64(),
            second);
  EXPECT_EQ(send("POST", "/api/v1/dead-letters/replay", R"({"ids":[]})").status, 400);
  EXPECT_EQ(send("POST", "/api/v1/dead-letters/replay", R"({"ids":["1"]})").status, 400);
}

TEST_F(AdminApiTest, AFinishedRunIsReRunAndARunningOneIsNot) {
  const auto failed = failed_run();
  auto res = send("POST", "/api/v1/runs/" + std::to_string(failed) + "/rerun", "");
  ASSERT_EQ(res.status, 201) << res.body;
  const auto again = body(res).as_object()["run_id"].as_int64();
  auto original = body(get("/api/v1/runs/" + std::to_string(failed))).as_object();
  EXPECT_EQ(json::serialize(original["reruns"]), "[" + std::to_string(again) + "]");
  // What an operator asks of a run: every transition with its epoch.
  auto transitions = original["transitions"].as_array();
  ASSERT_GE(transitions.size(), 4u);
  EXPECT_EQ(transitions.back().as_object().at("to").as_string(), "FAILED");
  EXPECT_EQ(transitions.back().as_object().at("leader_epoch").as_int64(), epoch.value);
  EXPECT_EQ(original["dead_letter"].as_object().at("triage_status").as_string(), "pending");
  res = send("POST", "/api/v1/runs/" + std::to_string(ids[2]) + "/rerun", "");
  EXPECT_EQ(res.status, 409) << "an ASSIGNED run is not re-run";
  EXPECT_EQ(send("POST", "/api/v1/runs/999999/rerun", "").status, 404);
  // A follower sends run-creating calls to the leader.
  role = "follower";
  res = send("POST", "/api/v1/runs/" + std::to_string(failed) + "/rerun", "");
  EXPECT_EQ(res.status, 307);
  EXPECT_EQ(res.headers["Location"], "https://127.0.0.1:7001/api/v1/runs/" + std::to_string(failed) + "/rerun");
}

// The nodes as they are, not as they last said (issue 63): only the
// lease's holder is the leader; a node whose heartbeat is 12 s old, or
// that says it leads without the lease, is lost; each row has the epoch
// that node leads or last led.
TEST_F(AdminApiTest, NodesShowWhoLeadsAndADeadLeaderIsLost) {
  ASSERT_TRUE(lease.record_node(NodeIdentity{"n1", "n1-i1", "127.0.0.1:7001"}, "leader", epoch));
  ASSERT_TRUE(lease.record_node(NodeIdentity{"n2", "n2-i1", "127.0.0.1:7002"}, "follower", Epoch{0}));
  // n3 says it leads the lease's epoch, which n1 holds (as a leader killed
  // after its successor won would, with the epoch before).
  ASSERT_TRUE(lease.record_node(NodeIdentity{"n3", "n3-i1", "127.0.0.1:7003"}, "leader", epoch));
  ASSERT_TRUE(lease.record_node(NodeIdentity{"n4", "n4-i1", "127.0.0.1:7004"}, "follower", Epoch{0}));
  baton::testing::DbInspector db(url);
  db.scalar(
      "WITH u AS (UPDATE nodes SET last_heartbeat_at = now() - interval '13 seconds' WHERE node_id = 'n4'"
      " RETURNING 1) SELECT count(*) FROM u");
  auto items = body(get("/api/v1/nodes")).as_object()["items"].as_array();
  ASSERT_EQ(items.size(), 4u);
  auto row = [&](int i) { return items[static_cast<std::size_t>(i)].as_object(); };
  EXPECT_EQ(row(0).at("node_id").as_string(), "n1");
  EXPECT_EQ(row(0).at("role").as_string(), "leader");
  EXPECT_TRUE(row(0).at("leads").as_bool());
  EXPECT_EQ(row(0).at("epoch").as_int64(), epoch.value);
  EXPECT_EQ(row(1).at("role").as_string(), "follower");
  EXPECT_FALSE(row(1).at("leads").as_bool());
  EXPECT_TRUE(row(1).at("epoch").is_null()) << "it has not led";
  EXPECT_TRUE(row(1).contains("heartbeat_age_ms"));
  EXPECT_EQ(row(2).at("role").as_string(), "lost") << "it says it leads, and does not hold the lease";
  EXPECT_EQ(row(2).at("reported_role").as_string(), "leader");
  EXPECT_EQ(row(2).at("epoch").as_int64(), epoch.value) << "the epoch it last led";
  EXPECT_EQ(row(3).at("role").as_string(), "lost") << "its heartbeat is 13 s old";
  // A follower that led keeps the epoch it led until its next incarnation.
  ASSERT_TRUE(lease.record_node(NodeIdentity{"n3", "n3-i1", "127.0.0.1:7003"}, "follower", Epoch{0}));
  items = body(get("/api/v1/nodes")).as_object()["items"].as_array();
  EXPECT_EQ(row(2).at("role").as_string(), "follower");
  EXPECT_EQ(row(2).at("epoch").as_int64(), epoch.value);
  ASSERT_TRUE(lease.record_node(NodeIdentity{"n3", "n3-i2", "127.0.0.1:7003"}, "follower", Epoch{0}));
  items = body(get("/api/v1/nodes")).as_object()["items"].as_array();
  EXPECT_TRUE(row(2).at("epoch").is_null()) << "a new incarnation has led nothing yet";
}

TEST_F(AdminApiTest, BadInputOnEveryRouteGetsAJsonErrorAndChangesNothing) {
  const std::string reader = token("reader", "read");
  auto snapshot = [&] {
    std::string all;
    for (const char* list : {"/api/v1/jobs?limit=500", "/api/v1/settings", "/api/v1/workers", "/api/v1/dead-letters",
                             "/api/v1/runs?limit=500", "/api/v1/audit?limit=500", "/api/v1/tokens"})
      all += get(list).body;
    return all;
  };
  const std::string before = snapshot();
  /// The route's path with every parameter replaced by `value`.
  auto path_of = [](const ApiRoute& r, const std::string& id, const std::string& name) {
    std::string p = r.pattern;
    for (const auto& [param, value] : std::vector<std::pair<std::string, std::string>>{
             {"{id}", id}, {"{name}", name}, {"{key}", name}, {"{worker}", name}})
      if (auto at = p.find(param); at != std::string::npos) p.replace(at, param.size(), value);
    return p;
  };
  auto json_error = [&](const HttpResponse& r, int status, const std::string& where) {
    EXPECT_EQ(r.status, status) << where << ": " << r.body;
    boost::system::error_code ec;
    auto v = json::parse(r.body, ec);
    ASSERT_FALSE(ec) << where << ": not JSON: " << r.body;
    EXPECT_TRUE(v.is_object() && v.as_object().contains("code") && v.as_object().contains("message"))
        << where << ": " << r.body;
  };
  int checked = 0;
  for (const auto& route : api.routes()) {
    const std::string where = route.method + " " + route.pattern;
    const std::string path = path_of(route, "999999", "no-such-thing");
    const std::string valid_body = route.pattern == "/api/v1/dead-letters/replay"        ? R"({"ids":[999999]})"
                                   : route.pattern == "/api/v1/enroll"                   ? R"({"worker_id":"w"})"
                                   : route.pattern.find("triage") != std::string::npos   ? R"({"status":"closed"})"
                                   : route.pattern.find("settings") != std::string::npos ? R"({"value":false})"
                                                                                         : "";
    // No token, an unknown token, a role too low (the typed contract is
    // open to all: a client generator needs it before any token).
    if (route.pattern == "/api/v1/openapi.json") {
      EXPECT_EQ(api.handle({route.method, path, {}, ""}).status, 200) << where << " without a token";
      ++checked;
      continue;
    }
    json_error(api.handle({route.method, path, {}, valid_body}), 401, where + " without a token");
    json_error(send(route.method, path, valid_body, "baton_" + std::string(64, 'f')), 401, where + " unknown token");
    if (route.need > Role::read) json_error(send(route.method, path, valid_body, reader), 403, where + " as read");
    // Malformed ids in the path.
    if (route.pattern.find("{id}") != std::string::npos)
      json_error(send(route.method, path_of(route, "abc", "x"), valid_body), 400, where + " id abc");
    if (route.pattern.find("{name}") != std::string::npos)
      json_error(send(route.method, path_of(route, "1", "bad name!"), valid_body), 400, where + " bad name");
    if (route.pattern.find("{worker}") != std::string::npos)
      json_error(send(route.method, path_of(route, "1", std::string(201, 'w')), valid_body), 400, where + " long id");
    // Unknown ids (a PUT of a job creates it: its unknown case is a version).
    const bool creates = route.method == "PUT" && route.pattern == "/api/v1/jobs/{name}";
    if (!creates && (route.pattern.find('{') != std::string::npos || route.pattern == "/api/v1/dead-letters/replay") &&
        (route.body.empty() || route.body.rfind("optional", 0) == 0 || !valid_body.empty()))
      json_error(send(route.method, path, valid_body), 404, where + " unknown");
    // Bodies: malformed, of the wrong type, oversized.
    // (Enrollment judges the body of a bootstrap token of the issued shape:
    // one of another shape is refused first, as the API's routes refuse a
    // caller without a token before its query.)
    if (!route.body.empty()) {
      const std::string t = route.pattern == "/api/v1/enroll" ? "baton_" + std::string(64, 'b') : "secret";
      json_error(send(route.method, path, "{\"value\": tru", t), 400, where + " malformed JSON");
      json_error(send(route.method, path, "[1, 2]", t), 400, where + " an array");
      json_error(send(route.method, path, "{\"x\":\"" + std::string(70000, 'x') + "\"}", t), 413, where + " oversized");
    }
    // An unknown query parameter.
    json_error(send(route.method, path + "?colour=red", valid_body), 400, where + " unknown parameter");
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(api.routes().size()));
  // Wrong types inside a body, and stale versions.
  json_error(send("PUT", "/api/v1/settings/dispatch_enabled", R"({"value":"false"})"), 400, "setting as a string");
  json_error(send("POST", "/api/v1/tokens", R"({"name":7,"role":"read"})"), 400, "token name a number");
  json_error(
      send("PUT", "/api/v1/jobs/manual", R"({"max_attempts":"many","tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})"),
      400, "max_attempts a word");
  json_error(send("PUT", "/api/v1/jobs/manual?version=999", R"({"tasks":[{"kind":"BUILTIN","builtin":"FAIL"}]})"), 409,
             "stale version");
  json_error(send("DELETE", "/api/v1/jobs/manual?version=999", ""), 409, "stale delete");
  const auto done = failed_run();  // a finished run cannot be cancelled
  const std::string after_run = snapshot();
  json_error(send("POST", "/api/v1/runs/" + std::to_string(done) + "/cancel", ""), 409, "cancel of a finished run");
  EXPECT_EQ(snapshot(), after_run);
  EXPECT_TRUE(cancelled.empty()) << "nothing reached the control loop";
  // Nothing above changed anything but the run made for the last case.
  EXPECT_NE(before, after_run);
}

// docs/operations.md documents every route of the table, and no other.
TEST_F(AdminApiTest, TheOperationsGuideDocumentsEveryRoute) {
  std::ifstream in(std::string(BATON_SOURCE_DIR) + "/docs/operations.md");
  std::set<std::string> documented;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line.rfind("## HTTP API", 0) == 0;
    if (!inside || line.rfind("| `", 0) != 0) continue;
    const std::string cell = line.substr(2, line.find(" | ") - 2);
    std::string method, previous;
    for (std::size_t at = cell.find('`'); at != std::string::npos; at = cell.find('`', cell.find('`', at + 1) + 1)) {
      std::string item = cell.substr(at + 1, cell.find('`', at + 1) - at - 1);
      if (auto space = item.find(' '); space != std::string::npos) {
        method = item.substr(0, space);
        item = item.substr(space + 1);
      } else if (item.rfind("...", 0) == 0) {
        item = previous.substr(0, previous.rfind('/')) + item.substr(3);  // `.../resume`
      }
      item = item.substr(0, item.find('?'));
      previous = item;
      if (item.rfind("/api/v1/", 0) == 0) documented.insert(method + " " + item);
    }
  }
  std::set<std::string> routes;
  for (const auto& r : api.routes()) routes.insert(r.method + " " + r.pattern);
  EXPECT_EQ(documented, routes);
}

TEST_F(AdminApiTest, ATriggerCarriesParametersAsThePayloadAndAuditsOnlyTheirNames) {
  auto res = send("POST", "/api/v1/jobs/manual/trigger", R"({"parameters":{"region":"eu","customer":"hunter2"}})");
  ASSERT_EQ(res.status, 201) << res.body;
  const auto run = body(res).as_object()["run_id"].as_int64();
  auto shown = body(get("/api/v1/runs/" + std::to_string(run))).as_object();
  EXPECT_EQ(shown["payload"].at("parameters").at("region").as_string(), "eu");
  EXPECT_TRUE(shown["decisions"].as_array().empty());
  auto audit = last_audit();
  EXPECT_EQ(json::serialize(audit["details"].at("parameters")), R"(["customer","region"])");
  EXPECT_EQ(json::serialize(audit).find("hunter2"), std::string::npos) << "values are not audited";
  EXPECT_EQ(send("POST", "/api/v1/jobs/manual/trigger", R"({"parameters":[1]})").status, 400);
  EXPECT_EQ(send("POST", "/api/v1/jobs/manual/trigger", R"({"params":{}})").status, 400);
}

// The submitting functions (schemas/0036) refuse by the same rule and with
// the same message as the API: one table of cases through both, and the
// list a fresh database starts with is the node's default.
TEST_F(AdminApiTest, TheSqlDenylistRuleAndDefaultAreTheApis) {
  baton::testing::DbInspector db(url);
  std::string joined;
  for (const auto& e : default_payload_denylist()) joined += (joined.empty() ? "" : "|") + e;
  EXPECT_EQ(db.scalar("SELECT array_to_string(payload_denylist, '|') FROM submission_rules"), joined);
  const std::vector<std::string> cases{R"({"db_password": "x"})",
                                       R"({"token": "x"})",
                                       R"({"Token": 1})",
                                       R"({"tokens": "x"})",
                                       R"({"my_token": "x"})",
                                       R"({"x": "-----BEGIN RSA"})",
                                       R"({"nested": {"api_key": 1}})",
                                       R"({"list": ["ok", "my SECRET"]})",
                                       R"({"fine": "value", "n": 123})",
                                       R"({"PASSWORD": true})",
                                       R"({"deep": [[{"apikey": null}]]})",
                                       R"({})"};
  for (const auto& c : cases) {
    const auto api = find_denied(json::parse(c), default_payload_denylist(), "parameters");
    const auto sql = db.scalar("SELECT baton_payload_denied($j$" + c +
                               "$j$::jsonb, (SELECT payload_denylist FROM submission_rules), 'parameters')");
    EXPECT_EQ(api.value_or(""), sql) << c;
  }
}

// /readyz: ready while the database answered the node's last check (made
// on a connection of the node's own, at most once a second) and a leader is
// known (this node, or one with an endpoint); otherwise 503 naming what is
// not, and of the database no more than "unavailable". /healthz stays
// liveness: it answers either way.
TEST_F(AdminApiTest, ReadyzIsTheDatabaseAndAKnownLeader) {
  EXPECT_EQ(api.handle({"GET", "/readyz", {}, ""}).status, 503) << "not checked yet";
  api.check_database(admin_store);
  auto ok = api.handle({"GET", "/readyz", {}, ""});
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_TRUE(body(ok).at("ready").as_bool());
  EXPECT_EQ(body(ok).at("checks").at("database").as_string(), "ok");
  EXPECT_EQ(body(ok).at("checks").at("leader").as_string(), "this node");
  role = "follower";
  EXPECT_EQ(api.handle({"GET", "/readyz", {}, ""}).status, 200) << "a follower that knows the leader serves";

  NodeStatus lost{"n2", "n2-i1", "follower", 0, "", "", 0};
  AdminApi no_leader{AdminApiPorts{[&] { return lost; }, {}, {}}, admin_store, metrics, clock, "secret"};
  no_leader.check_database(admin_store);
  auto r = no_leader.handle({"GET", "/readyz", {}, ""});
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_FALSE(body(r).at("ready").as_bool());
  EXPECT_EQ(body(r).at("checks").at("leader").as_string(), "none known");

  store::pg::PgAdminStore away("postgresql://nobody@127.0.0.1:1/none", "readyz-test");
  away.set_call_deadline(500ms);
  AdminApi no_database{
      AdminApiPorts{[this] { return NodeStatus{"n1", "n1-i1", "leader", epoch.value, "n1", "x", 0}; }, {}, {}}, away,
      metrics, clock, "secret"};
  no_database.check_database(away);
  r = no_database.handle({"GET", "/readyz", {}, ""});
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(body(r).at("checks").at("database").as_string(), "unavailable") << r.body;
  for (const char* detail : {"127.0.0.1", "nobody", "none", "connect"})
    EXPECT_EQ(r.body.find(detail), std::string::npos) << "the database's address or the driver's words: " << r.body;
  EXPECT_EQ(no_database.handle({"GET", "/healthz", {}, ""}).status, 200) << "liveness is not readiness";
}

}  // namespace
}  // namespace baton::admin
