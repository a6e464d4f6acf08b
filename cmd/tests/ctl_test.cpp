// `baton ctl` as an operator uses it: a real cluster (two nodes, one
// worker, a private PostgreSQL), every call a real `baton ctl` process
// pointed at the follower (so every leader-only call is redirected).
// docs/ctl.md walks through the same steps.
#include <gtest/gtest.h>

#include <algorithm>

#include <boost/json.hpp>
#include <ctime>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "cluster.h"
#include "ctl_fixture.h"

using namespace baton::testing;

namespace {

// `ctl nodes` tells who leads as it is (issue 63): the leader killed, its
// row says lost once the lease has moved (it still says it leads), and the
// new leader's row leads, with the epoch it won.
TEST_F(CtlTest, NodesShowAKilledLeaderAsLostAndItsSuccessorLeading) {
  CtlResult nodes;
  ASSERT_TRUE(wait_until([&] { return (nodes = ctl({"nodes"})).output.find("\nn2 ") != std::string::npos; }, 10s))
      << nodes.output;
  EXPECT_TRUE(std::regex_search(nodes.output, std::regex(R"(\nn1\s+leader\s+true\s+1\s)"))) << nodes.output;
  n1->signal(SIGKILL);
  ASSERT_EQ(cluster.wait_for_leader(10s, 1), "n2");
  EXPECT_TRUE(wait_until(
      [&] {
        nodes = ctl({"nodes"});
        return std::regex_search(nodes.output, std::regex(R"(\nn1\s+lost\s+false\s+1\s)")) &&
               std::regex_search(nodes.output, std::regex(R"(\nn2\s+leader\s+true\s+[2-9]\s)"));
      },
      10s))
      << nodes.output;
}

TEST_F(CtlTest, FindWhyARunFailedReadItsOutputAndReplayItsDeadLetter) {
  // Who leads, at which epoch, and every past epoch.
  auto epochs = ctl({"epochs"});
  ASSERT_EQ(epochs.code, 0) << epochs.output;
  EXPECT_NE(epochs.output.find("HOW IT ENDED"), std::string::npos) << epochs.output;
  EXPECT_TRUE(std::regex_search(epochs.output, std::regex(R"(\n1\s+n1\s.*true)"))) << epochs.output;
  CtlResult nodes;
  EXPECT_TRUE(wait_until([&] { return (nodes = ctl({"nodes"})).output.find("n2 ") != std::string::npos; }, 10s))
      << nodes.output;

  // A trigger through the follower is redirected to the leader.
  auto trigger = ctl({"jobs", "trigger", "breaks"});
  ASSERT_EQ(trigger.code, 0) << trigger.output;
  const std::string run = trigger.output.substr(0, trigger.output.find('\n'));
  ASSERT_GT(std::stoll(run), 0) << trigger.output;
  // logs -f follows it to its end: the output, and exit 1 as it FAILED.
  auto logs = ctl({"logs", "-f", run, "--interval", "200ms"});
  EXPECT_EQ(logs.code, 1) << logs.output;
  EXPECT_NE(logs.output.find("disk full on /var"), std::string::npos) << logs.output;
  EXPECT_NE(logs.output.find("ended FAILED"), std::string::npos) << logs.output;

  auto failed = ctl({"runs", "list", "--state", "FAILED", "-o", "json"});
  ASSERT_EQ(failed.code, 0) << failed.output;
  EXPECT_EQ(number_after(failed.output, "id"), std::stoll(run));
  auto show = ctl({"runs", "show", run});
  EXPECT_TRUE(std::regex_search(show.output, std::regex(R"(\n1\s+w1\s+1\s+FAILED\s+3\s)"))) << show.output;
  EXPECT_TRUE(std::regex_search(show.output, std::regex(R"(RUNNING\s+FAILED\s+1\s+1)"))) << show.output;

  // The leader's metrics: the attempt by job and outcome, the dead letter,
  // the worker's liveness.
  // The finish is counted when its lane's result reaches the loop, a moment
  // after the database shows the run FAILED: ask again for a little while.
  std::string metrics;
  for (int i = 0; i < 50; ++i) {
    metrics = http_request(cluster.port("n1"), "GET", "/metrics").body;
    if (metrics.find("baton_job_attempts_total{job=\"breaks\"") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(metrics.find("baton_job_attempts_total{job=\"breaks\",outcome=\"FAILED\"} 1\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("baton_job_attempt_duration_seconds_count{job=\"breaks\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("baton_dead_letters{triage_status=\"pending\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("baton_workers{state=\"ATTACHED\",admin_state=\"active\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("baton_worker_heartbeat_age_seconds{worker=\"w1\"}"), std::string::npos);
  EXPECT_NE(metrics.find("baton_is_leader 1\n"), std::string::npos);

  auto letters = ctl({"dead-letters", "list", "-o", "json"});
  const auto letter = number_after(letters.output, "id");
  ASSERT_GT(letter, 0) << letters.output;
  EXPECT_EQ(
      ctl({"dead-letters", "triage", std::to_string(letter), "--status", "acknowledged", "--notes", "disk full"}).code,
      0);
  auto replay = ctl({"dead-letters", "replay", std::to_string(letter), "-o", "json"});
  ASSERT_EQ(replay.code, 0) << replay.output;
  const auto again = number_after(replay.output, "run_id");
  ASSERT_GT(again, 0) << replay.output;
  auto replayed = ctl({"runs", "show", std::to_string(again), "-o", "json"});
  EXPECT_EQ(number_after(replayed.output, "rerun_of"), std::stoll(run)) << replayed.output;
  auto audit = ctl({"audit", "--subject", "dead_letter:" + std::to_string(letter)});
  EXPECT_NE(audit.output.find("dead_letter.replay"), std::string::npos) << audit.output;
  EXPECT_NE(audit.output.find("dead_letter.triage"), std::string::npos) << audit.output;

  // Exit codes scripts rely on.
  EXPECT_EQ(ctl({"runs", "show", "999999"}).code, 4);
  EXPECT_EQ(ctl({"runs", "frobnicate"}).code, 2);
  EXPECT_EQ(ctl({"runs", "list", "--colour", "red"}).code, 2);
  EXPECT_EQ(ctl({"runs", "list"}, "not-a-token").code, 6);
  EXPECT_EQ(ctl({"--addr", "127.0.0.1:1", "runs", "list"}).code, 3);

  // Several addresses, as BATON_ADDR is for the Python client: one that
  // refuses the connection is passed over, for a read and for a trigger
  // (which never left for it); every one dead is named. Checked failing
  // with the list taken as one address ("Host not found").
  const std::string live = "127.0.0.1:" + std::to_string(cluster.port("n2"));
  auto listed = ctl({"--addr", "127.0.0.1:1, " + live, "status"});
  EXPECT_EQ(listed.code, 0) << listed.output;
  EXPECT_TRUE(std::regex_search(listed.output, std::regex(R"((^|\n)node_id:\s+n2\n)"))) << listed.output;
  auto listed_trigger = ctl({"--addr", "127.0.0.1:1," + live, "jobs", "trigger", "nightly"});
  EXPECT_EQ(listed_trigger.code, 0) << listed_trigger.output;
  auto none = ctl({"--addr", "127.0.0.1:1,127.0.0.1:2", "status"});
  EXPECT_EQ(none.code, 3) << none.output;
  EXPECT_NE(none.output.find("cannot reach 127.0.0.1:1: "), std::string::npos) << none.output;
  EXPECT_NE(none.output.find("; cannot reach 127.0.0.1:2: "), std::string::npos) << none.output;
}

TEST_F(CtlTest, PauseAJobDrainAWorkerAndStopDispatchThenUndoEachOne) {
  EXPECT_EQ(ctl({"jobs", "pause", "nightly"}).code, 0);
  auto shown = ctl({"jobs", "show", "nightly", "-o", "json"});
  EXPECT_NE(shown.output.find("\"paused\":true"), std::string::npos) << shown.output;
  auto list = ctl({"jobs", "list"});
  EXPECT_TRUE(std::regex_search(list.output, std::regex(R"(nightly\s+0 0 3 \* \* \*\s+UTC\s+true\s+-)")))
      << list.output;
  EXPECT_EQ(ctl({"jobs", "resume", "nightly"}).code, 0);
  list = ctl({"jobs", "list"});
  EXPECT_TRUE(std::regex_search(list.output, std::regex(R"(nightly\s+0 0 3 \* \* \*\s+UTC\s+false\s+20\d\d-)")))
      << list.output;

  // A drained worker takes no new run; resumed, it does.
  ASSERT_EQ(ctl({"workers", "drain", "w1"}).code, 0);
  auto workers = ctl({"workers", "list"});
  EXPECT_TRUE(std::regex_search(workers.output, std::regex(R"(w1\s+ATTACHED\s+draining)"))) << workers.output;
  std::this_thread::sleep_for(1s);  // the leader reads the hold within controls_every
  auto r1 = ctl({"jobs", "trigger", "quick"});
  const auto run1 = std::stoll(r1.output);
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(cluster.db().run(run1)->state, "PENDING");
  ASSERT_EQ(ctl({"workers", "resume", "w1"}).code, 0);
  EXPECT_TRUE(cluster.wait_for_state(run1, "SUCCEEDED", 10s));

  // dispatch_enabled=false stops all dispatch within one poll, without a restart.
  ASSERT_EQ(ctl({"settings", "set", "dispatch_enabled", "false"}).code, 0);
  auto setting = ctl({"settings", "get", "dispatch_enabled"});
  EXPECT_EQ(setting.output, "false\n");
  std::this_thread::sleep_for(1s);
  const auto run2 = std::stoll(ctl({"jobs", "trigger", "quick", "--key", "ctl-key-1"}).output);
  // The same key again: the same id on stdout, and a word that no run was
  // made (issue 63: it printed the id alone, as if new).
  auto again = ctl({"jobs", "trigger", "quick", "--key", "ctl-key-1"});
  EXPECT_TRUE(std::regex_search(again.output, std::regex("(^|\n)" + std::to_string(run2) + "\n"))) << again.output;
  EXPECT_NE(again.output.find("existing: the key names run " + std::to_string(run2) + ", made earlier; no new run\n"),
            std::string::npos)
      << again.output;
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(cluster.db().run(run2)->state, "PENDING");
  // ... and why it waits is in the ledger (the leader looks every 5 s).
  std::string decisions;
  EXPECT_TRUE(wait_until(
      [&] {
        decisions = ctl({"runs", "show", std::to_string(run2), "-o", "json"}).output;
        return decisions.find("dispatch_disabled") != std::string::npos;
      },
      10s))
      << decisions;
  ASSERT_EQ(ctl({"settings", "set", "dispatch_enabled", "true"}).code, 0);
  EXPECT_TRUE(cluster.wait_for_state(run2, "SUCCEEDED", 10s));
  EXPECT_EQ(ctl({"settings", "set", "dispatch_enabled", "maybe"}).code, 1);
  // The timings: unset ones show the node config's value; a change that
  // breaks a rule together with the others is refused, naming both keys.
  ASSERT_EQ(ctl({"settings", "set", "dispatch_batch", "64"}).code, 0);
  auto table = ctl({"settings", "get"}).output;
  EXPECT_TRUE(std::regex_search(table, std::regex(R"(reassign_after_ms\s+3000 \(node config\))"))) << table;
  EXPECT_TRUE(std::regex_search(table, std::regex(R"(dispatch_batch\s+64\s)"))) << table;
  auto refused = ctl({"settings", "set", "heartbeat_timeout_ms", "20000"});
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.output.find("must be at least heartbeat_timeout_ms"), std::string::npos) << refused.output;
  ASSERT_EQ(ctl({"settings", "set", "dispatch_batch", "null"}).code, 0);
  EXPECT_EQ(ctl({"settings", "get", "dispatch_batch"}).output, "512\n") << "unset: the node config's";

  // Both runs of "quick" are in its statistics (from the database: the API
  // and ctl read schemas/0029's views), and nothing of it waits.
  auto stats = ctl({"jobs", "stats", "quick"});
  ASSERT_EQ(stats.code, 0) << stats.output;
  EXPECT_TRUE(std::regex_search(stats.output, std::regex(R"(1h\s+2\s+2\s+0\s+0\s+0\s+\d)"))) << stats.output;
  EXPECT_NE(stats.output.find("backlog: 0 pending"), std::string::npos) << stats.output;
  auto stats_json = ctl({"jobs", "stats", "quick", "-o", "json"});
  EXPECT_NE(stats_json.output.find("\"24h\":{"), std::string::npos) << stats_json.output;
  EXPECT_EQ(ctl({"jobs", "stats", "no-such-job"}).code, 4);
}

TEST_F(CtlTest, TokensWithRolesAndJobsAppliedFromFiles) {
  auto created = ctl({"token", "create", "viewer", "--role", "read"});
  ASSERT_EQ(created.code, 0) << created.output;
  std::smatch m;
  // The token alone on its line, unquoted: `token create > file` makes a
  // token file (it was printed as a JSON string once, quotes and all).
  ASSERT_TRUE(std::regex_search(created.output, m, std::regex("(^|\n)(baton_[0-9a-f]{64})\n"))) << created.output;
  const std::string viewer = m[2];
  EXPECT_EQ(ctl({"runs", "list"}, viewer).code, 0);
  // A token on the command line works, with a warning (the process list,
  // the shell's history); from the environment, none.
  auto on_command_line = ctl({"--token", viewer, "runs", "list"});
  EXPECT_EQ(on_command_line.code, 0) << on_command_line.output;
  EXPECT_NE(on_command_line.output.find("warning: --token shows the token"), std::string::npos)
      << on_command_line.output;
  EXPECT_EQ(ctl({"runs", "list"}, viewer).output.find("warning:"), std::string::npos);
  auto refused = ctl({"jobs", "pause", "quick"}, viewer);
  EXPECT_EQ(refused.code, 6);
  EXPECT_NE(refused.output.find("operate"), std::string::npos) << refused.output;
  auto tokens = ctl({"token", "list"});
  EXPECT_NE(tokens.output.find("viewer"), std::string::npos);
  EXPECT_EQ(tokens.output.find(viewer), std::string::npos) << "the token is never shown again";
  // A token that expires: its expiry is listed; a --ttl that is no
  // duration is refused before any request.
  auto expiring = ctl({"token", "create", "ci-job", "--role", "read", "--ttl", "2h"});
  ASSERT_EQ(expiring.code, 0) << expiring.output;
  ASSERT_TRUE(std::regex_search(expiring.output, m, std::regex("baton_[0-9a-f]{64}"))) << expiring.output;
  EXPECT_EQ(ctl({"runs", "list"}, m[0]).code, 0);
  auto listed = ctl({"token", "list", "-o", "json"});
  EXPECT_TRUE(std::regex_search(listed.output, std::regex("\"name\":\"ci-job\"[^}]*\"expires_at\":\"20")))
      << listed.output;
  auto bad_ttl = ctl({"token", "create", "x", "--role", "read", "--ttl", "soon"});
  EXPECT_EQ(bad_ttl.code, 2) << bad_ttl.output;
  EXPECT_NE(bad_ttl.output.find("--ttl must be a duration"), std::string::npos) << bad_ttl.output;

  // A config file instead of the environment.
  std::ofstream(cluster.dir() + "/ctl.yaml")
      << "addr: 127.0.0.1:" << cluster.port("n1") << "\ntoken: " << viewer << "\noutput: json\n";
  ChildProcess p({BATON_BINARY, "ctl", "--config", cluster.dir() + "/ctl.yaml", "jobs", "list"},
                 cluster.dir() + "/ctl-config.log");
  EXPECT_EQ(p.wait_for_exit(30s), 0);
  EXPECT_NE(p.log().find("\"items\":"), std::string::npos) << p.log();

  // apply: a dry run prints the plan and changes nothing; then it applies.
  std::filesystem::create_directories(cluster.dir() + "/declared");
  std::ofstream(cluster.dir() + "/declared/jobs.yaml") << R"(jobs:
  - name: quick
    max_attempts: 2
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
  - name: hourly
    schedule: '@hourly'
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
)";
  const std::string dir = cluster.dir() + "/declared";
  auto plan = ctl({"apply", "-f", dir, "--prune", "--dry-run"});
  ASSERT_EQ(plan.code, 0) << plan.output;
  EXPECT_NE(plan.output.find("+ hourly"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("~ quick ([\"max_attempts\"])"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("- breaks"), std::string::npos) << plan.output;
  EXPECT_EQ(ctl({"jobs", "show", "hourly"}).code, 4) << "a dry run changes nothing";
  EXPECT_EQ(ctl({"apply", "-f", dir, "--prune"}).code, 0);
  EXPECT_EQ(ctl({"jobs", "show", "hourly"}).code, 0);
  EXPECT_EQ(ctl({"jobs", "show", "breaks"}).code, 4);
  auto again = ctl({"apply", "-f", dir, "--prune"});
  EXPECT_NE(again.output.find("created 0, updated 0, deleted 0, unchanged 2"), std::string::npos) << again.output;
  // One bad job among good ones: nothing changes, the bad key is named.
  std::ofstream(cluster.dir() + "/declared/bad.yaml") << "jobs:\n  - name: bad\n    schedule: '99 * * * *'\n"
                                                         "    tasks: [{kind: BUILTIN, builtin: NOOP}]\n";
  std::ofstream(cluster.dir() + "/declared/jobs.yaml", std::ios::app)
      << "  - name: extra\n    tasks: [{kind: BUILTIN, builtin: NOOP}]\n";
  auto bad = ctl({"apply", "-f", dir});
  EXPECT_EQ(bad.code, 1) << bad.output;
  EXPECT_NE(bad.output.find("bad.yaml: jobs[0].schedule: '99 * * * *'"), std::string::npos) << bad.output;
  EXPECT_EQ(ctl({"jobs", "show", "extra"}).code, 4) << "nothing applied";

  auto completion = ctl({"completion", "bash"});
  EXPECT_NE(completion.output.find("complete -F _baton_ctl"), std::string::npos);
  auto help = ctl({"dead-letters", "triage", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.output.find("--notes"), std::string::npos) << help.output;
}

}  // namespace

// Misfire end to end: an every-second job paused for six seconds. On resume
// the slots of the pause are given up under run_latest (recorded in the
// decision ledger as one range caused by the pause, no run created for any
// of them) and the job fires again; `baton ctl why` explains a slot of the
// pause. (docs/scheduling.md, "Missed slots")
TEST_F(CtlTest, SlotsMissedWhilePausedAreRecordedAndExplained) {
  std::filesystem::create_directories(cluster.dir() + "/tick");
  std::ofstream(cluster.dir() + "/tick/jobs.yaml") << R"(jobs:
  - name: tick
    schedule: '* * * * * *'
    time_zone: Europe/Berlin
    misfire_policy: run_latest
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
)";
  ASSERT_TRUE(applied(cluster.dir() + "/tick"));
  auto runs_of_tick = [&] { return ctl({"runs", "list", "--job", "tick", "-o", "json", "--limit", "500"}).output; };
  ASSERT_TRUE(wait_until([&] { return runs_of_tick().find("\"SUCCEEDED\"") != std::string::npos; }, 20s));

  ASSERT_EQ(ctl({"jobs", "pause", "tick"}).code, 0);
  const auto paused_at = std::chrono::system_clock::now();
  std::this_thread::sleep_for(6s);
  ASSERT_EQ(ctl({"jobs", "resume", "tick"}).code, 0);
  const auto resumed_at = std::chrono::system_clock::now();

  // A slot in the middle of the pause.
  const auto middle = std::chrono::floor<std::chrono::seconds>(paused_at + (resumed_at - paused_at) / 2);
  const std::time_t t = std::chrono::system_clock::to_time_t(middle);
  char iso[32];
  std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  CtlResult why;
  ASSERT_TRUE(wait_until(
      [&] {
        return (why = ctl({"why", "tick", iso, "-o", "json"})).output.find("skipped") != std::string::npos;
      },
      10s))
      << why.output;
  EXPECT_NE(why.output.find("\"gap_cause\":\"paused\""), std::string::npos) << why.output;
  EXPECT_NE(why.output.find("\"reason\":\"misfire_policy\""), std::string::npos) << why.output;
  EXPECT_NE(why.output.find("\"run\":null"), std::string::npos) << "no run for a slot given up: " << why.output;
  EXPECT_NE(why.output.find("was given up by epoch"), std::string::npos) << why.output;
  auto text = ctl({"why", "tick", iso});
  EXPECT_EQ(text.code, 0) << text.output;
  EXPECT_NE(text.output.find("The job was paused over it."), std::string::npos) << text.output;
  EXPECT_TRUE(text.output.find("+01:00") != std::string::npos || text.output.find("+02:00") != std::string::npos)
      << "slots shown in the job's zone: " << text.output;
  EXPECT_EQ(ctl({"why", "tick", "not-a-time"}).code, 1);
  EXPECT_EQ(ctl({"why", "nope", iso}).code, 4);
  // The slots it missed, per job, in /metrics (from the ledger: every node
  // says the same, and a leader change does not reset it).
  const std::string metrics = http_request(cluster.port("n2"), "GET", "/metrics").body;
  std::smatch skipped;
  ASSERT_TRUE(std::regex_search(metrics, skipped, std::regex(R"(baton_cron_slots_skipped\{job="tick"\} (\d+)\n)")))
      << metrics;
  EXPECT_GE(std::stoll(skipped[1].str()), 1) << "slots given up over a pause of 6 s";
  EXPECT_EQ(skipped[1].str(),
            cluster.db().scalar("SELECT coalesce(sum(coalesce(d.slot_count, 1)), 0) FROM decision_ledger d JOIN"
                                " job_definitions j ON j.id = d.job_definition_id WHERE j.name = 'tick'"
                                " AND d.decision = 'skipped'"))
      << "the ledger's count";
  EXPECT_NE(metrics.find("baton_cron_slots_skipped{job=\"nightly\"} "), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("baton_cron_slots_skipped{job=\"quick\"}"), std::string::npos) << "no schedule, no row";
}

// Overlap control end to end: a job limited to one instance, two mutually
// exclusive jobs and an exclusive one, triggered together on a worker with
// room for four. The runs of each group execute one after another (their
// RUNNING intervals, as the database recorded them, do not overlap), and
// nothing runs beside the exclusive job's run.
TEST_F(CtlTest, LimitedAndExclusiveRunsNeverOverlap) {
  std::filesystem::create_directories(cluster.dir() + "/overlap");
  std::ofstream(cluster.dir() + "/overlap/jobs.yaml") << R"(jobs:
  - name: serial
    max_instances: 1
    tasks:
      - {kind: BUILTIN, builtin: SLEEP, argument: 600ms}
  - name: ex1
    mutually_exclusive: true
    tasks:
      - {kind: BUILTIN, builtin: SLEEP, argument: 600ms}
  - name: ex2
    mutually_exclusive: true
    tasks:
      - {kind: BUILTIN, builtin: SLEEP, argument: 600ms}
  - name: vacuum
    exclusive_execution: true
    tasks:
      - {kind: BUILTIN, builtin: SLEEP, argument: 600ms}
)";
  ASSERT_TRUE(applied(cluster.dir() + "/overlap"));
  const auto shown = ctl({"jobs", "show", "vacuum"}).output;
  EXPECT_TRUE(std::regex_search(shown, std::regex(R"(exclusive_execution:\s+true)"))) << shown;
  EXPECT_TRUE(std::regex_search(shown, std::regex(R"(mutually_exclusive:\s+false)"))) << shown;
  for (const char* job : {"serial", "serial", "ex1", "vacuum", "ex2", "serial"})
    ASSERT_EQ(ctl({"jobs", "trigger", job}).code, 0);
  struct Interval {
    std::string job, from, to;
  };
  std::vector<Interval> done;
  ASSERT_TRUE(wait_until(
      [&] {
        auto out = ctl({"runs", "list", "--state", "SUCCEEDED", "-o", "json", "--limit", "50"}).output;
        done.clear();
        std::regex item(R"re("job":"([a-z0-9]+)"[^{}]*?"started_at":"([^"]+)"[^{}]*?"finished_at":"([^"]+)")re");
        for (auto it = std::sregex_iterator(out.begin(), out.end(), item); it != std::sregex_iterator(); ++it)
          done.push_back({(*it)[1], (*it)[2], (*it)[3]});
        return done.size() >= 6;
      },
      30s))
      << done.size() << " runs finished";
  auto disjoint = [&](const std::vector<std::string>& jobs) {
    std::vector<Interval> group;
    for (const auto& i : done)
      if (std::find(jobs.begin(), jobs.end(), i.job) != jobs.end()) group.push_back(i);
    std::sort(group.begin(), group.end(), [](const auto& a, const auto& b) { return a.from < b.from; });
    for (std::size_t k = 1; k < group.size(); ++k)
      EXPECT_LE(group[k - 1].to, group[k].from) << group[k - 1].job << " and " << group[k].job << " overlapped";
    return group.size();
  };
  EXPECT_EQ(disjoint({"serial"}), 3u);
  EXPECT_EQ(disjoint({"ex1", "ex2"}), 2u);
  // Nothing beside the exclusive run: each other run ended before it
  // started or started after it ended (the others may overlap each other).
  auto vacuum = std::find_if(done.begin(), done.end(), [](const Interval& i) { return i.job == "vacuum"; });
  ASSERT_NE(vacuum, done.end());
  for (const auto& i : done) {
    if (i.job == "vacuum") continue;
    EXPECT_TRUE(i.to <= vacuum->from || vacuum->to <= i.from)
        << i.job << " " << i.from << "-" << i.to << " beside vacuum " << vacuum->from << "-" << vacuum->to;
  }
}

// Issue 64, decision 1: an exclusive job whose selector no attached worker
// matches drains nothing. The other jobs keep running, the run waits
// PENDING with no_worker_matches in the decision ledger, and once a
// matching worker attaches it runs.
TEST_F(CtlTest, AnExclusiveJobNoWorkerMatchesLeavesTheOthersRunning) {
  std::filesystem::create_directories(cluster.dir() + "/unmatched");
  std::ofstream(cluster.dir() + "/unmatched/jobs.yaml") << R"yaml(jobs:
  - name: maintenance
    exclusive_execution: true
    selector: {pool: maint}
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
  - name: everyday
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
)yaml";
  ASSERT_TRUE(applied(cluster.dir() + "/unmatched"));
  const auto exclusive = std::stoll(ctl({"jobs", "trigger", "maintenance"}).output);
  for (int i = 0; i < 3; ++i) {
    const auto other = std::stoll(ctl({"jobs", "trigger", "everyday"}).output);
    EXPECT_TRUE(cluster.wait_for_state(other, "SUCCEEDED", 10s))
        << "no worker matches the exclusive run: the cluster does not drain for it";
  }
  EXPECT_TRUE(wait_until(
      [&] {
        return cluster.db().scalar(
                   "SELECT count(*) FROM decision_ledger WHERE decision = 'no_worker_matches'"
                   " AND run_id = " +
                   std::to_string(exclusive)) == "1";
      },
      15s))
      << "the leader looks for unmatched runs every 5 s and records each once";
  EXPECT_EQ(cluster.db().run(exclusive)->state, "PENDING");
  cluster.start_worker("maint", 1, {"n1"}, "", "{pool: maint}");
  EXPECT_TRUE(cluster.wait_for_state(exclusive, "SUCCEEDED", 20s)) << "a matching worker attached: it runs";
}

// Live settings on a running leader (docs/operations.md, "Settings"): a
// paused selector stops dispatch to the workers it matches, and only those,
// until it is unset; cron_enabled false stops a schedule's runs until it is
// true again. No restart.
TEST_F(CtlTest, LiveGatesTakeEffectOnARunningLeader) {
  cluster.start_worker("w2", 2, {"n1"}, "", "{pool: gpu}");
  ASSERT_TRUE(cluster.wait_for_workers("n1", 2));
  std::filesystem::create_directories(cluster.dir() + "/gates");
  std::ofstream(cluster.dir() + "/gates/jobs.yaml") << R"(jobs:
  - name: on-gpu
    selector: {pool: gpu}
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
  - name: anywhere
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
  - name: ticking
    schedule: "@every 1s"
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
)";
  ASSERT_TRUE(applied(cluster.dir() + "/gates"));
  ASSERT_EQ(ctl({"settings", "set", "dispatch_paused_selectors", R"(["pool=gpu"])"}).code, 0);
  ASSERT_EQ(ctl({"settings", "set", "cron_enabled", "false"}).code, 0);
  std::this_thread::sleep_for(1500ms);  // the leader reads settings within controls_every
  const auto ticks = [&] {
    return std::stoll(
        cluster.db().scalar("SELECT count(*) FROM job_runs r JOIN job_definitions j ON j.id ="
                            " r.job_definition_id WHERE j.name = 'ticking'"));
  };
  const auto ticks_off = ticks();
  const auto gpu = std::stoll(ctl({"jobs", "trigger", "on-gpu"}).output);
  const auto other = std::stoll(ctl({"jobs", "trigger", "anywhere"}).output);
  EXPECT_TRUE(cluster.wait_for_state(other, "SUCCEEDED", 10s)) << "the other workers are dispatched to";
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(cluster.db().run(gpu)->state, "PENDING") << "no worker of the paused pool gets it";
  EXPECT_LE(ticks(), ticks_off + 1) << "no cron runs while cron_enabled is false (one may have been under way)";
  ASSERT_EQ(ctl({"settings", "set", "dispatch_paused_selectors", "null"}).code, 0);
  ASSERT_EQ(ctl({"settings", "set", "cron_enabled", "true"}).code, 0);
  EXPECT_TRUE(cluster.wait_for_state(gpu, "SUCCEEDED", 10s)) << "unset: dispatched again";
  EXPECT_TRUE(wait_until([&] { return ticks() >= ticks_off + 3; }, 10s)) << "the schedule runs again";
  ASSERT_EQ(ctl({"jobs", "delete", "ticking"}).code, 0);
}

// A one-off at a time (`--at`): it does not start before then, and a
// leader killed in between does not lose it: the next one runs it.
TEST_F(CtlTest, ARunAtATimeStartsThenAcrossALeaderChange) {
  cluster.start_worker("w2", 2);  // attached to both nodes
  ASSERT_TRUE(cluster.wait_for_workers("n1", 2));
  const std::time_t when = std::time(nullptr) + 4;
  std::tm utc{};
  gmtime_r(&when, &utc);
  char at[32];
  std::strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &utc);
  auto triggered = ctl({"jobs", "trigger", "quick", "--at", at});
  ASSERT_EQ(triggered.code, 0) << triggered.output;
  const auto run = std::stoll(triggered.output);
  EXPECT_EQ(cluster.db().run(run)->state, "PENDING");
  n1->signal(SIGKILL);
  ASSERT_EQ(cluster.wait_for_leader(10s, 1), "n2");
  EXPECT_TRUE(cluster.wait_for_state(run, "SUCCEEDED", 20s)) << cluster.db().run(run)->state;
  EXPECT_EQ(cluster.db().scalar("SELECT started_at >= start_after AND start_after = to_timestamp(" +
                                std::to_string(when) + ") FROM job_runs WHERE id = " + std::to_string(run)),
            "t")
      << "started at its time, not before";
  auto bad = ctl({"jobs", "trigger", "quick", "--at", "soon"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.output.find("run_at: "), std::string::npos) << bad.output;
}

// Submission inside the application's transaction (schemas/0036), end to
// end: an application role granted by `baton migrate --grant-submit-to`
// submits in its own transactions; a rolled-back one makes nothing, a
// committed one exactly one run, also when the leader is killed right after
// the commit (whether or not it took the submission first) and when the
// submission commits while no node leads.
TEST_F(CtlTest, ASubmissionCommittedInTheApplicationsTransactionRunsOnceAcrossALeaderKill) {
  cluster.start_worker("w2", 2);  // attached to both nodes
  ASSERT_TRUE(cluster.wait_for_workers("n1", 2));
  cluster.db().scalar("CREATE ROLE ctl_app LOGIN");
  ChildProcess grant({BATON_BINARY, "migrate", "--database-url", cluster.url(), "--grant-submit-to", "ctl_app"},
                     cluster.dir() + "/grant.log");
  ASSERT_EQ(grant.wait_for_exit(30s).value_or(-1), 0) << grant.log();
  EXPECT_NE(grant.log().find("granted ctl_app EXECUTE"), std::string::npos) << grant.log();
  const DbInspector app("postgresql://ctl_app@" + cluster.url().substr(cluster.url().find('@') + 1));

  app.scalar("BEGIN; SELECT baton.trigger('quick', NULL, 'rolled-back'); ROLLBACK");
  const std::string first = app.scalar("SELECT baton.trigger('quick', NULL, 'order-1')");
  n1->signal(SIGKILL);
  const std::string second = app.scalar("SELECT baton.trigger('quick', NULL, 'order-2')");
  ASSERT_EQ(cluster.wait_for_leader(10s, 1), "n2");
  for (const auto& id : {first, second}) {
    EXPECT_TRUE(wait_until(
        [&] {
          return app.scalar("SELECT status || ' ' || run_state FROM baton.submission(" + id + ")") ==
                 "created SUCCEEDED";
        },
        30s))
        << id << ": "
        << app.scalar("SELECT status || ' ' || coalesce(run_state, '-') FROM baton.submission(" + id + ")");
    EXPECT_EQ(cluster.db().scalar("SELECT count(*) FROM job_runs WHERE submission_id = " + id), "1");
  }
  EXPECT_EQ(cluster.db().scalar("SELECT count(*) FROM job_runs WHERE trigger_kind = 'sql'"), "2");
  EXPECT_EQ(cluster.db().scalar("SELECT count(*) FROM submissions"), "2") << "the rolled-back one left nothing";
  EXPECT_EQ(cluster.db().scalar("SELECT count(*) FROM job_runs WHERE trigger_kind = 'sql' AND attempt <> 1"), "0")
      << "each ran once, as its first attempt";
}

// More to say when triggering, from the command line: the run's own
// priority and timeout, and a batch from a file that creates every run or
// none.
TEST_F(CtlTest, ATriggerSaysItsRunsPriorityAndTimeoutAndABatchRunsAllOrNone) {
  auto one = ctl({"jobs", "trigger", "quick", "--priority", "-4", "--run-timeout", "30s"});
  ASSERT_EQ(one.code, 0) << one.output;
  EXPECT_EQ(cluster.db().scalar("SELECT priority || ' ' || timeout_ms FROM job_runs WHERE id = " +
                                std::to_string(std::stoll(one.output))),
            "-4 30000");
  auto above = ctl({"jobs", "trigger", "quick", "--priority", "1"});
  EXPECT_EQ(above.code, 1);
  EXPECT_NE(above.output.find("priority 1 is outside what the job allows"), std::string::npos) << above.output;
  EXPECT_EQ(ctl({"jobs", "trigger", "quick", "--priority", "high"}).code, 2);
  EXPECT_EQ(ctl({"jobs", "trigger", "quick", "--run-timeout", "soon"}).code, 2);

  const std::string file = cluster.dir() + "/batch.json";
  std::ofstream(file) << R"([{"job": "quick", "idempotency_key": "b1"}, {"job": "breaks", "priority": -1}])";
  auto batch = ctl({"jobs", "trigger-batch", file});
  ASSERT_EQ(batch.code, 0) << batch.output;
  std::istringstream ids(batch.output);
  std::vector<std::int64_t> runs;
  for (std::string line; std::getline(ids, line);)
    if (!line.empty()) runs.push_back(std::stoll(line));
  ASSERT_EQ(runs.size(), 2u) << batch.output;
  EXPECT_TRUE(cluster.wait_for_state(runs[0], "SUCCEEDED", 20s));
  EXPECT_TRUE(cluster.wait_for_state(runs[1], "FAILED", 20s));
  const std::string before = cluster.db().scalar("SELECT count(*) FROM job_runs");
  std::ofstream(file) << R"([{"job": "quick", "idempotency_key": "b2"}, {"job": "nope"}])";
  auto refused = ctl({"jobs", "trigger-batch", file});
  EXPECT_EQ(refused.code, 4) << "an unknown job: not found";
  EXPECT_NE(refused.output.find("runs[1] (job \"nope\"): unknown job 'nope'"), std::string::npos) << refused.output;
  EXPECT_EQ(cluster.db().scalar("SELECT count(*) FROM job_runs"), before) << "none of the batch";
}

// Keyed concurrency end to end (schemas/0035): a job limited to one run per
// tenant, two runs for tenant a and one for tenant b, on a worker with room
// for four. The two runs of a never overlap (their RUNNING intervals, as the
// database recorded them); the run of b is not held back by a's.
TEST_F(CtlTest, RunsOfOneKeyNeverOverlapAndOtherKeysGoOn) {
  std::filesystem::create_directories(cluster.dir() + "/keyed");
  std::ofstream(cluster.dir() + "/keyed/jobs.yaml") << R"(jobs:
  - name: per-tenant
    parameters: {tenant: none}
    concurrency: {key: "tenant-{{param.tenant}}", limit: 1}
    rate_limit: {runs: 100, per: 1m}
    tasks:
      - {kind: BUILTIN, builtin: SLEEP, argument: 800ms}
)";
  ASSERT_TRUE(applied(cluster.dir() + "/keyed"));
  const auto shown = ctl({"jobs", "show", "per-tenant"}).output;
  EXPECT_TRUE(std::regex_search(shown, std::regex(R"(concurrency_key:\s+tenant-\{\{param.tenant\}\})"))) << shown;
  EXPECT_TRUE(std::regex_search(shown, std::regex(R"(concurrency_limit:\s+1)"))) << shown;
  EXPECT_NE(shown.find("\"per_ms\":60000"), std::string::npos) << shown;
  for (const char* tenant : {"a", "a", "b"})
    ASSERT_EQ(ctl({"jobs", "trigger", "per-tenant", "--param", std::string("tenant=") + tenant}).code, 0);
  ASSERT_TRUE(wait_until(
      [&] {
        return cluster.db().scalar(
                   "SELECT count(*) FROM job_runs r JOIN job_definitions j ON j.id = "
                   "r.job_definition_id WHERE j.name = 'per-tenant' AND r.state = 'SUCCEEDED'") == "3";
      },
      30s));
  const std::string pairs =
      "SELECT count(*) FROM job_runs x JOIN job_runs y ON x.id < y.id AND x.job_definition_id = y.job_definition_id"
      " JOIN job_definitions j ON j.id = x.job_definition_id WHERE j.name = 'per-tenant'"
      " AND tstzrange(x.started_at, x.finished_at) && tstzrange(y.started_at, y.finished_at) AND ";
  EXPECT_EQ(cluster.db().scalar(pairs + "x.concurrency_key = y.concurrency_key"), "0")
      << "one run per tenant at a time";
  EXPECT_NE(cluster.db().scalar(pairs + "x.concurrency_key <> y.concurrency_key"), "0")
      << "b ran beside a's runs, not after them";
  EXPECT_EQ(cluster.db().scalar("SELECT string_agg(DISTINCT concurrency_key, ',') FROM job_runs WHERE key_slot IS "
                                "NULL AND concurrency_key LIKE 'tenant-%'"),
            "tenant-a,tenant-b")
      << "each run keeps its key; every slot is given back";
}

// Events and run-after end to end: an event posted twice with one dedupe key
// (through the follower) gives its subscriber one run, carrying the payload;
// a success of `extract` runs `load` with the upstream run's id.
TEST_F(CtlTest, EventsRunTheirSubscribersOnceAndDependentsRunAfterASuccess) {
  std::filesystem::create_directories(cluster.dir() + "/events");
  std::ofstream(cluster.dir() + "/events/jobs.yaml") << R"(jobs:
  - name: on-deploy
    on_events: [deploy]
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
  - name: extract
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
  - name: load
    run_after: [extract]
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
)";
  ASSERT_TRUE(applied(cluster.dir() + "/events"));
  auto first =
      ctl({"events", "post", "deploy", "--payload", R"({"version":"7"})", "--dedupe-key", "rel-7", "-o", "json"});
  ASSERT_EQ(first.code, 0) << first.output;
  EXPECT_NE(first.output.find("\"created\":true"), std::string::npos) << first.output;
  auto dup = ctl({"events", "post", "deploy", "--dedupe-key", "rel-7", "-o", "json"});
  ASSERT_EQ(dup.code, 0) << dup.output;
  EXPECT_NE(dup.output.find("\"created\":false"), std::string::npos) << dup.output;

  std::string runs;
  ASSERT_TRUE(wait_until(
      [&] {
        runs = ctl({"runs", "list", "--job", "on-deploy", "--state", "SUCCEEDED", "-o", "json"}).output;
        return runs.find("\"id\":") != std::string::npos;
      },
      15s))
      << runs;
  std::this_thread::sleep_for(1s);  // any second run would have been made by now
  runs = ctl({"runs", "list", "--job", "on-deploy", "-o", "json"}).output;
  const auto run = number_after(runs, "id");
  EXPECT_EQ(runs.find("\"id\":", runs.find("\"id\":") + 1), std::string::npos) << "one run: " << runs;
  auto shown = ctl({"runs", "show", std::to_string(run), "-o", "json"});
  EXPECT_NE(shown.output.find("\"version\": \"7\""), std::string::npos)
      << "the payload reaches the run: " << shown.output;
  auto events = ctl({"events", "list", "--kind", "deploy"});
  EXPECT_NE(events.output.find("rel-7"), std::string::npos) << events.output;

  const auto upstream = std::stoll(ctl({"jobs", "trigger", "extract"}).output);
  std::string load;
  ASSERT_TRUE(wait_until(
      [&] {
        load = ctl({"runs", "list", "--job", "load", "--state", "SUCCEEDED", "-o", "json"}).output;
        return load.find("\"id\":") != std::string::npos;
      },
      15s))
      << load;
  auto load_run = ctl({"runs", "show", std::to_string(number_after(load, "id")), "-o", "json"});
  EXPECT_NE(load_run.output.find("\"upstream_run_id\": " + std::to_string(upstream)), std::string::npos)
      << load_run.output;
}

// Parameters end to end: a job's default and a trigger's parameter reach the
// task's environment and its arguments.
// Output end to end: streamed while the run runs (the task waits until its
// first line was readable through the API), the database keeping the first
// output_db_bytes of each stream with a note, the shared log archive every
// byte of both streams, referenced by the run's log_ref, and still served
// after the run's rows are gone (pruned).
TEST_F(CtlTest, OutputIsStreamedWhileTheRunRunsAndTheArchiveKeepsAllOfIt) {
  const std::string go = cluster.dir() + "/go";
  std::filesystem::create_directories(cluster.dir() + "/chatty");
  std::ofstream(cluster.dir() + "/chatty/jobs.yaml")
      << "jobs:\n  - name: chatty\n    tasks:\n      - {kind: PROGRAM, command: [/bin/sh, -c, 'echo first; i=0; "
         "while [ ! -e "
      << go
      << " ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; "
         "head -c 200000 /dev/zero | tr \"\\\\000\" x; echo; echo last >&2']}\n";
  ASSERT_TRUE(applied(cluster.dir() + "/chatty"));
  auto trigger = ctl({"jobs", "trigger", "chatty"});
  ASSERT_EQ(trigger.code, 0) << trigger.output;
  const std::string run = std::to_string(std::stoll(trigger.output));

  std::string streamed;
  ASSERT_TRUE(wait_until(
      [&] {
        streamed = ctl({"logs", run}).output;
        return streamed.find("first") != std::string::npos;
      },
      15s))
      << streamed;
  auto show = ctl({"runs", "show", run, "-o", "json"});
  EXPECT_NE(show.output.find("\"state\": \"RUNNING\""), std::string::npos)
      << "the output was readable before the run ended: " << show.output;
  std::ofstream(go) << "go";

  auto followed = ctl({"logs", "-f", run, "--interval", "200ms"});
  EXPECT_EQ(followed.code, 0) << followed.output.substr(0, 2000);
  EXPECT_LT(followed.output.size(), 70000u) << "the database keeps the first 64 KiB of each stream";
  EXPECT_NE(followed.output.find("stdout past 65536 bytes is kept in the log archive only"), std::string::npos)
      << followed.output.substr(followed.output.size() - std::min<std::size_t>(500, followed.output.size()));
  EXPECT_NE(followed.output.find("last"), std::string::npos);

  const std::string full = "first\n" + std::string(200000, 'x') + "\n";
  auto archived = ctl({"logs", run, "--archive"});
  EXPECT_EQ(archived.code, 0);
  EXPECT_TRUE(archived.output == full) << archived.output.size() << " bytes: " << archived.output.substr(0, 200);
  EXPECT_EQ(ctl({"logs", run, "--archive", "--stream", "stderr"}).output, "last\n");
  show = ctl({"runs", "show", run, "-o", "json"});
  const std::string ref = "runs/0/" + run;
  EXPECT_NE(show.output.find("\"log_ref\": \"" + ref + "\""), std::string::npos) << show.output.substr(0, 1500);
  EXPECT_TRUE(std::filesystem::exists(cluster.dir() + "/archive/" + ref + "/attempt-1.stdout.log"));

  // Pruned (as retention does it): the archive still has the output.
  erase_run_as_pruned(cluster.url(), std::stoll(run));
  EXPECT_EQ(ctl({"runs", "show", run}).code, 4);
  archived = ctl({"logs", run, "--archive"});
  EXPECT_TRUE(archived.output == full) << archived.output.size() << " bytes";
  auto missing = ctl({"logs", "999999", "--archive"});
  EXPECT_EQ(missing.code, 4) << missing.output;
  EXPECT_NE(missing.output.find("holds no output of run 999999"), std::string::npos) << missing.output;
}

// Load shaping end to end: each run of a jittered cron job starts no
// earlier than its slot plus the delay its ledger entry names.
TEST_F(CtlTest, CronRunsStartAfterTheirJitter) {
  std::filesystem::create_directories(cluster.dir() + "/spread");
  std::ofstream(cluster.dir() + "/spread/jobs.yaml") << R"(jobs:
  - name: spread
    schedule: '* * * * * *'
    jitter: 3s
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
)";
  ASSERT_TRUE(applied(cluster.dir() + "/spread"));
  std::vector<RunRowView> done;
  ASSERT_TRUE(wait_until(
      [&] {
        done.clear();
        for (const auto& r : cluster.db().runs_of_job("spread"))
          if (r.state == "SUCCEEDED") done.push_back(r);
        return done.size() >= 3;
      },
      20s));
  ASSERT_EQ(ctl({"jobs", "pause", "spread"}).code, 0);
  int delayed = 0;
  for (const auto& r : done) {
    const auto shown = ctl({"runs", "show", std::to_string(r.id), "-o", "json"}).output;
    const std::int64_t jitter_ms = number_after(shown, "jitter_ms");
    EXPECT_LT(jitter_ms, 3000) << shown.substr(0, 1500);
    EXPECT_GE(r.started_at_unix - r.scheduled_for_unix, jitter_ms / 1000.0 - 0.001)
        << "run " << r.id << " started before its slot + " << jitter_ms << " ms";
    if (jitter_ms > 0) ++delayed;
  }
  EXPECT_GT(delayed, 0);
}

