// The receipts beside a chaos run (docs/assurance.md, "Receipts"): after
// the run, `baton verify --receipts` recomputed every chain from the
// database's rows (receipts.json). Under every fault injected (leaders
// killed mid-statement, the database restarted or failed over) each end
// must have its receipt, each link must follow the one before, and each
// epoch's checkpoint must name where its chains ended: one more line of
// the report, judged like the harness's own invariants.
#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "harness.h"

namespace baton::chaos::harness {

namespace json = boost::json;

checker::InvariantResult receipts_checker(const std::string& dir) {
  checker::InvariantResult r;
  r.name = "receipts_hold";
  r.description =
      "`baton verify --receipts` after the run: every end has its receipt, every link of every chain follows the "
      "one before, every epoch's checkpoint names where its chains ended";
  auto add = [&](const std::string& e) {
    r.violations++;
    if (r.evidence.size() < 40) r.evidence.push_back(e);
  };
  std::ifstream in(dir + "/receipts.json");
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  const json::value v = json::parse(text.str(), ec);
  if (!in || ec || !v.is_object() || !v.as_object().contains("links")) {
    add("baton verify --receipts did not run or its output is not its JSON report (" + dir + "/receipts.json)");
    return r;
  }
  const auto& o = v.as_object();
  r.examined = o.at("ends").to_number<std::int64_t>() + o.at("audit_entries").to_number<std::int64_t>();
  if (o.at("links").to_number<std::int64_t>() == 0) add("no run ended with a receipt");
  for (const auto& p : o.at("problems").as_array())
    add(std::string(p.at("kind").as_string()) + " chain " + std::string(p.at("lane").as_string()) + " of epoch " +
        std::to_string(p.at("epoch").to_number<std::int64_t>()) + ", link " +
        std::to_string(p.at("link").to_number<std::int64_t>()) + ": " + std::string(p.at("problem").as_string()));
  const auto total = o.at("problems_total").to_number<std::int64_t>();
  const auto listed = static_cast<std::int64_t>(o.at("problems").as_array().size());
  if (total > listed) add(std::to_string(total - listed) + " more problems");
  return r;
}

}  // namespace baton::chaos::harness
