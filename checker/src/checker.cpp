#include "baton/checker/checker.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "baton/checker/history.h"
#include "invariant_support.h"
#include "invariants.h"

namespace baton::checker {

bool Report::ok() const {
  return std::all_of(invariants.begin(), invariants.end(), [](const auto& i) { return i.violations == 0; });
}

std::string Report::markdown() const {
  std::ostringstream o;
  o << "# Chaos run report\n\n**Verdict: " << (ok() ? "PASS" : "FAIL") << "**\n\n";
  o << "| invariant | examined | violations | excused |\n|---|---:|---:|---:|\n";
  for (const auto& i : invariants)
    o << "| " << i.name << " — " << i.description << " | " << i.examined << " | " << i.violations << " | " << i.excused
      << " |\n";
  o << "\n## Faults\n\n| fault | injected | took effect |\n|---|---:|---:|\n";
  for (const auto& [k, n] : faults)
    o << "| " << k << " | " << n << " | " << (faults_effective.count(k) ? faults_effective.at(k) : 0) << " |\n";
  o << "\n## Totals\n\n| what | count |\n|---|---:|\n";
  for (const auto& [k, n] : totals) o << "| " << k << " | " << n << " |\n";
  for (const auto& i : invariants) {
    if (i.evidence.empty()) continue;
    o << "\n## Violations: " << i.name << "\n\n";
    for (const auto& e : i.evidence) o << "- " << e << "\n";
  }
  if (!not_examinable.empty()) {
    o << "\n## Not examined here\n\n";
    for (const auto& [name, why] : not_examinable) o << "- " << name << ": " << why << "\n";
  }
  for (const auto& i : invariants) {
    if (i.excuses.empty()) continue;
    o << "\n## Excused (documented at-least-once window): " << i.name << "\n\n";
    for (const auto& e : i.excuses) o << "- " << e << "\n";
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
  auto list = [&](const std::vector<std::string>& v) {
    std::string o = "[";
    for (std::size_t e = 0; e < v.size(); ++e) o += (e ? ",\"" : "\"") + esc(v[e]) + "\"";
    return o + "]";
  };
  std::ostringstream o;
  o << "{\"ok\":" << (ok() ? "true" : "false") << ",\"invariants\":[";
  for (std::size_t k = 0; k < invariants.size(); ++k) {
    const auto& i = invariants[k];
    o << (k ? "," : "") << "{\"name\":\"" << esc(i.name) << "\",\"examined\":" << i.examined
      << ",\"violations\":" << i.violations << ",\"excused\":" << i.excused << ",\"evidence\":" << list(i.evidence)
      << ",\"excuses\":" << list(i.excuses) << "}";
  }
  o << "],\"not_examinable\":{";
  bool first_skip = true;
  for (const auto& [name, why] : not_examinable) {
    o << (first_skip ? "" : ",") << "\"" << esc(name) << "\":\"" << esc(why) << "\"";
    first_skip = false;
  }
  o << "},\"faults\":{";
  bool first = true;
  for (const auto& [k, n] : faults) {
    o << (first ? "" : ",") << "\"" << esc(k) << "\":{\"injected\":" << n
      << ",\"took_effect\":" << (faults_effective.count(k) ? faults_effective.at(k) : 0) << "}";
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

namespace {
void assert_well_formed(const Report& report);
}  // namespace

Report check_history(const std::string& dir) { return check_history(load_history(dir)); }

Report check_history(const History& h) {
  Report report;
  for (const auto& f : h.faults) {
    report.faults[f.fault]++;
    if (f.took_effect) report.faults_effective[f.fault]++;
  }
  std::int64_t executions = 0, processes = 0;
  for (const auto& [run, xs] : h.executions) {
    executions += static_cast<std::int64_t>(xs.size());
    for (const auto& x : xs) processes += static_cast<std::int64_t>(x.processes.size());
  }
  report.totals["runs"] = static_cast<std::int64_t>(h.runs.size());
  report.totals["executions"] = executions;
  report.totals["processes"] = processes;
  report.totals["evidence_lines"] = h.evidence_lines;
  report.totals["transitions"] = static_cast<std::int64_t>(h.transitions.size());
  report.totals["epochs"] = static_cast<std::int64_t>(h.epochs.size());
  report.totals["api_submissions"] = static_cast<std::int64_t>(h.accepted_keys.size());
  report.totals["probes"] = static_cast<std::int64_t>(h.probes.size());

  for (const InvariantCheck check : invariant_checks()) report.invariants.push_back(check(h, report));

  fail_unexamined(h, report);
  assert_well_formed(report);
  return report;
}

Report check_recorded_history(const History& h) {
  Report report;
  std::int64_t executions = 0;
  for (const auto& [run, xs] : h.executions) executions += static_cast<std::int64_t>(xs.size());
  report.totals["runs"] = static_cast<std::int64_t>(h.runs.size());
  report.totals["attempts"] = static_cast<std::int64_t>(h.attempts.size());
  report.totals["executions"] = executions;
  report.totals["transitions"] = static_cast<std::int64_t>(h.transitions.size());
  report.totals["epochs"] = static_cast<std::int64_t>(h.epochs.size());
  for (const InvariantCheck check : recorded_invariant_checks()) report.invariants.push_back(check(h, report));
  for (const auto& [name, needs] : evidence_only_invariants())
    report.not_examinable[name] = "needs " + needs + "; the database's records alone cannot show it";
  assert_well_formed(report);
  return report;
}

namespace {
void assert_well_formed(const Report& report) {
  // Each invariant once, by name; its evidence and excuses bounded and
  // counted (a report that showed more evidence than violations, or lost
  // count of what it cut, would mislead whoever reads it).
  std::set<std::string> names;
  for (const auto& i : report.invariants) {
    CHECKER_ASSERT(!i.name.empty() && names.insert(i.name).second);
    CHECKER_ASSERT(i.violations >= 0 && i.excused >= 0 && i.examined >= 0);
    CHECKER_ASSERT(i.evidence.size() <= checks::evidence_max &&
                   static_cast<std::int64_t>(i.evidence.size()) <= i.violations);
    CHECKER_ASSERT(i.excuses.size() <= checks::evidence_max &&
                   static_cast<std::int64_t>(i.excuses.size()) <= i.excused);
  }
}
}  // namespace

}  // namespace baton::checker
