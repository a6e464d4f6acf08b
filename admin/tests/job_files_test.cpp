// The job definition reader behind PUT /api/v1/jobs/{name}: the keys of a
// job file entry, every problem named by key.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <boost/json.hpp>

#include "baton/admin/job_files.h"
#include "baton/protocol/codec.h"

using namespace baton;

TEST(JobDocument, EveryShippedSampleJobIsValid) {
  YAML::Node file = YAML::LoadFile(std::string(BATON_SOURCE_DIR) + "/configs/jobs/samples.yaml");
  ASSERT_GE(file["jobs"].size(), 3u);
  for (const auto& entry : file["jobs"]) {
    YAML::Emitter out;
    out << entry;
    auto job = admin::parse_job_document(out.c_str(), "samples.yaml");
    EXPECT_TRUE(job) << job.error().message;
  }
}

TEST(JobDocument, ReadsTasksAndSettings) {
  auto job = admin::parse_job_document(
      "name: nightly\nschedule: '*/5 * * * * *'\nmax_attempts: 3\ntimeout: 30s\n"
      "retry: {base: 2s, cap: 1m}\nselector: {zone: a}\nmisfire_policy: skip\n"
      "tasks:\n  - kind: PROGRAM\n    command: [/bin/echo, hi]\n    env: {A: '1'}\n"
      "  - {kind: BUILTIN, builtin: SLEEP, argument: 1s, ignore_error: true}\n",
      "body");
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ(job->name, "nightly");
  EXPECT_EQ(job->schedule, "*/5 * * * * *");
  EXPECT_EQ(job->max_attempts, 3);
  EXPECT_EQ(job->timeout_ms, 30000);
  EXPECT_EQ(job->retry_base_ms, 2000);
  EXPECT_EQ(job->selector_json, "{\"zone\":\"a\"}");
  EXPECT_NE(job->tasks_json.find("\"command\":[\"/bin/echo\",\"hi\"]"), std::string::npos) << job->tasks_json;
  EXPECT_NE(job->tasks_json.find("\"ignore_error\":true"), std::string::npos) << job->tasks_json;
}

TEST(JobDocument, ErrorsNameTheKeyAndTheCronPosition) {
  auto job = admin::parse_job_document(R"({"schedule": "61 * * * *", "tasks": [{"kind": "SHELL"}], "colour": "red"})",
                                       "body", "x");
  ASSERT_FALSE(job);
  const auto& m = job.error().message;
  EXPECT_NE(m.find("body: schedule: '61 * * * *' at position 0"), std::string::npos) << m;
  EXPECT_NE(m.find("body: tasks[0].kind: must be PROGRAM, SQL or BUILTIN"), std::string::npos) << m;
  EXPECT_NE(m.find("body: colour: unknown key"), std::string::npos) << m;
  auto empty = admin::parse_job_document(R"({"tasks": []})", "body", "y");
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("tasks: must be a non-empty list"), std::string::npos);
  auto other =
      admin::parse_job_document(R"({"name": "z", "tasks": [{"kind": "BUILTIN", "builtin": "NOOP"}]})", "body", "y");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("differs from the job named in the URL"), std::string::npos);
}

