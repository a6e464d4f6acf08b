#include "baton/checker/history.h"

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "invariant_support.h"

namespace baton::checker {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

std::map<std::string, std::string> kv(const std::string& line) {
  std::map<std::string, std::string> out;
  std::istringstream in(line);
  std::string tok;
  while (in >> tok) {
    auto eq = tok.find('=');
    if (eq != std::string::npos) out[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return out;
}

std::int64_t to_i(const std::string& s) {
  try {
    return s.empty() ? 0 : std::stoll(s);
  } catch (const std::exception&) {
    return 0;
  }
}

// Field accessors that treat a missing or null field as absent.
const json::value* field(const json::object& o, const char* k) {
  auto it = o.find(k);
  return it == o.end() || it->value().is_null() ? nullptr : &it->value();
}
std::optional<std::int64_t> opt_int(const json::object& o, const char* k) {
  const json::value* v = field(o, k);
  if (!v) return std::nullopt;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  if (v->is_double()) return static_cast<std::int64_t>(v->as_double());
  if (v->is_string()) return to_i(std::string(v->as_string()));
  return std::nullopt;
}
std::int64_t num(const json::object& o, const char* k) { return opt_int(o, k).value_or(0); }
std::string str(const json::object& o, const char* k) {
  const json::value* v = field(o, k);
  return v && v->is_string() ? std::string(v->as_string()) : "";
}

/// Reads a JSON-lines file: one object per line. A missing file is an
/// error; a line that is not an object is counted in `bad`.
std::vector<json::object> read_jsonl(const std::string& path, History& h, std::int64_t* bad = nullptr) {
  std::vector<json::object> out;
  std::ifstream in(path);
  if (!in) {
    h.read_errors.push_back("missing " + path);
    return out;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    boost::system::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) {
      if (bad) ++*bad;
      continue;
    }
    out.push_back(std::move(v.as_object()));
  }
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep))
    if (!part.empty()) out.push_back(part);
  return out;
}

}  // namespace

std::map<std::int64_t, std::vector<Execution>> build_executions(const std::vector<TaskEvent>& events) {
  // Processes by (pid, pstart): a reused pid has another start time.
  std::map<std::pair<std::int64_t, std::int64_t>, ProcessLife> procs;
  std::map<std::pair<std::int64_t, std::int64_t>, std::pair<std::int64_t, std::int64_t>> root_of;
  for (const auto& e : events) {
    const auto key = std::make_pair(e.pid, e.pstart);
    auto [it, fresh] = procs.try_emplace(key);
    ProcessLife& p = it->second;
    if (fresh) {
      p = ProcessLife{e.run,    e.attempt, e.token,   e.role,    e.worker, e.pid,
                      e.pstart, e.mono_ns, e.mono_ns, e.wall_us, {}};
      root_of[key] = {e.root_pid, e.root_pstart};
    }
    p.start_ns = std::min(p.start_ns, e.mono_ns);
    p.last_ns = std::max(p.last_ns, e.mono_ns);
    if (e.ev == "start") p.start_wall_us = e.wall_us;
    if (e.ev == "exit") p.exit_status = e.status.value_or(-1);
  }
  std::map<std::pair<std::int64_t, std::int64_t>, Execution> by_root;
  for (auto& [key, p] : procs) {
    const auto root = root_of[key];
    auto [it, fresh] = by_root.try_emplace(root);
    Execution& x = it->second;
    if (fresh) {
      x.run = p.run;
      x.attempt = p.attempt;
      x.token = p.token;
      x.worker = p.worker;
      x.root_pid = root.first;
      x.root_pstart = root.second;
      x.from_ns = p.start_ns;
      x.to_ns = p.last_ns;
    }
    x.from_ns = std::min(x.from_ns, p.start_ns);
    x.to_ns = std::max(x.to_ns, p.last_ns);
    if (key == root) x.main = p;
    x.processes.push_back(p);
  }
  std::map<std::int64_t, std::vector<Execution>> out;
  for (auto& [root, x] : by_root) out[x.run].push_back(std::move(x));
  auto earlier = [](const Execution& a, const Execution& b) { return a.from_ns < b.from_ns; };
  for (auto& [run, xs] : out) std::sort(xs.begin(), xs.end(), earlier);
  // What every invariant over executions relies on, whatever the evidence
  // said: each execution is one run's, has its processes (its root among
  // them), spans from its first to its last event, and a run's executions
  // come in the order they began.
  std::size_t in_all = 0;
  for (const auto& [run, xs] : out) {
    CHECKER_ASSERT(std::is_sorted(xs.begin(), xs.end(), earlier));
    for (const auto& x : xs) {
      CHECKER_ASSERT(x.run == run && !x.processes.empty() && x.from_ns <= x.to_ns);
      in_all += x.processes.size();
    }
  }
  CHECKER_ASSERT(in_all == procs.size());  // every process in exactly one execution
  return out;
}