// Retention end to end: a finished run older than retention_days is pruned
// (with its log) by the leader within prune_every; a recent one stays; the
// pruned run's output is still in the log archive.
TEST_F(CtlTest, OldFinishedRunsArePrunedAndTheirArchivedOutputStays) {
  std::filesystem::create_directories(cluster.dir() + "/talk");
  std::ofstream(cluster.dir() + "/talk/jobs.yaml") << R"(jobs:
  - name: talk
    tasks:
      - {kind: PROGRAM, command: [/bin/echo, kept in the archive]}
)";
  ASSERT_TRUE(applied(cluster.dir() + "/talk"));
  const std::string old_run = std::to_string(std::stoll(ctl({"jobs", "trigger", "talk"}).output));
  ASSERT_EQ(ctl({"logs", "-f", old_run, "--interval", "200ms"}).code, 0);
  const std::string recent = std::to_string(std::stoll(ctl({"jobs", "trigger", "talk"}).output));
  ASSERT_EQ(ctl({"logs", "-f", recent, "--interval", "200ms"}).code, 0);
  ASSERT_EQ(ctl({"settings", "set", "retention_days", "1"}).code, 0);
  age_finished_run(cluster.url(), std::stoll(old_run), 2);
  EXPECT_TRUE(wait_until([&] { return ctl({"runs", "show", old_run}).code == 4; }, 15s)) << "pruned";
  EXPECT_EQ(ctl({"runs", "show", recent}).code, 0) << "a run finished today stays";
  EXPECT_EQ(ctl({"logs", old_run, "--archive"}).output, "kept in the archive\n");
}