TEST(JobDocument, ReadsTheZoneAndMisfireSettings) {
  auto job = admin::parse_job_document(
      "name: nightly\nschedule: '30 2 * * *'\ntime_zone: Europe/Berlin\nmisfire_policy: run_all\n"
      "catch_up_limit: 3\nstarting_deadline: 10m\ntasks: [{kind: BUILTIN, builtin: NOOP}]\n",
      "body");
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ(job->time_zone, "Europe/Berlin");
  EXPECT_EQ(job->catch_up_limit, 3);
  EXPECT_EQ(job->starting_deadline_ms, 600000);
  auto defaults = admin::parse_job_document("name: d\ntasks: [{kind: BUILTIN, builtin: NOOP}]\n", "body");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->catch_up_limit, 100);
  EXPECT_EQ(defaults->starting_deadline_ms, std::nullopt);

  auto bad = admin::parse_job_document(
      "name: b\ntime_zone: Europe/Berln\ncatch_up_limit: 20000\nstarting_deadline: 500ms\n"
      "tasks: [{kind: BUILTIN, builtin: NOOP}]\n",
      "body");
  ASSERT_FALSE(bad);
  const auto& m = bad.error().message;
  EXPECT_NE(m.find("body: time_zone: time zone \"Europe/Berln\" is not a known IANA zone"), std::string::npos) << m;
  EXPECT_NE(m.find("body: catch_up_limit:"), std::string::npos) << m;
  EXPECT_NE(m.find("body: starting_deadline: must be at least 1s"), std::string::npos) << m;
}

TEST(JobDocument, ReadsTheOverlapSettings) {
  auto job = admin::parse_job_document(
      "name: o\nmax_instances: 2\nconcurrency_policy: replace\nexclusive_execution: true\njitter: 30s\n"
      "tasks: [{kind: BUILTIN, builtin: NOOP}]\n",
      "body");
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ(job->max_instances, 2);
  EXPECT_EQ(job->concurrency_policy, "replace");
  EXPECT_TRUE(job->exclusive_execution);
  EXPECT_EQ(job->jitter_ms, 30000);
  auto defaults = admin::parse_job_document("name: d\ntasks: [{kind: BUILTIN, builtin: NOOP}]\n", "body");
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->max_instances, std::nullopt) << "no limit unless asked";
  EXPECT_EQ(defaults->concurrency_policy, "allow");
  auto bad = admin::parse_job_document(
      "name: b\nmax_instances: 0\nconcurrency_policy: queue\njitter: 2h\ntasks: [{kind: BUILTIN, builtin: NOOP}]\n",
      "body");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("body: max_instances:"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("body: concurrency_policy: must be allow, forbid or replace"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("body: jitter: must be from 0s to 1h"), std::string::npos) << bad.error().message;
}

TEST(JobDocument, ReadsTheConcurrencyKeyAndRateLimit) {
  auto job = admin::parse_job_document(
      "name: sync\nconcurrency: {key: \"{{param.customer}}/{{ param.region }}\", limit: 2}\n"
      "rate_limit: {runs: 10, per: 1m, by_key: true}\ntasks: [{kind: BUILTIN, builtin: NOOP}]\n",
      "body");
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ(job->concurrency_key, "{{param.customer}}/{{ param.region }}");
  EXPECT_EQ(job->concurrency_limit, 2);
  EXPECT_EQ(job->rate_limit_runs, 10);
  EXPECT_EQ(job->rate_limit_per_ms, 60000);
  EXPECT_TRUE(job->rate_limit_by_key);
  auto plain = admin::parse_job_document("name: p\ntasks: [{kind: BUILTIN, builtin: NOOP}]\n", "body");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->concurrency_key);
  EXPECT_FALSE(plain->rate_limit_runs);
  auto bad = [](const std::string& yaml) {
    auto j = admin::parse_job_document("name: b\n" + yaml + "tasks: [{kind: BUILTIN, builtin: NOOP}]\n", "body");
    return j ? std::string("accepted") : j.error().message;
  };
  EXPECT_NE(bad("concurrency: {key: acme, limit: 2}\n").find("body: concurrency.key: must use a parameter"),
            std::string::npos);
  EXPECT_NE(bad("concurrency: {key: \"{{env.HOME}}\", limit: 2}\n")
                .find("body: concurrency.key: '{{env.HOME}}' is not {{param.NAME}}"),
            std::string::npos);
  EXPECT_NE(bad("concurrency: {key: \"{{param.a\", limit: 2}\n").find("without its '}}'"), std::string::npos);
  EXPECT_NE(bad("concurrency: {limit: 2}\n").find("body: concurrency.limit: is a limit per key"), std::string::npos);
  EXPECT_NE(bad("concurrency: {key: \"{{param.a}}\", limit: 0}\n").find("body: concurrency.limit:"), std::string::npos);
  EXPECT_NE(bad("rate_limit: {runs: 10}\n").find("body: rate_limit: needs both runs and per"), std::string::npos);
  EXPECT_NE(bad("rate_limit: {runs: 10, per: 200h}\n").find("body: rate_limit.per: must be from 1ms to 168h"),
            std::string::npos);
  EXPECT_NE(bad("rate_limit: {runs: 1, per: 1s, by_key: true}\n").find("body: rate_limit.by_key: counts runs per key"),
            std::string::npos);
  EXPECT_NE(bad("concurrency: {key: \"{{param.a}}\", limt: 2}\n").find("limt"), std::string::npos)
      << "an unknown key is named";
}

