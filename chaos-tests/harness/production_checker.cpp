// The production checker beside a chaos run (docs/assurance.md): the
// leader's sweep ran during the run (its findings exported as
// db/invariant_violations.jsonl, its progress as db/verify_cursor.jsonl),
// and `baton verify` checked the whole database after it (verify.json).
// Both must have examined runs and found nothing: one more line of the
// report, judged like the harness's own invariants.
#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "harness.h"

namespace baton::chaos::harness {

namespace json = boost::json;

checker::InvariantResult production_checker(const std::string& dir) {
  checker::InvariantResult r;
  r.name = "production_checker";
  r.description =
      "the leader's sweep during the run and `baton verify` after it examined the database's records and found "
      "no violation (the invariants the records alone support)";
  auto add = [&](const std::string& e) {
    r.violations++;
    if (r.evidence.size() < 40) r.evidence.push_back(e);
  };
  std::ifstream in(dir + "/verify.json");
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  const json::value v = json::parse(text.str(), ec);
  if (!in || ec || !v.is_object() || !v.as_object().contains("runs")) {
    add("baton verify did not run or its output is not its JSON report (" + dir + "/verify.json)");
  } else {
    const auto& o = v.as_object();
    r.examined += o.at("runs").to_number<std::int64_t>();
    if (o.at("runs").to_number<std::int64_t>() == 0) add("baton verify examined no run");
    for (const auto& x : o.at("violations").as_array())
      add("baton verify: " + std::string(x.at("invariant").as_string()) + ": " +
          std::string(x.at("evidence").as_string()));
    const auto total = o.at("violations_total").to_number<std::int64_t>();
    if (total > static_cast<std::int64_t>(o.at("violations").as_array().size()))
      add("baton verify: " + std::to_string(total - static_cast<std::int64_t>(o.at("violations").as_array().size())) +
          " more violations");
  }
  std::ifstream sweeps(dir + "/db/verify_cursor.jsonl");
  std::string line;
  std::int64_t swept = 0;
  while (std::getline(sweeps, line)) {
    const json::value c = json::parse(line, ec);
    if (!ec && c.is_object() && c.as_object().contains("runs_checked"))
      swept = c.as_object().at("runs_checked").to_number<std::int64_t>();
  }
  r.examined += swept;
  if (swept == 0) add("the leader's sweep checked no run during the run (db/verify_cursor.jsonl)");
  std::ifstream found(dir + "/db/invariant_violations.jsonl");
  while (std::getline(found, line)) {
    const json::value f = json::parse(line, ec);
    if (ec || !f.is_object()) continue;
    add("the leader's sweep (" + std::string(f.at("found_by").as_string()) +
        "): " + std::string(f.at("invariant").as_string()) + ": " + std::string(f.at("evidence").as_string()));
  }
  return r;
}

}  // namespace baton::chaos::harness