History load_history(const std::string& dir) {
  History h;
  {
    std::ifstream in(dir + "/window.txt");
    std::string line;
    if (!in || !std::getline(in, line)) h.read_errors.push_back("missing " + dir + "/window.txt");
    auto w = kv(line);
    h.window.start_us = to_i(w["start_us"]);
    h.window.end_us = to_i(w["end_us"]);
    h.window.start_mono_ns = to_i(w["start_mono_ns"]);
    h.window.end_mono_ns = to_i(w["end_mono_ns"]);
    h.window.cron_job = w["cron_job"];
    h.window.faults = split(w["faults"], ',');
    h.window.continuation_ms = to_i(w["continuation_ms"]);
    h.window.continuation_margin_ms = to_i(w["continuation_margin_ms"]);
    h.window.lease_ms = to_i(w["lease_ms"]);
    h.window.poll_ms = to_i(w["poll_ms"]);
  }
  {
    std::ifstream in(dir + "/nemesis.log");
    if (!in) h.read_errors.push_back("missing " + dir + "/nemesis.log");
    std::string line;
    while (std::getline(in, line)) {
      auto f = kv(line);
      if (!f.count("phase")) continue;
      h.nemesis.push_back({to_i(f["t_us"]), to_i(f["mono_ns"]), f["phase"], f["fault"], f["target"], f["detail"]});
    }
    // Pair each inject with the next heal of the same fault and target; an
    // effect line in between says the fault was observed to take hold.
    for (std::size_t i = 0; i < h.nemesis.size(); ++i) {
      const auto& n = h.nemesis[i];
      if (n.phase != "inject") continue;
      FaultWindow w{n.fault, n.target, n.detail, n.mono_ns, h.window.end_mono_ns, n.t_us, h.window.end_us, false};
      for (std::size_t j = i + 1; j < h.nemesis.size(); ++j) {
        const auto& m = h.nemesis[j];
        if (m.fault != n.fault || m.target != n.target) continue;
        if (m.phase == "inject") break;
        if (m.phase == "effect") w.took_effect = true;
        if (m.phase == "heal") {
          w.to_ns = m.mono_ns;
          w.to_us = m.t_us;
          break;
        }
      }
      h.faults.push_back(w);
    }
  }
  {
    std::vector<TaskEvent> events;
    for (const auto& o : read_jsonl(dir + "/evidence/tasks.jsonl", h, &h.evidence_bad_lines)) {
      TaskEvent e;
      e.ev = str(o, "ev");
      e.run = num(o, "run");
      e.attempt = static_cast<int>(num(o, "attempt"));
      e.token = str(o, "token");
      e.role = str(o, "role");
      e.worker = str(o, "worker");
      e.pid = num(o, "pid");
      e.pstart = num(o, "pstart");
      e.root_pid = num(o, "root_pid");
      e.root_pstart = num(o, "root_pstart");
      e.mono_ns = num(o, "mono_ns");
      e.wall_us = num(o, "wall_us");
      if (auto s = opt_int(o, "status")) e.status = static_cast<int>(*s);
      events.push_back(std::move(e));
    }
    h.evidence_lines = static_cast<std::int64_t>(events.size());
    h.executions = build_executions(events);
  }
  {
    std::ifstream in(dir + "/probes.log");
    if (!in) h.read_errors.push_back("missing " + dir + "/probes.log");
    std::string line;
    while (std::getline(in, line)) {
      auto f = kv(line);
      h.probes.push_back(
          {to_i(f["mono_ns"]), to_i(f["t_us"]), f["node"], f["up"] == "1", f["role"], f["leader"], to_i(f["epoch"])});
    }
  }
  {
    std::ifstream in(dir + "/submissions.log");
    if (!in) h.read_errors.push_back("missing " + dir + "/submissions.log");
    std::string line;
    while (std::getline(in, line)) {
      auto f = kv(line);
      if (f.count("key") && f["accepted"] == "1") h.accepted_keys.push_back(f["key"]);
      if (f.count("event") && f["accepted"] == "1") h.accepted_events.push_back(f["event"]);
    }
  }
  for (const auto& o : read_jsonl(dir + "/db/runs.jsonl", h)) {
    RunRow r{num(o, "id"),
             str(o, "job"),
             str(o, "state"),
             str(o, "key"),
             str(o, "error_code"),
             static_cast<int>(num(o, "attempt")),
             static_cast<int>(num(o, "max_attempts")),
             num(o, "slot"),
             num(o, "created_us"),
             num(o, "event_id")};
    r.concurrency_key = str(o, "concurrency_key");
    h.runs[r.id] = r;
  }
  for (const auto& o : read_jsonl(dir + "/db/transitions.jsonl", h))
    h.transitions.push_back({num(o, "id"), num(o, "run"), str(o, "from"), str(o, "to"), str(o, "continuation"),
                             opt_int(o, "from_version"), num(o, "to_version"), static_cast<int>(num(o, "attempt")),
                             num(o, "epoch"), opt_int(o, "commit_us"), opt_int(o, "continuation_ms")});
  // Each run's writes in the run's own order, its versions (every invariant
  // over transitions is per run). Since schema 0022 a write recorded in its
  // run's row has no global log id (exported as 0): the id only orders the
  // rows of the old log, which come first within a run by their versions.
  auto run_order = [](const auto& a, const auto& b) {
    return std::tie(a.run, a.to_version, a.id) < std::tie(b.run, b.to_version, b.id);
  };
  std::sort(h.transitions.begin(), h.transitions.end(), run_order);
  CHECKER_ASSERT(std::is_sorted(h.transitions.begin(), h.transitions.end(), run_order));
  for (const auto& o : read_jsonl(dir + "/db/epochs.jsonl", h))
    h.epochs.push_back({num(o, "epoch"), str(o, "node"), str(o, "incarnation"), opt_int(o, "commit_us")});
  std::sort(h.epochs.begin(), h.epochs.end(), [](const auto& a, const auto& b) { return a.epoch < b.epoch; });
  for (const auto& o : read_jsonl(dir + "/db/attempts.jsonl", h)) {
    AttemptRow a{
        num(o, "run"), static_cast<int>(num(o, "attempt")), str(o, "worker"), str(o, "outcome"), str(o, "token"), {}};
    if (auto c = opt_int(o, "exit_code")) a.exit_code = static_cast<int>(*c);
    h.attempts.push_back(a);
  }
  for (const auto& o : read_jsonl(dir + "/db/dead_letters.jsonl", h))
    h.dead_letters.push_back({num(o, "run"), str(o, "final_state"), static_cast<int>(num(o, "attempts"))});
  for (const auto& o : read_jsonl(dir + "/db/jobs.jsonl", h)) {
    JobRow j{str(o, "name"), opt_int(o, "max_instances"), str(o, "concurrency_policy"), false, false, {}};
    if (auto* e = o.if_contains("mutually_exclusive"); e && e->is_bool()) j.mutually_exclusive = e->as_bool();
    if (auto* e = o.if_contains("exclusive_execution"); e && e->is_bool()) j.exclusive_execution = e->as_bool();
    j.concurrency_limit = opt_int(o, "concurrency_limit");
    if (auto* e = o.if_contains("on_events"); e && e->is_array())
      for (const auto& k : e->as_array())
        if (k.is_string()) j.on_events.emplace_back(k.as_string());
    h.jobs[j.name] = j;
  }
  for (const auto& o : read_jsonl(dir + "/db/events.jsonl", h)) {
    EventRow e{num(o, "id"), str(o, "kind"), str(o, "dedupe_key"), false};
    if (auto* p = o.if_contains("processed"); p && p->is_bool()) e.processed = p->as_bool();
    h.events.push_back(e);
  }
  for (const auto& o : read_jsonl(dir + "/db/ledger.jsonl", h)) {
    LedgerRow l{str(o, "job"),       str(o, "decision"), str(o, "reason"), num(o, "slot"),
                num(o, "slot_last"), opt_int(o, "run"),  num(o, "epoch")};
    if (l.slot_last == 0) l.slot_last = l.slot;
    h.ledger.push_back(l);
  }

  // Outbox snapshots: outbox/<worker>-<n>/<files>; a finish is durable if it
  // is in a snapshot and no ack line in that snapshot follows it.
  std::error_code ec;
  for (const auto& snap : fs::directory_iterator(dir + "/outbox", ec)) {
    const std::string name = snap.path().filename().string();
    const std::string worker = name.substr(0, name.find('-'));
    std::vector<fs::path> files;
    for (const auto& f : fs::recursive_directory_iterator(snap.path(), ec))
      if (f.is_regular_file()) files.push_back(f.path());
    std::sort(files.begin(), files.end());
    std::map<std::string, DurableFinish> live;
    for (const auto& f : files) {
      History scratch;
      for (const auto& o : read_jsonl(f.string(), scratch)) {
        if (auto ack = str(o, "ack"); !ack.empty()) {
          live.erase(ack);
          continue;
        }
        if (str(o, "type") != "finish") continue;
        DurableFinish d{worker, num(o, "run_id"), static_cast<int>(num(o, "attempt")), str(o, "lease_token"),
                        str(o, "outcome")};
        live[std::to_string(d.run) + "/" + std::to_string(d.attempt) + "/" + d.token] = d;
      }
    }
    for (auto& [k, d] : live) h.durable_finishes.push_back(d);
  }
  return h;
}

}  // namespace baton::checker