TEST(JobDocument, ReadsEventSubscriptionsAndDependencies) {
  auto job = admin::parse_job_document(
      "name: load\non_events: [deploy, alert]\nrun_after: [extract]\ntasks: [{kind: BUILTIN, builtin: NOOP}]\n",
      "body");
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ(job->on_events, (std::vector<std::string>{"deploy", "alert"}));
  EXPECT_EQ(job->run_after, (std::vector<std::string>{"extract"}));
  auto self = admin::parse_job_document("name: x\nrun_after: [x]\ntasks: [{kind: BUILTIN, builtin: NOOP}]\n", "body");
  ASSERT_FALSE(self);
  EXPECT_NE(self.error().message.find("body: run_after: a job cannot run after itself"), std::string::npos);
}

TEST(JobDocument, ReadsOnErrorAndSelfDestruct) {
  auto job = admin::parse_job_document(
      "name: c\nself_destruct: true\ntasks:\n  - {kind: BUILTIN, builtin: FAIL, on_error: continue}\n"
      "  - {kind: BUILTIN, builtin: NOOP, ignore_error: true}\n",
      "body");
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_TRUE(job->self_destruct);
  EXPECT_NE(job->tasks_json.find("\"on_error\":\"continue\""), std::string::npos) << job->tasks_json;
  EXPECT_NE(job->tasks_json.find("\"on_error\":\"ignore\""), std::string::npos) << job->tasks_json;
  auto bad = admin::parse_job_document(
      "name: b\ntasks:\n  - {kind: BUILTIN, builtin: NOOP, on_error: retry}\n"
      "  - {kind: BUILTIN, builtin: NOOP, on_error: stop, ignore_error: true}\n",
      "body");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("tasks[0].on_error: must be stop, continue or ignore"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("tasks[1].ignore_error: conflicts with on_error"), std::string::npos)
      << bad.error().message;
}

// A value substituted into a shell's script could run commands: refused
// unless the task asks for shell_quote, which writes each parameter as its
// quoted environment variable (docs/security.md, "Parameters and shells").
TEST(JobDocument, AParameterInAShellScriptIsRefusedUnlessQuoted) {
  const std::string head = "name: greet\ntasks:\n  - kind: PROGRAM\n    command: [/bin/sh, -c, 'echo {{param.who}}']\n";
  auto refused = admin::parse_job_document(head, "body");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("tasks[0].command[2]: substitutes {{param.NAME}} into a shell script"),
            std::string::npos)
      << refused.error().message;

  auto quoted = admin::parse_job_document(head + "    shell_quote: true\n", "body");
  ASSERT_TRUE(quoted) << quoted.error().message;
  EXPECT_NE(quoted->tasks_json.find(R"("echo \"${BATON_PARAM_WHO?names a parameter the run does not have}\"")"),
            std::string::npos)
      << quoted->tasks_json;

  // As an argument of its own, after the script, a value is the script's $1: no shell_quote needed.
  EXPECT_TRUE(admin::parse_job_document(
      "name: g\ntasks:\n  - {kind: PROGRAM, command: [sh, -c, 'echo \"$1\"', g, '{{param.who}}']}\n", "body"));
  // shell_quote where it does nothing, and a parameter inside single quotes, are named.
  auto unused = admin::parse_job_document(
      "name: g\ntasks:\n  - {kind: PROGRAM, command: [/bin/echo, '{{param.who}}'], shell_quote: true}\n", "body");
  ASSERT_FALSE(unused);
  EXPECT_NE(unused.error().message.find("tasks[0].shell_quote: the command runs no shell script"), std::string::npos)
      << unused.error().message;
  auto single = admin::parse_job_document(
      "name: g\ntasks:\n  - {kind: PROGRAM, command: [bash, -c, \"echo '{{param.who}}'\"], shell_quote: true}\n",
      "body");
  ASSERT_FALSE(single);
  EXPECT_NE(single.error().message.find("is inside single quotes"), std::string::npos) << single.error().message;
}