// SPEC 6: a task reports its progress on its standard output; the worker
// carries it in its heartbeats and the leader records it on the run, where
// `ctl runs show` (and the API, and the dashboard) show it while it runs.
TEST_F(CtlTest, ATasksProgressIsShownWhileItRuns) {
  std::filesystem::create_directories(cluster.dir() + "/progress");
  std::ofstream(cluster.dir() + "/progress/jobs.yaml") << R"(jobs:
  - name: long-load
    tasks:
      - {kind: PROGRAM, command: [/bin/sh, -c, 'echo "::progress:: 1/3 tables"; sleep 1; echo "::progress:: 2/3 tables"; sleep 30']}
)";
  ASSERT_TRUE(applied(cluster.dir() + "/progress"));
  auto trigger = ctl({"jobs", "trigger", "long-load"});
  ASSERT_EQ(trigger.code, 0) << trigger.output;
  const std::string run = std::to_string(std::stoll(trigger.output));
  std::string shown;
  EXPECT_TRUE(wait_until(
      [&] {
        shown = ctl({"runs", "show", run}).output;
        return shown.find("progress: 2/3 tables") != std::string::npos;
      },
      15s))
      << shown;
  EXPECT_NE(shown.find("state: RUNNING"), std::string::npos) << shown;
  // The progress line is output like any other.
  auto logs = ctl({"logs", run});
  EXPECT_NE(logs.output.find("::progress:: 1/3 tables"), std::string::npos) << logs.output;
  ASSERT_EQ(ctl({"runs", "cancel", run}).code, 0);
  EXPECT_TRUE(cluster.wait_for_state(std::stoll(run), "CANCELED", 15s));
  // The canceled attempt is recorded like any other, and the cancel leaves
  // its trail: the operator's request and the change itself.
  shown = ctl({"runs", "show", run}).output;
  EXPECT_TRUE(std::regex_search(shown, std::regex(R"(\n1\s+w1\s+\d+\s+CANCELED\s)"))) << shown;
  auto audit = ctl({"audit", "--subject", "run:" + run});
  EXPECT_NE(audit.output.find("run.cancel "), std::string::npos) << audit.output;
  EXPECT_NE(audit.output.find("run.cancel_requested"), std::string::npos) << audit.output;
  EXPECT_NE(audit.output.find("run.canceled"), std::string::npos) << audit.output;
}