namespace baton::checker {

void executions_from_attempts(History& h) {
  h.executions.clear();
  // When each attempt was first written out of RUNNING. For an attempt
  // given up (its worker gone past the continuation deadline, or not
  // listing it) whose outcome came later, that write is where the records
  // end it: the leader released what it held there, and the late report
  // says how it ended, not when (the at-least-once window, docs/assurance.md).
  // The context runs' writes count the same way: a context run given up
  // is judged against the slice's runs as it ran, not as it was reported.
  std::map<std::pair<std::int64_t, int>, std::int64_t> left_running;
  for (const auto* writes : {&h.transitions, &h.context_transitions})
    for (const TransitionRow& t : *writes) {
      if (t.from != "RUNNING" || t.to == "RUNNING" || !t.commit_us) continue;
      auto [it, added] = left_running.try_emplace({t.run, t.attempt}, *t.commit_us);
      if (!added) it->second = std::min(it->second, *t.commit_us);
    }
  for (const AttemptRow& a : h.attempts) {
    if (!a.started_us) continue;  // assigned, never started: nothing ran
    Execution x;
    x.run = a.run;
    x.attempt = a.attempt;
    x.token = a.token;
    x.worker = a.worker;
    x.from_ns = *a.started_us * 1000;
    std::int64_t until_us = a.finished_us.value_or(h.taken_us);
    if (auto it = left_running.find({a.run, a.attempt}); it != left_running.end())
      until_us = std::min(until_us, it->second);
    x.to_ns = std::max(x.from_ns, until_us * 1000);
    ProcessLife main;
    main.run = a.run;
    main.attempt = a.attempt;
    main.token = a.token;
    main.worker = a.worker;
    main.role = "main";
    main.start_ns = x.from_ns;
    main.last_ns = x.to_ns;
    main.start_wall_us = *a.started_us;
    // What the database recorded is all there is: a success is an attempt
    // recorded SUCCEEDED; any other ending is not one, whatever its code.
    if (a.outcome == "SUCCEEDED")
      main.exit_status = 0;
    else if (a.finished_us)
      main.exit_status = a.exit_code && *a.exit_code != 0 ? *a.exit_code : -1;
    x.processes.push_back(main);
    x.main = main;
    h.executions[a.run].push_back(std::move(x));
  }
  for (auto& [run, xs] : h.executions)
    std::sort(xs.begin(), xs.end(), [](const Execution& a, const Execution& b) {
      return std::tie(a.from_ns, a.attempt) < std::tie(b.from_ns, b.attempt);
    });
}

}  // namespace baton::checker