// Parameters: a text value is a default (any text may replace it), a
// mapping declares rules, stored for the trigger statement to judge
// (schemas/0027); a rule that cannot hold is refused naming its key.
TEST(JobDocument, ReadsParameterDeclarations) {
  auto job = admin::parse_job_document(
      "name: deploy\nparameters:\n  region: eu\n  env: {enum: [staging, prod], default: staging}\n"
      "  count: {type: integer, required: true}\n  tag: {pattern: '[a-z]+', operate: false}\n"
      "tasks: [{kind: BUILTIN, builtin: NOOP}]\n",
      "body");
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ(job->parameters_json, R"({"region":"eu","env":"staging"})");
  EXPECT_EQ(job->parameter_rules_json,
            R"({"region":{},"env":{"enum":["staging","prod"]},"count":{"type":"integer","required":true},)"
            R"("tag":{"pattern":"[a-z]+","operate":false}})");
  auto bad = admin::parse_job_document(
      "name: cron\nschedule: '0 * * * *'\nparameters:\n  a: {type: text}\n  b: {enum: [x], default: y}\n"
      "  c: {required: true}\n  d: {type: integer, enum: ['1', two]}\n  e: [1, 2]\n  f: {colour: red}\n"
      "  g: {required: true, default: x}\n"
      "tasks: [{kind: BUILTIN, builtin: NOOP}]\n",
      "body");
  ASSERT_FALSE(bad);
  const auto& m = bad.error().message;
  EXPECT_NE(m.find("parameters.a.type: must be string, integer, number or boolean, got 'text'"), std::string::npos)
      << m;
  EXPECT_NE(m.find("parameters.b.default: is not one of the enum's values: 'y'"), std::string::npos) << m;
  EXPECT_NE(m.find("parameters.c.required: a job that runs on a schedule"), std::string::npos) << m;
  EXPECT_NE(m.find("parameters.d.enum[1]: is not an integer: 'two'"), std::string::npos) << m;
  EXPECT_NE(m.find("parameters.e: must be a default value (text) or a mapping of rules"), std::string::npos) << m;
  EXPECT_NE(m.find("parameters.f.colour: unknown key"), std::string::npos) << m;
  EXPECT_NE(m.find("parameters.g.default: a required parameter has no default"), std::string::npos) << m;
}