TEST_F(CtlTest, ParametersReachTheTask) {
  std::filesystem::create_directories(cluster.dir() + "/params");
  std::ofstream(cluster.dir() + "/params/jobs.yaml") << R"(jobs:
  - name: greet
    parameters: {greeting: hello, name: {pattern: '[a-z]+', required: true}}
    tasks:
      - {kind: PROGRAM, command: [/bin/sh, -c, 'echo "$BATON_PARAM_GREETING $0"', '{{param.name}}']}
)";
  ASSERT_TRUE(applied(cluster.dir() + "/params"));
  // The job's declarations refuse what does not fit, naming the parameter.
  auto refused = ctl({"jobs", "trigger", "greet", "--param", "name=-rf /"});
  EXPECT_NE(refused.code, 0) << refused.output;
  EXPECT_NE(refused.output.find("parameter 'name' must match the pattern '[a-z]+', got '-rf /'"), std::string::npos)
      << refused.output;
  auto undeclared = ctl({"jobs", "trigger", "greet", "--param", "name=world", "--param", "colour=red"});
  EXPECT_NE(undeclared.code, 0) << undeclared.output;
  EXPECT_NE(undeclared.output.find("parameter 'colour' is not declared"), std::string::npos) << undeclared.output;
  auto trigger = ctl({"jobs", "trigger", "greet", "--param", "name=world"});
  ASSERT_EQ(trigger.code, 0) << trigger.output;
  const std::string run = std::to_string(std::stoll(trigger.output));
  auto logs = ctl({"logs", "-f", run, "--interval", "200ms"});
  EXPECT_EQ(logs.code, 0) << logs.output;
  EXPECT_NE(logs.output.find("hello world"), std::string::npos) << logs.output;

  // What the run was given, shown by `runs show` (a value escaped as every
  // field is: an ESC a terminal would obey is printed as ^[), and how long
  // it ran in the list, over every run counted by state.
  auto odd = ctl({"jobs", "trigger", "greet", "--param", "name=world", "--param", "greeting=\x1b[31mred"});
  ASSERT_EQ(odd.code, 0) << odd.output;
  const std::string odd_run = std::to_string(std::stoll(odd.output));
  ASSERT_EQ(ctl({"logs", "-f", odd_run, "--interval", "200ms"}).code, 0);
  auto shown = ctl({"runs", "show", run});
  EXPECT_TRUE(std::regex_search(shown.output, std::regex(R"(\nPARAMETERS\nname: world\n)"))) << shown.output;
  EXPECT_TRUE(std::regex_search(shown.output, std::regex(R"(\nduration: \d+(ms|\.\d+s|s)\n)"))) << shown.output;
  auto odd_shown = ctl({"runs", "show", odd_run});
  EXPECT_NE(odd_shown.output.find("greeting: ^[[31mred\n"), std::string::npos) << odd_shown.output;
  EXPECT_EQ(odd_shown.output.find('\x1b'), std::string::npos) << "an escape reached the terminal";
  auto listed = ctl({"runs", "list", "--job", "greet"});
  ASSERT_EQ(listed.code, 0) << listed.output;
  EXPECT_TRUE(std::regex_search(listed.output, std::regex(R"(FINISHED\s+DURATION\s+ERROR)"))) << listed.output;
  EXPECT_TRUE(
      std::regex_search(listed.output, std::regex("\\n" + run + R"(\s+greet\s+SUCCEEDED\s.*\s\d+(ms|\.\d+s|s)\s)")))
      << listed.output;
  EXPECT_TRUE(std::regex_search(listed.output, std::regex(R"(\nall runs by state: .*SUCCEEDED [1-9])")))
      << listed.output;
}

