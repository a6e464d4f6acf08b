#include "baton/chaos/checker.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace baton::chaos {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t evidence_max = 40;

// PostgreSQL CSV: fields may be "quoted" (with "" for a quote); an empty
// quoted field is an empty string.
std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::string cur;
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (quoted) {
        if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
          cur += '"';
          ++i;
        } else if (c == '"') {
          quoted = false;
        } else {
          cur += c;
        }
      } else if (c == '"') {
        quoted = true;
      } else if (c == ',') {
        cols.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    cols.push_back(cur);
    rows.push_back(std::move(cols));
  }
  return rows;
}

std::int64_t to_i(const std::string& s) { return s.empty() ? 0 : std::stoll(s); }

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

// The checker's own copy of SPEC section 3 (deliberately not core's).
bool legal(const std::string& from, const std::string& to) {
  static const std::set<std::pair<std::string, std::string>> allowed = {
      {"PENDING", "ASSIGNED"},  {"PENDING", "CANCELED"},       {"ASSIGNED", "RUNNING"},
      {"ASSIGNED", "ORPHANED"}, {"ASSIGNED", "CANCELED"},      {"ORPHANED", "ASSIGNED"},
      {"ORPHANED", "FAILED"},   {"ORPHANED", "CANCELED"},      {"RUNNING", "SUCCEEDED"},
      {"RUNNING", "FAILED"},    {"RUNNING", "TIMED_OUT"},      {"RUNNING", "RETRY_WAITING"},
      {"RUNNING", "CANCELED"},  {"RETRY_WAITING", "ASSIGNED"}, {"RETRY_WAITING", "CANCELED"}};
  if (from.empty()) return to == "PENDING";
  if (from == to) return from == "ASSIGNED" || from == "RUNNING";  // continuation / epoch re-stamp
  return allowed.count({from, to}) > 0;
}

bool terminal(const std::string& s) { return s == "SUCCEEDED" || s == "FAILED" || s == "TIMED_OUT" || s == "CANCELED"; }

void add(InvariantResult& r, const std::string& evidence) {
  r.violations++;
  if (r.evidence.size() < evidence_max) r.evidence.push_back(evidence);
}

}  // namespace

bool Report::ok() const {
  return std::all_of(invariants.begin(), invariants.end(), [](const auto& i) { return i.violations == 0; });
}

std::string Report::markdown() const {
  std::ostringstream o;
  o << "# Chaos run report\n\n**Verdict: " << (ok() ? "PASS" : "FAIL") << "**\n\n";
  o << "| invariant | examined | violations |\n|---|---:|---:|\n";
  for (const auto& i : invariants)
    o << "| " << i.name << " — " << i.description << " | " << i.examined << " | " << i.violations << " |\n";
  o << "\n## Faults injected\n\n| fault | count |\n|---|---:|\n";
  for (const auto& [k, n] : faults) o << "| " << k << " | " << n << " |\n";
  o << "\n## Totals\n\n| what | count |\n|---|---:|\n";
  for (const auto& [k, n] : totals) o << "| " << k << " | " << n << " |\n";
  for (const auto& i : invariants) {
    if (i.evidence.empty()) continue;
    o << "\n## Violations: " << i.name << "\n\n";
    for (const auto& e : i.evidence) o << "- " << e << "\n";
  }
  return o.str();
}

std::string Report::json() const {
  auto esc = [](const std::string& s) {
    std::string o;
    for (char c : s) {
      if (c == '"' || c == '\\') o += '\\';
      if (static_cast<unsigned char>(c) < 0x20) continue;
      o += c;
    }
    return o;
  };
  std::ostringstream o;
  o << "{\"ok\":" << (ok() ? "true" : "false") << ",\"invariants\":[";
  for (std::size_t k = 0; k < invariants.size(); ++k) {
    const auto& i = invariants[k];
    o << (k ? "," : "") << "{\"name\":\"" << esc(i.name) << "\",\"examined\":" << i.examined
      << ",\"violations\":" << i.violations << ",\"evidence\":[";
    for (std::size_t e = 0; e < i.evidence.size(); ++e) o << (e ? "," : "") << "\"" << esc(i.evidence[e]) << "\"";
    o << "]}";
  }
  o << "],\"faults\":{";
  bool first = true;
  for (const auto& [k, n] : faults) {
    o << (first ? "" : ",") << "\"" << esc(k) << "\":" << n;
    first = false;
  }
  o << "},\"totals\":{";
  first = true;
  for (const auto& [k, n] : totals) {
    o << (first ? "" : ",") << "\"" << esc(k) << "\":" << n;
    first = false;
  }
  o << "}}\n";
  return o.str();
}