TEST(JobDocument, ReadsResourceLimitsForTheJobAndEachProgramTask) {
  auto job = admin::parse_job_document(
      "name: crunch\nresources: {memory: 512M, pids: 64, cpu: '0.5'}\n"
      "tasks:\n  - {kind: PROGRAM, command: [/bin/true]}\n"
      "  - {kind: PROGRAM, command: [/bin/true], resources: {memory: 2GiB}}\n"
      "  - {kind: BUILTIN, builtin: NOOP}\n",
      "body");
  ASSERT_TRUE(job) << job.error().message;
  auto tasks = protocol::decode_tasks(job->tasks_json);
  ASSERT_TRUE(std::holds_alternative<std::vector<protocol::Task>>(tasks)) << job->tasks_json;
  const auto& t = std::get<std::vector<protocol::Task>>(tasks);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].resources, (protocol::TaskResources{512ll << 20, 64, 500}));
  EXPECT_EQ(t[1].resources, (protocol::TaskResources{2ll << 30, 0, 0}));  // its own, whole
  EXPECT_TRUE(t[2].resources.empty());
  auto bad = admin::parse_job_document(
      "name: crunch\nresources: {memory: lots, pids: 0, cpu: '-1', disk: 1G}\n"
      "tasks: [{kind: SQL, connection: db, sql: 'select 1', resources: {pids: 5}}]\n",
      "body");
  ASSERT_FALSE(bad);
  const auto& m = bad.error().message;
  EXPECT_NE(m.find("resources.memory: must be a size of at least 1M, like 512M or 2G, not 'lots'"), std::string::npos)
      << m;
  EXPECT_NE(m.find("resources.pids: "), std::string::npos) << m;
  EXPECT_NE(m.find("resources.cpu: must be a number of CPUs"), std::string::npos) << m;
  EXPECT_NE(m.find("resources.disk: unknown key"), std::string::npos) << m;
  EXPECT_NE(m.find("tasks[0].resources: limits a PROGRAM task's processes only"), std::string::npos) << m;
}

// A task's own knobs and the job's on_error (docs/scheduling.md, "Chains",
// "When a run fails for good"), each problem named by its key.
TEST(JobDocument, ReadsATasksOwnKnobsAndTheJobsOnError) {
  auto job = admin::parse_job_document(
      "name: etl\non_error: notify-ops\nexclusive_execution: true\n"
      "tasks:\n"
      "  - {kind: SQL, connection: local, sql: 'SELECT 1', run_as: reporting, timeout: 90s,\n"
      "     parameters: {table: invoices, batch: 500}}\n"
      "  - {kind: BUILTIN, builtin: NOOP}\n",
      "body");
  ASSERT_TRUE(job) << job.error().message;
  EXPECT_EQ(job->on_error, "notify-ops");
  EXPECT_TRUE(job->exclusive_execution);
  EXPECT_FALSE(job->mutually_exclusive);
  auto tasks = std::get<std::vector<protocol::Task>>(protocol::decode_tasks(job->tasks_json));
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].run_as, "reporting");
  EXPECT_EQ(tasks[0].timeout_ms, 90000);
  EXPECT_EQ(tasks[0].parameters, (std::map<std::string, std::string>{{"batch", "500"}, {"table", "invoices"}}));
  EXPECT_FALSE(tasks[1].needs_knobs());

  auto bad = admin::parse_job_document(
      "name: etl\non_error: ''\n"
      "tasks:\n"
      "  - {kind: PROGRAM, command: [/bin/true], run_as: reporting}\n"
      "  - {kind: SQL, connection: local, sql: 'SELECT 1', run_as: 'x; DROP TABLE t', timeout: 0s}\n"
      "  - {kind: BUILTIN, builtin: NOOP, parameters: {1st: a, ok: [1, 2]}}\n",
      "body");
  ASSERT_FALSE(bad);
  const auto& m = bad.error().message;
  EXPECT_NE(m.find("body: on_error: names a job"), std::string::npos) << m;
  EXPECT_NE(m.find("body: tasks[0].run_as: applies to a SQL task only"), std::string::npos) << m;
  EXPECT_NE(m.find("body: tasks[1].run_as: must be a role name"), std::string::npos) << m;
  EXPECT_NE(m.find("body: tasks[1].timeout: must be a duration of at least 1ms"), std::string::npos) << m;
  EXPECT_NE(m.find("body: tasks[2].parameters.1st: a parameter name is"), std::string::npos) << m;
  EXPECT_NE(m.find("body: tasks[2].parameters.ok: must be a value"), std::string::npos) << m;
}