// Values that a shell or a program could take for commands or options
// (docs/security.md, "Parameters and shells"): a substitution into a shell
// script is refused at apply unless the task asks for shell_quote; then, and
// as an argument of its own, each value reaches the program as one literal
// argument. Checked failing: without the rewrite of job_files.cpp the
// quoted job's "x; touch pwned" made the file.
TEST_F(CtlTest, ParameterValuesReachTheProgramAsOneLiteralArgument) {
  std::filesystem::create_directories(cluster.dir() + "/inject");
  const std::string pwned = cluster.dir() + "/pwned";
  std::ofstream(cluster.dir() + "/inject/jobs.yaml") << R"(jobs:
  - name: unquoted
    tasks:
      - {kind: PROGRAM, command: [/bin/sh, -c, 'echo {{param.v}}']}
)";
  auto refused = ctl({"apply", "-f", cluster.dir() + "/inject"});
  EXPECT_NE(refused.code, 0) << refused.output;
  EXPECT_NE(refused.output.find("substitutes {{param.NAME}} into a shell script"), std::string::npos) << refused.output;

  std::ofstream(cluster.dir() + "/inject/jobs.yaml") << R"(jobs:
  - name: quoted
    parameters: {v: {}}
    tasks:
      - {kind: PROGRAM, command: [/bin/sh, -c, 'cd /tmp && printf "<%s>" {{param.v}} "{{param.v}}"'], shell_quote: true}
  - name: argv
    parameters: {v: {}}
    tasks:
      - {kind: PROGRAM, command: [/usr/bin/printf, '<%s>', '{{param.v}}']}
)";
  auto applied = ctl({"apply", "-f", cluster.dir() + "/inject"});
  ASSERT_EQ(applied.code, 0) << applied.output;
  auto output_of = [&](const std::string& job, const std::string& value) {
    auto trigger = ctl({"jobs", "trigger", job, "--param", "v=" + value});
    EXPECT_EQ(trigger.code, 0) << trigger.output;
    const std::string run = std::to_string(std::stoll(trigger.output));
    return ctl({"logs", "-f", run, "--interval", "200ms"}).output;
  };
  const std::string evil = "x; touch " + pwned;
  EXPECT_NE(output_of("quoted", evil).find("<" + evil + "><" + evil + ">"), std::string::npos);
  EXPECT_NE(output_of("argv", evil).find("<" + evil + ">"), std::string::npos);
  EXPECT_NE(output_of("quoted", "-n").find("<-n><-n>"), std::string::npos);
  EXPECT_NE(output_of("argv", "--version").find("<--version>"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(pwned)) << "a parameter value ran as a command";
}