Report check_history(const std::string& dir) {
  Report report;
  // ---- inputs -------------------------------------------------------------
  auto window = kv([&] {
    std::ifstream in(dir + "/window.txt");
    std::string l;
    std::getline(in, l);
    return l;
  }());
  const std::int64_t window_start = to_i(window["start_us"]);
  const std::int64_t window_end = to_i(window["end_us"]);
  const std::string cron_job = window["cron_job"];

  std::vector<std::map<std::string, std::string>> nemesis;
  {
    std::ifstream in(dir + "/nemesis.log");
    std::string l;
    while (std::getline(in, l)) nemesis.push_back(kv(l));
  }
  for (const auto& n : nemesis)
    if (n.count("phase") && n.at("phase") == "inject") report.faults[n.at("fault")]++;

  struct Run {
    std::string job, state, key;
    int attempt = 0;
    std::int64_t slot = 0, created_us = 0;
  };
  std::map<std::int64_t, Run> runs;
  for (const auto& r : read_csv(dir + "/db/runs.csv")) {
    if (r.size() < 7) continue;
    runs[to_i(r[0])] = Run{r[1], r[2], r[4], static_cast<int>(to_i(r[3])), to_i(r[5]), to_i(r[6])};
  }
  report.totals["runs"] = static_cast<std::int64_t>(runs.size());

  // ---- 1. no overlapping attempts (worker journals) ------------------------
  {
    InvariantResult inv{"no_overlapping_attempts", "no two attempts of one run executed at the same time", 0, 0, {}};
    struct Interval {
      std::int64_t from, to;
      int attempt, pid;
      std::string worker;
    };
    std::map<std::int64_t, std::vector<Interval>> by_run;
    std::int64_t processes = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir + "/journals", ec)) {
      const std::string worker = e.path().stem().string();
      // A worker killed with -9 takes its processes with it (PDEATHSIG):
      // an interval without an exit ends at that worker's next kill.
      std::vector<std::int64_t> kills;
      for (const auto& n : nemesis)
        if (n.count("fault") && n.at("fault") == "kill9_worker" && n.count("target") && n.at("target") == worker &&
            n.at("phase") == "inject")
          kills.push_back(to_i(n.at("t_us")));
      std::map<int, std::pair<std::int64_t, std::map<std::string, std::string>>> open;
      std::ifstream in(e.path());
      std::string l;
      auto close_interval = [&](const std::map<std::string, std::string>& s, std::int64_t from, std::int64_t to) {
        by_run[to_i(s.at("run"))].push_back(
            {from, to, static_cast<int>(to_i(s.at("attempt"))), static_cast<int>(to_i(s.at("pid"))), worker});
      };
      while (std::getline(in, l)) {
        auto f = kv(l);
        if (!f.count("pid")) continue;
        int pid = static_cast<int>(to_i(f["pid"]));
        std::int64_t t = to_i(f["wall_us"]);
        if (l.rfind("start", 0) == 0) {
          open[pid] = {t, f};
          processes++;
        } else if (l.rfind("exit", 0) == 0 && open.count(pid)) {
          close_interval(open[pid].second, open[pid].first, t);
          open.erase(pid);
        }
      }
      for (auto& [pid, o] : open) {
        std::int64_t end = std::numeric_limits<std::int64_t>::max();
        for (auto k : kills)
          if (k >= o.first) end = std::min(end, k);
        if (end == std::numeric_limits<std::int64_t>::max()) end = window_end + 600'000'000;
        close_interval(o.second, o.first, end);
      }
    }
    report.totals["processes_journaled"] = processes;
    for (auto& [run, iv] : by_run) {
      inv.examined++;
      std::sort(iv.begin(), iv.end(), [](const auto& a, const auto& b) { return a.from < b.from; });
      for (std::size_t i = 0; i < iv.size(); ++i)
        for (std::size_t j = i + 1; j < iv.size() && iv[j].from < iv[i].to; ++j)
          if (iv[i].attempt != iv[j].attempt || iv[i].worker != iv[j].worker)
            add(inv, "run " + std::to_string(run) + ": attempt " + std::to_string(iv[i].attempt) + " on " +
                         iv[i].worker + " (pid " + std::to_string(iv[i].pid) + ") overlaps attempt " +
                         std::to_string(iv[j].attempt) + " on " + iv[j].worker + " (pid " + std::to_string(iv[j].pid) +
                         ") by " + std::to_string((iv[i].to - iv[j].from) / 1000) + " ms");
    }
    report.invariants.push_back(inv);
  }

  // ---- 2. no stale-epoch write committed ------------------------------------
  auto transitions = read_csv(dir + "/db/transitions.csv");
  std::map<std::int64_t, std::int64_t> election_commit;  // epoch -> commit us
  std::map<std::int64_t, std::pair<std::string, std::string>> epoch_holder;
  for (const auto& r : read_csv(dir + "/db/epochs.csv")) {
    if (r.size() < 4) continue;
    election_commit[to_i(r[0])] = to_i(r[3]);
    epoch_holder[to_i(r[0])] = {r[1], r[2]};
  }
  {
    InvariantResult inv{"no_stale_epoch_writes",
                        "no run write carrying epoch e committed after an election of a newer epoch committed",
                        0,
                        0,
                        {}};
    for (const auto& t : transitions) {
      if (t.size() < 5) continue;
      std::int64_t e = to_i(t[3]), commit = to_i(t[4]);
      auto next = election_commit.upper_bound(e);
      if (next == election_commit.end()) continue;  // written in the newest epoch
      inv.examined++;
      if (commit > next->second)
        add(inv, "run " + t[0] + " " + t[1] + "->" + t[2] + " carrying epoch " + std::to_string(e) + " committed " +
                     std::to_string((commit - next->second) / 1000) + " ms after epoch " + std::to_string(next->first) +
                     " was elected");
    }
    report.totals["transitions"] = static_cast<std::int64_t>(transitions.size());
    report.invariants.push_back(inv);
  }

  // ---- 3. one winner per epoch, increasing ---------------------------------
  {
    InvariantResult inv{"one_leader_per_epoch",
                        "epochs increase by one; each was won by one (node, incarnation), as the nodes logged",
                        0,
                        0,
                        {}};
    std::int64_t prev = 0;
    for (const auto& [e, holder] : epoch_holder) {
      inv.examined++;
      if (e != prev + 1) add(inv, "epoch " + std::to_string(e) + " follows " + std::to_string(prev));
      prev = e;
    }
    // Every node log's "to=leader epoch=N" must match epoch_history.
    std::map<std::int64_t, std::set<std::string>> claimed;
    std::error_code ec;
    static const std::regex re(R"(role_change node=(\S+) incarnation=(\S+) from=\S+ to=leader epoch=(\d+))");
    for (const auto& e : fs::directory_iterator(dir + "/logs", ec)) {
      std::ifstream in(e.path());
      std::string l;
      while (std::getline(in, l)) {
        std::smatch m;
        if (std::regex_search(l, m, re)) claimed[std::stoll(m[3])].insert(std::string(m[1]) + "/" + std::string(m[2]));
      }
    }
    for (const auto& [e, who] : claimed) {
      if (who.size() > 1) {
        std::string all;
        for (const auto& w : who) all += w + " ";
        add(inv, "epoch " + std::to_string(e) + " claimed by " + all);
      }
      auto h = epoch_holder.find(e);
      if (h == epoch_holder.end())
        add(inv, "epoch " + std::to_string(e) + " logged as won but not in epoch_history");
      else if (*who.begin() != h->second.first + "/" + h->second.second)
        add(inv, "epoch " + std::to_string(e) + ": log says " + *who.begin() + ", epoch_history says " +
                     h->second.first + "/" + h->second.second);
    }
    report.totals["epochs"] = static_cast<std::int64_t>(epoch_holder.size());
    report.invariants.push_back(inv);
  }

  // ---- 4. every cron slot in the window materialised once and finished ------
  {
    InvariantResult inv{"cron_slots_complete",
                        "every slot of the every-second cron job in the window has exactly one run, and it finished",
                        0,
                        0,
                        {}};
    std::map<std::int64_t, std::vector<std::int64_t>> slots;
    for (const auto& [id, r] : runs)
      if (r.job == cron_job && r.slot > 0) slots[r.slot].push_back(id);
    if (!slots.empty()) {
      const std::int64_t first = slots.begin()->first;
      const std::int64_t last = window_end / 1'000'000 - 5;  // slots due well before the window closed
      for (std::int64_t s = first; s <= last; ++s) {
        inv.examined++;
        auto it = slots.find(s);
        if (it == slots.end())
          add(inv, "slot " + std::to_string(s) + " has no run");
        else if (it->second.size() > 1)
          add(inv, "slot " + std::to_string(s) + " has " + std::to_string(it->second.size()) + " runs");
        else if (!terminal(runs[it->second[0]].state))
          add(inv, "slot " + std::to_string(s) + " run " + std::to_string(it->second[0]) + " is " +
                       runs[it->second[0]].state);
      }
    }
    report.invariants.push_back(inv);
  }

  // ---- 5. every idempotency key finished exactly once -----------------------
  {
    InvariantResult inv{
        "idempotency_keys_once", "every API submission key has exactly one run, and it finished", 0, 0, {}};
    std::map<std::string, std::vector<std::int64_t>> by_key;
    for (const auto& [id, r] : runs)
      if (!r.key.empty()) by_key[r.key].push_back(id);
    std::set<std::string> submitted;
    std::ifstream in(dir + "/submissions.log");
    std::string l;
    while (std::getline(in, l)) {
      auto f = kv(l);
      if (f.count("key") && f["accepted"] == "1") submitted.insert(f["key"]);
    }
    for (const auto& key : submitted) {
      inv.examined++;
      auto it = by_key.find(key);
      if (it == by_key.end())
        add(inv, "key " + key + " was accepted but has no run");
      else if (it->second.size() != 1)
        add(inv, "key " + key + " has " + std::to_string(it->second.size()) + " runs");
      else if (!terminal(runs[it->second[0]].state))
        add(inv, "key " + key + " run " + std::to_string(it->second[0]) + " is " + runs[it->second[0]].state);
    }
    report.totals["api_submissions"] = static_cast<std::int64_t>(submitted.size());
    report.invariants.push_back(inv);
  }

  // ---- 6. every recorded transition legal -----------------------------------
  {
    InvariantResult inv{"legal_transitions", "every recorded state change is in the transition table", 0, 0, {}};
    for (const auto& t : transitions) {
      if (t.size() < 5) continue;
      inv.examined++;
      if (!legal(t[1], t[2])) add(inv, "run " + t[0] + ": " + (t[1].empty() ? "(new)" : t[1]) + " -> " + t[2]);
    }
    report.invariants.push_back(inv);
  }

  // ---- 8. the run did what was asked: every requested fault happened --------
  {
    InvariantResult inv{"fault_coverage", "every requested fault kind was injected at least once", 0, 0, {}};
    std::stringstream requested(window["faults"]);
    std::string f;
    while (std::getline(requested, f, ',')) {
      if (f.empty()) continue;
      inv.examined++;
      if (!report.faults.count(f)) add(inv, "fault " + f + " was requested but never injected");
    }
    report.invariants.push_back(inv);
  }

  // ---- 7. nothing left unfinished after quiescence --------------------------
  {
    InvariantResult inv{"quiescent", "every run created in the window reached a final state", 0, 0, {}};
    for (const auto& [id, r] : runs) {
      if (r.created_us > window_end || r.created_us < window_start - 60'000'000) continue;
      inv.examined++;
      if (!terminal(r.state)) add(inv, "run " + std::to_string(id) + " (" + r.job + ") is " + r.state);
    }
    report.invariants.push_back(inv);
  }
  // A check that examined nothing proves nothing: count it as a failure.
  for (auto& inv : report.invariants)
    if (inv.examined == 0 && !(inv.name == "fault_coverage" && window["faults"].empty()))
      add(inv, "nothing was examined: the run was too short or the history is missing");
  return report;
}

}  // namespace baton::chaos