namespace {

/// The definition `doc` makes, written back (job_document) and read again:
/// the same definition, so an export applied changes nothing.
void expect_round_trip(const std::string& doc, const std::string& what) {
  auto job = admin::parse_job_document(doc, what);
  ASSERT_TRUE(job) << job.error().message;
  const auto exported = boost::json::serialize(admin::job_document(*job));
  auto again = admin::parse_job_document(exported, what + " (exported)");
  ASSERT_TRUE(again) << again.error().message << "\n" << exported;
  EXPECT_EQ(admin::job_changes(*job, *again), std::vector<std::string>{}) << exported;
  EXPECT_EQ(job->tasks_json, again->tasks_json) << exported;
}

}  // namespace

TEST(JobExport, EveryShippedSampleJobRoundTrips) {
  YAML::Node file = YAML::LoadFile(std::string(BATON_SOURCE_DIR) + "/configs/jobs/samples.yaml");
  for (const auto& entry : file["jobs"]) {
    YAML::Emitter out;
    out << entry;
    expect_round_trip(out.c_str(), "samples.yaml");
  }
}

TEST(JobExport, EveryKeyRoundTripsAndDefaultsAreLeftOut) {
  const std::string every_key =
      "name: all-keys\nschedule: '0 */5 * * * *'\ntime_zone: Europe/Paris\nlive: false\nmax_attempts: 4\n"
      "priority: -7\ntimeout: 90s\nretry: {base: 1500ms, cap: 2h}\nselector: {zone: a, gpu: 'yes'}\n"
      "misfire_policy: run_all\ncatch_up_limit: 12\nstarting_deadline: 45s\nmax_instances: 3\n"
      "concurrency_policy: forbid\nexclusive_execution: true\nself_destruct: true\n"
      "concurrency: {key: '{{param.customer}}', limit: 2}\nrate_limit: {runs: 10, per: 1m, by_key: true}\n"
      "on_error: cleanup\njitter: 20s\n"
      "parameters:\n  customer: acme\n  region: {type: string, enum: [eu, us], default: eu}\n"
      "  count: {type: integer, operate: false, default: '3'}\n"
      "resources: {memory: 512M, cpu: '1.25'}\n"
      "tasks:\n"
      "  - kind: PROGRAM\n    name: fetch\n    command: [/bin/sh, -c, 'echo {{param.customer}}']\n    shell_quote: "
      "true\n"
      "    env: {A: '1', B: two}\n    cwd: /srv\n    timeout: 5s\n    on_error: continue\n"
      "    parameters: {region: us}\n"
      "  - {kind: PROGRAM, command: [/bin/true], resources: {pids: 64, memory: 2G}}\n"
      "  - {kind: SQL, connection: warehouse, sql: 'select 1', run_as: reporter, on_error: ignore}\n"
      "  - {kind: BUILTIN, builtin: SLEEP, argument: 1s, ignore_error: true}\n";
  expect_round_trip(every_key, "every key");
  expect_round_trip(
      "name: events\non_events: [invoice.paid, order.made]\nrun_after: [nightly]\n"
      "tasks: [{kind: BUILTIN, builtin: NOOP}]\n",
      "events");
  expect_round_trip(
      "name: required\nparameters: {who: {required: true, pattern: '^[a-z]+$'}}\n"
      "tasks: [{kind: BUILTIN, builtin: LOG, argument: hi}]\n",
      "required");
  auto minimal = admin::parse_job_document("name: small\ntasks: [{kind: BUILTIN, builtin: NOOP}]\n", "small");
  ASSERT_TRUE(minimal);
  EXPECT_EQ(boost::json::serialize(admin::job_document(*minimal)),
            R"({"name":"small","tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]})")
      << "keys at their defaults are left out";
}