// Chains end to end: a task with on_error continue lets the chain finish and
// the run fail, every task's result recorded with the attempt; a
// self_destruct job is retired by its first success (audited as system).
TEST_F(CtlTest, ChainsRecordEachTaskAndASelfDestructJobRetires) {
  std::filesystem::create_directories(cluster.dir() + "/chains");
  std::ofstream(cluster.dir() + "/chains/jobs.yaml") << R"(jobs:
  - name: chain
    tasks:
      - {kind: BUILTIN, name: check, builtin: FAIL, argument: disk low, on_error: continue}
      - {kind: BUILTIN, name: cleanup, builtin: LOG, argument: cleaned}
  - name: once
    self_destruct: true
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
)";
  ASSERT_TRUE(applied(cluster.dir() + "/chains"));
  const std::string run = std::to_string(std::stoll(ctl({"jobs", "trigger", "chain"}).output));
  auto logs = ctl({"logs", "-f", run, "--interval", "200ms"});
  EXPECT_NE(logs.code, 0) << "the run failed: " << logs.output;
  EXPECT_NE(logs.output.find("cleaned"), std::string::npos) << "the chain went on: " << logs.output;
  auto shown = ctl({"runs", "show", run, "-o", "json"}).output;
  EXPECT_NE(shown.find("\"name\": \"check\""), std::string::npos) << shown;
  EXPECT_NE(shown.find("\"name\": \"cleanup\""), std::string::npos) << shown;

  const std::string once = std::to_string(std::stoll(ctl({"jobs", "trigger", "once"}).output));
  EXPECT_EQ(ctl({"logs", "-f", once, "--interval", "200ms"}).code, 0);
  EXPECT_EQ(ctl({"jobs", "show", "once"}).code, 4) << "retired by its first success";
  auto audit = ctl({"audit", "--subject", "job:once"});
  EXPECT_NE(audit.output.find("job.self_destruct"), std::string::npos) << audit.output;
}

