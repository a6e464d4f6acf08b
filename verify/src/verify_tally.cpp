#include "baton/verify/verify_tally.h"

#include <boost/json.hpp>
#include <sstream>

namespace baton::verify {

void VerifyTally::add(const SliceVerdict& verdict, std::int64_t slice_runs) {
  runs += slice_runs;
  for (const auto& i : verdict.report.invariants) {
    auto& [examined, violations] = by_invariant[i.name];
    examined += i.examined;
    violations += i.violations;
    violations_total += i.violations;
  }
  for (const auto& [name, why] : verdict.report.not_examinable) not_examinable[name] = why;
  for (const auto& [name, n] : verdict.report.totals) totals[name] += n;
  for (const auto& v : verdict.violations)
    if (violations.size() < evidence_max) violations.push_back(v);
}

std::string VerifyTally::text() const {
  std::ostringstream o;
  o << (ok() ? "OK" : "VIOLATIONS") << ": " << runs << " runs checked, " << violations_total << " violations\n\n";
  o << "invariant                          examined  violations\n";
  for (const auto& [name, n] : by_invariant) {
    std::string padded = name;
    padded.resize(std::max<std::size_t>(padded.size(), 33), ' ');
    o << padded << " " << std::string(9 - std::min<std::size_t>(9, std::to_string(n.first).size()), ' ') << n.first
      << "  " << std::string(10 - std::min<std::size_t>(10, std::to_string(n.second).size()), ' ') << n.second << "\n";
  }
  if (!violations.empty()) {
    o << "\nviolations:\n";
    for (const auto& v : violations) o << "  " << v.invariant << ": " << v.evidence << "\n";
    if (violations_total > static_cast<std::int64_t>(violations.size()))
      o << "  (" << violations_total - static_cast<std::int64_t>(violations.size()) << " more not shown)\n";
  }
  if (!not_examinable.empty()) {
    o << "\nnot examined (the database's records alone cannot show them):\n";
    for (const auto& [name, why] : not_examinable) o << "  " << name << ": " << why << "\n";
  }
  return o.str();
}

std::string VerifyTally::json() const {
  namespace json = boost::json;
  json::object invariants;
  for (const auto& [name, n] : by_invariant)
    invariants[name] = json::object{{"examined", n.first}, {"violations", n.second}};
  json::array list;
  for (const auto& v : violations) {
    json::array runs;
    for (auto r : v.runs) runs.push_back(r);
    list.push_back(json::object{{"invariant", v.invariant}, {"evidence", v.evidence}, {"run_ids", runs}});
  }
  json::object skipped;
  for (const auto& [name, why] : not_examinable) skipped[name] = why;
  json::object tot;
  for (const auto& [name, n] : totals) tot[name] = n;
  return json::serialize(json::object{{"ok", ok()},
                                      {"runs", runs},
                                      {"violations_total", violations_total},
                                      {"invariants", invariants},
                                      {"violations", list},
                                      {"not_examinable", skipped},
                                      {"totals", tot}}) +
         "\n";
}

}  // namespace baton::verify