namespace baton::testing {
namespace {

/// The receiver's log (webhook_receiver.py): one JSON object per request.
std::vector<boost::json::object> received(const std::string& log) {
  std::vector<boost::json::object> out;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(boost::json::parse(line).as_object());
  return out;
}

std::size_t count_of(const std::vector<boost::json::object>& log, const std::string& kind, int status) {
  return static_cast<std::size_t>(std::count_if(log.begin(), log.end(), [&](const boost::json::object& r) {
    return r.at("kind").as_string() == kind && r.at("status").as_int64() == status;
  }));
}

// Outgoing notifications end to end (docs/webhooks.md): a webhook applied
// from a file with its secret in another, a local HTTPS receiver of the
// cluster's CA that refuses each event's first attempt. Two final failures
// (each a dead letter and a run_failed, and together two failures in a
// row) and a leader change (the leader SIGKILLed while the first attempts
// wait for their retry) all reach it signed, and each event id is
// processed once; the deliveries say so in ctl.
TEST_F(CtlTest, WebhooksReachAnHttpsReceiverSignedOncePerEventAcrossRetriesAndALeaderKill) {
  const std::string dir = cluster.dir() + "/hooks";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/secret") << "receiver-secret-0123456789\n";
  const std::string port_file = dir + "/port", log = dir + "/received.jsonl";
  ChildProcess receiver(
      {"/usr/bin/python3", std::string(BATON_SOURCE_DIR) + "/cmd/tests/webhook_receiver.py", port_file,
       ThrowawayCa::shared().node_cert(), ThrowawayCa::shared().node_key(), "receiver-secret-0123456789", log},
      dir + "/receiver.log");
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(port_file); }, 10s)) << receiver.log();
  std::string port;
  std::ifstream(port_file) >> port;

  // A webhook that is not https is refused, naming where.
  std::ofstream(dir + "/bad.yaml") << "webhooks:\n  - {name: plain, url: 'http://127.0.0.1:9/x', events: [run_failed],"
                                      " secret: 'xxxxxxxxxxxxxxxx'}\n";
  auto bad = ctl({"apply", "-f", dir + "/bad.yaml"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.output.find("bad.yaml: webhooks[0].url: must be https://"), std::string::npos) << bad.output;
  std::filesystem::remove(dir + "/bad.yaml");

  std::ofstream(dir + "/hooks.yaml") << "webhooks:\n  - name: pager\n    url: https://127.0.0.1:" << port
                                     << "/baton\n    events: [dead_letter, run_failed, failures_in_a_row, "
                                        "leader_changed]\n    jobs: [breaks]\n    failures_in_a_row: 2\n"
                                        "    secret_file: secret\n";
  auto applied = ctl({"apply", "-f", dir + "/hooks.yaml"});
  ASSERT_EQ(applied.code, 0) << applied.output;
  EXPECT_NE(applied.output.find("+ webhook pager"), std::string::npos) << applied.output;
  EXPECT_NE(ctl({"apply", "-f", dir + "/hooks.yaml"}).output.find("unchanged 1"), std::string::npos)
      << "the same file again changes nothing (the secret compared by its hash)";
  const auto shown = ctl({"webhooks", "show", "pager", "-o", "json"}).output;
  EXPECT_EQ(shown.find("receiver-secret"), std::string::npos) << shown;
  EXPECT_NE(shown.find("\"secret_sha256\""), std::string::npos) << shown;

  std::vector<std::int64_t> failed;
  for (int i = 0; i < 2; ++i) {
    auto t = ctl({"jobs", "trigger", "breaks"});
    ASSERT_EQ(t.code, 0) << t.output;
    failed.push_back(std::stoll(t.output));
    ASSERT_TRUE(cluster.wait_for_state(failed.back(), "FAILED", 20s));
  }
  // Every first attempt refused (503): 5 events wait for their retry...
  ASSERT_TRUE(wait_until(
      [&] {
        auto r = received(log);
        return count_of(r, "dead_letter", 503) == 2 && count_of(r, "run_failed", 503) == 2 &&
               count_of(r, "failures_in_a_row", 503) == 1;
      },
      20s))
      << receiver.log();
  // ...when their leader dies. The next one sends them, and its own election.
  n1->signal(SIGKILL);
  ASSERT_EQ(cluster.wait_for_leader(10s, 1), "n2");
  ASSERT_TRUE(wait_until(
      [&] {
        auto r = received(log);
        return count_of(r, "dead_letter", 200) >= 2 && count_of(r, "run_failed", 200) >= 2 &&
               count_of(r, "failures_in_a_row", 200) >= 1 && count_of(r, "leader_changed", 200) >= 1;
      },
      40s))
      << receiver.log() << ctl({"webhooks", "deliveries", "pager"}).output;

  const auto requests = received(log);
  std::map<std::string, int> processed;
  for (const auto& r : requests) {
    EXPECT_TRUE(r.at("signature_ok").as_bool()) << boost::json::serialize(r);
    EXPECT_EQ(r.at("payload_id"), r.at("event")) << "the event id is in the payload and its header alike";
    if (r.at("processed").as_bool()) ++processed[std::string(r.at("event").as_string())];
  }
  EXPECT_EQ(processed.size(), 6u) << "2 dead letters, 2 final failures, 1 streak, 1 leader change";
  for (const auto& [event, times] : processed) EXPECT_EQ(times, 1) << event;
  for (const auto& r : requests) {
    if (r.at("kind").as_string() == "leader_changed" && r.at("status").as_int64() == 200) {
      EXPECT_EQ(r.at("data").at("leader_id").as_string(), "n2");
    }
    if (r.at("kind").as_string() == "failures_in_a_row") {
      EXPECT_EQ(r.at("data").at("failures").as_int64(), 2);
    }
  }

  // The deliveries as ctl shows them: each delivered, each at its second
  // attempt or later (the first was refused), none pending.
  auto listed = ctl({"webhooks", "deliveries", "pager", "-o", "json"});
  ASSERT_EQ(listed.code, 0) << listed.output;
  auto items = boost::json::parse(listed.output).at("items").as_array();
  EXPECT_EQ(items.size(), 6u) << listed.output;
  for (const auto& d : items) {
    EXPECT_EQ(d.at("state").as_string(), "delivered") << boost::json::serialize(d);
    EXPECT_GE(d.at("attempts").as_int64(), 2) << boost::json::serialize(d);
  }
  auto table = ctl({"webhooks", "list"});
  EXPECT_TRUE(std::regex_search(table.output, std::regex(R"(pager\s+https://127\.0\.0\.1)"))) << table.output;
  EXPECT_NE(ctl({"webhooks", "ping", "pager"}).code, 2);
  // A read token sees where deliveries go, not the URL's path (a
  // capability URL's secret) nor the secret's digest (security review
  // N-L2).
  auto reader = ctl({"token", "create", "hook-viewer", "--role", "read"});
  std::smatch m;
  ASSERT_TRUE(std::regex_search(reader.output, m, std::regex("(^|\n)(baton_[0-9a-f]{64})\n"))) << reader.output;
  const auto seen = ctl({"webhooks", "show", "pager", "-o", "json"}, m[2]).output;
  EXPECT_NE(seen.find("\"url\":\"https://127.0.0.1:" + port + "/...\""), std::string::npos) << seen;
  EXPECT_EQ(seen.find("secret_sha256"), std::string::npos) << seen;
}

}  // namespace
}  // namespace baton::testing

namespace baton::testing {
namespace {

// The command line for people and tools: ctl's version with the node's,
// and one list in every output format.
TEST_F(CtlTest, VersionSaysBothSidesAndAListPrintsInEveryFormat) {
  auto version = ctl({"version"});
  ASSERT_EQ(version.code, 0) << version.output;
  EXPECT_TRUE(
      std::regex_search(version.output, std::regex(R"(client: baton ctl \d+\.\d+\.\d+\nserver: \d+\.\d+\.\d+)")))
      << version.output;

  auto jsonl = ctl({"jobs", "list", "-o", "jsonl"});
  ASSERT_EQ(jsonl.code, 0) << jsonl.output;
  std::istringstream lines(jsonl.output);
  std::set<std::string> names;
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) names.insert(std::string(boost::json::parse(line).at("name").as_string()));
  EXPECT_EQ(names, (std::set<std::string>{"breaks", "nightly", "quick"}));

  auto yaml = ctl({"jobs", "show", "quick", "-o", "yaml"});
  ASSERT_EQ(yaml.code, 0) << yaml.output;
  EXPECT_NE(yaml.output.find("name: \"quick\""), std::string::npos) << yaml.output;

  auto bare = ctl({"jobs", "list", "--no-headers"});
  ASSERT_EQ(bare.code, 0) << bare.output;
  EXPECT_EQ(bare.output.find("NAME"), std::string::npos) << bare.output;
  EXPECT_NE(bare.output.find("quick"), std::string::npos) << bare.output;
  EXPECT_EQ(ctl({"jobs", "list", "-o", "xml"}).code, 2);
}

}  // namespace
}  // namespace baton::testing

// `jobs export` writes the jobs as a job file that `apply` reads back into
// the same definitions: a dry run of it changes nothing, and a job deleted
// and applied again from it is the job it was.
TEST_F(CtlTest, JobsExportedAndAppliedAgainChangeNothing) {
  auto get_json = [&](const std::string& target) {
    return boost::json::parse(
        http_request(cluster.port("n1"), "GET", target, {{"Authorization", "Bearer " + admin_token}}).body);
  };
  std::filesystem::create_directories(cluster.dir() + "/export-src");
  std::ofstream(cluster.dir() + "/export-src/jobs.yaml") << R"(jobs:
  - name: rich
    schedule: '0 */5 * * * *'
    time_zone: Europe/Paris
    max_attempts: 3
    priority: 5
    timeout: 90s
    retry: {base: 1500ms, cap: 2h}
    selector: {zone: a}
    misfire_policy: run_all
    starting_deadline: 45s
    max_instances: 2
    concurrency_policy: forbid
    concurrency: {key: '{{param.customer}}', limit: 1}
    rate_limit: {runs: 10, per: 1m}
    jitter: 5s
    parameters:
      customer: acme
      region: {type: string, enum: [eu, us], default: eu}
    resources: {memory: 512M, cpu: '0.5'}
    tasks:
      - kind: PROGRAM
        name: fetch
        command: [/bin/sh, -c, 'echo {{param.customer}}']
        shell_quote: true
        env: {A: '1'}
        timeout: 5s
        on_error: continue
      - {kind: SQL, connection: warehouse, sql: 'select 1', run_as: reporter}
      - {kind: BUILTIN, builtin: SLEEP, argument: 1s, ignore_error: true}
  - name: on-invoice
    on_events: [invoice.paid]
    tasks: [{kind: BUILTIN, builtin: NOOP}]
)";
  ASSERT_TRUE(applied(cluster.dir() + "/export-src"));
  auto exported = ctl({"jobs", "export"});
  ASSERT_EQ(exported.code, 0) << exported.output;
  EXPECT_NE(exported.output.find("name: \"rich\""), std::string::npos) << exported.output;
  std::filesystem::create_directories(cluster.dir() + "/exported");
  std::ofstream(cluster.dir() + "/exported/all.yaml") << exported.output;
  const auto jobs = get_json("/api/v1/jobs?limit=500").at("items").as_array().size();
  auto plan = ctl({"apply", "-f", cluster.dir() + "/exported", "--prune", "--dry-run"});
  ASSERT_EQ(plan.code, 0) << plan.output;
  EXPECT_NE(plan.output.find("dry run: would create 0, update 0, delete 0, unchanged " + std::to_string(jobs)),
            std::string::npos)
      << plan.output << "\n"
      << exported.output;
  // Deleted, then applied from the export: the same definition.
  const auto before = get_json("/api/v1/jobs/rich/document");
  ASSERT_EQ(ctl({"jobs", "delete", "rich"}).code, 0);
  auto back = ctl({"apply", "-f", cluster.dir() + "/exported"});
  ASSERT_EQ(back.code, 0) << back.output;
  EXPECT_NE(back.output.find("+ rich"), std::string::npos) << back.output;
  EXPECT_EQ(get_json("/api/v1/jobs/rich/document"), before);
  // One job by name, as JSON.
  auto one = ctl({"jobs", "export", "on-invoice", "-o", "json"});
  ASSERT_EQ(one.code, 0) << one.output;
  EXPECT_EQ(
      one.output,
      R"({"jobs":[{"name":"on-invoice","on_events":["invoice.paid"],"tasks":[{"kind":"BUILTIN","builtin":"NOOP"}]}]})"
      "\n");
  EXPECT_EQ(ctl({"jobs", "export", "no-such-job"}).code, 4);
}

namespace {

/// What `command` (run by /bin/sh) prints, and its exit status.
std::pair<int, std::string> shell_output(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  char buf[4096];
  while (auto n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace

// Completion for bash, zsh and fish: each shell parses its script, and each
// completes `baton ctl runs <TAB>` with the verb's words.
TEST(CtlCompletion, EachShellParsesItsScriptAndCompletesAVerbsWords) {
  const std::string dir = ::testing::TempDir();
  const std::string lines = " | tr ' ' '\\n' | grep -x -e list -e show -e cancel | sort | tr '\\n' ' '";
  for (const std::string shell : {"bash", "zsh", "fish"}) {
    const std::string script = dir + "/baton-completion." + shell;
    auto made = shell_output(std::string(BATON_BINARY) + " ctl completion " + shell + " > " + script);
    ASSERT_EQ(made.first, 0) << made.second;
    auto parsed = shell_output(shell + (shell == "fish" ? " --no-execute " : " -n ") + script);
    EXPECT_EQ(parsed.first, 0) << shell << " does not parse its script: " << parsed.second;
    std::string complete;
    if (shell == "bash")
      complete = "bash -c 'source " + script +
                 "; COMP_WORDS=(baton ctl runs \"\"); COMP_CWORD=3; _baton_ctl; echo ${COMPREPLY[@]}'";
    else if (shell == "zsh")
      complete = "zsh -c 'compadd() { shift; print -- \"$@\"; }; _files() {}; source " + script +
                 "; words=(baton ctl runs \"\"); CURRENT=4; _baton_ctl'";
    else
      complete = "fish -c 'source " + script + "; complete -C \"baton ctl runs \"'";
    auto words = shell_output(complete + lines);
    EXPECT_EQ(words.second, "cancel list show ") << shell;
  }
  EXPECT_EQ(shell_output(std::string(BATON_BINARY) + " ctl completion tcsh").first, 2);
}

// Completion that knows the cluster (issue 63: `jobs show <TAB>` offered
// nothing): a job's place offers the cluster's job names, asked with the
// global flags the line has; a worker's, its workers. Checked failing with
// the static script.
TEST_F(CtlTest, CompletionOffersTheClustersJobAndWorkerNames) {
  const std::string script = cluster.dir() + "/completion.bash";
  ASSERT_EQ(shell_output(std::string(BATON_BINARY) + " ctl completion bash > " + script).first, 0);
  const std::string addr = "127.0.0.1:" + std::to_string(cluster.port("n2"));
  auto complete = [&](const std::string& line_words, int cword) {
    return shell_output("env HOME=" + cluster.dir() + " BATON_TOKEN=" + admin_token + " bash -c 'baton() { " +
                        BATON_BINARY + " \"$@\"; }; source " + script + "; COMP_WORDS=(" + line_words +
                        "); COMP_CWORD=" + std::to_string(cword) + "; _baton_ctl; echo ${COMPREPLY[@]}'")
        .second;
  };
  const auto jobs = complete("baton ctl --addr " + addr + " jobs show \"\"", 6);
  EXPECT_NE(jobs.find("nightly"), std::string::npos) << jobs;
  EXPECT_NE(jobs.find("breaks"), std::string::npos) << jobs;
  const auto some = complete("baton ctl --addr " + addr + " jobs trigger ni", 6);
  EXPECT_EQ(some, "nightly\n") << some;
  const auto workers = complete("baton ctl --addr " + addr + " workers drain \"\"", 6);
  EXPECT_NE(workers.find("w1"), std::string::npos) << workers;
  const auto outputs = complete("baton ctl runs list -o \"\"", 5);
  EXPECT_EQ(outputs, "table wide json jsonl yaml\n") << outputs;
  EXPECT_EQ(ctl({"__complete", "jobs"}).output.find("nightly\n") != std::string::npos, true);
  EXPECT_EQ(ctl({"--help"}).output.find("__complete"), std::string::npos) << "a verb for scripts, not in help";
}

// Bulk cancel and re-run by filter: listed first (--dry-run), refused
// without --yes, then every matching run acted on, one audited call each.
TEST_F(CtlTest, RunsAreCancelledAndReRunInBulkByFilter) {
  std::filesystem::create_directories(cluster.dir() + "/bulk");
  std::ofstream(cluster.dir() + "/bulk/jobs.yaml")
      << "jobs:\n  - name: sleeps\n    tasks: [{kind: PROGRAM, command: [/bin/sleep, '30']}]\n";
  ASSERT_TRUE(applied(cluster.dir() + "/bulk"));
  const auto a = cluster.trigger("n1", "sleeps"), b = cluster.trigger("n1", "sleeps"),
             other = cluster.trigger("n1", "quick");
  ASSERT_TRUE(cluster.wait_for_state(a, "RUNNING", 15s) && cluster.wait_for_state(b, "RUNNING", 15s));
  ASSERT_TRUE(cluster.wait_for_state(other, "SUCCEEDED", 15s));
  auto none = ctl({"runs", "cancel"});
  EXPECT_EQ(none.code, 2) << none.output;
  EXPECT_NE(none.output.find("give RUN, or filters"), std::string::npos) << none.output;
  auto plan = ctl({"runs", "cancel", "--job", "sleeps", "--state", "RUNNING", "--dry-run"});
  EXPECT_EQ(plan.code, 0) << plan.output;
  EXPECT_NE(plan.output.find("2 run(s) match: " + std::to_string(b) + " " + std::to_string(a)), std::string::npos)
      << plan.output;
  auto unconfirmed = ctl({"runs", "cancel", "--job", "sleeps"});
  EXPECT_EQ(unconfirmed.code, 2) << unconfirmed.output;
  EXPECT_NE(unconfirmed.output.find("add --yes to cancel them"), std::string::npos) << unconfirmed.output;
  EXPECT_EQ(cluster.db().run(a)->state, "RUNNING") << "nothing cancelled without --yes";
  auto cancel = ctl({"runs", "cancel", "--job", "sleeps", "--state", "RUNNING", "--yes"});
  EXPECT_EQ(cancel.code, 0) << cancel.output;
  EXPECT_NE(cancel.output.find("cancel: 2 done, 0 not done, of 2 matched"), std::string::npos) << cancel.output;
  EXPECT_TRUE(cluster.wait_for_state(a, "CANCELED", 15s) && cluster.wait_for_state(b, "CANCELED", 15s));
  EXPECT_EQ(cluster.db().run(other)->state, "SUCCEEDED") << "another job's run untouched";
  // Re-run what was cancelled: two new runs of the job; a cancel of
  // finished runs is refused run by run, and says so.
  auto rerun = ctl({"runs", "rerun", "--job", "sleeps", "--state", "CANCELED", "--yes", "-o", "json"});
  EXPECT_EQ(rerun.code, 0) << rerun.output;
  EXPECT_NE(rerun.output.find("\"refused\":[]"), std::string::npos) << rerun.output;
  ASSERT_TRUE(wait_until(
      [&] {
        auto listed = ctl({"runs", "list", "--job", "sleeps", "--state", "RUNNING", "-o", "json"});
        return std::count(listed.output.begin(), listed.output.end(), '{') >= 3;  // the page and two runs
      },
      15s));
  auto finished = ctl({"runs", "cancel", "--job", "quick", "--yes"});
  EXPECT_EQ(finished.code, 1) << finished.output;
  EXPECT_NE(finished.output.find("run " + std::to_string(other) + ": not done"), std::string::npos) << finished.output;
  ASSERT_EQ(ctl({"runs", "cancel", "--job", "sleeps", "--state", "RUNNING", "--yes"}).code, 0);
}
