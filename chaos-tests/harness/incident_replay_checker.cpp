// The incident journal beside a chaos run (docs/assurance.md, "Incident
// replay"): after the run, each node's journal (every epoch it led, through
// kills, pauses, partitions and clock faults) was replayed by `baton-sim
// --replay` into the leader core. Every set of effects must come out the
// same as the node's: one more line of the report, judged like the
// harness's own invariants. A node that led no epoch (the database's epoch
// history says so) has no book to replay, and is not asked for one: a run
// with no leader change has two such nodes.
#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "harness.h"

namespace baton::chaos::harness {

checker::InvariantResult incident_replay_checker(const std::string& dir) {
  checker::InvariantResult r;
  r.name = "incident_replay_identical";
  r.description =
      "each node's incident journal replayed by `baton-sim --replay`: every set of effects of every epoch it led "
      "the same as the node's";
  auto add = [&](const std::string& e) {
    r.violations++;
    if (r.evidence.size() < 40) r.evidence.push_back(e);
  };
  // The nodes that led an epoch, from the database's epoch history.
  std::set<std::string> leaders;
  {
    std::ifstream in(dir + "/db/epochs.jsonl");
    for (std::string line; std::getline(in, line);) {
      boost::system::error_code bad;
      const boost::json::value v = boost::json::parse(line, bad);
      if (bad || !v.is_object()) continue;
      if (const auto* node = v.as_object().if_contains("node"); node && node->is_string())
        leaders.insert(std::string(node->as_string()));
    }
  }
  std::set<std::string> replayed;
  std::int64_t books = 0;
  int nodes = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("replay-", 0) != 0 || e.path().extension() != ".txt") continue;
    nodes++;
    const std::string node = name.substr(7, name.size() - 11);
    replayed.insert(node);
    std::ifstream in(e.path());
    bool identical = false;
    std::string exit_line;
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("exit=", 0) == 0) exit_line = line;
      if (line.rfind("replay: line ", 0) == 0) add(node + ": " + line.substr(0, 600));
      if (line.rfind("replay: ", 0) != 0 || line.find(" lines, ") == std::string::npos) continue;
      // "replay: L lines, B books, I inputs, N batches of effects (E effects) replayed, ..."
      const auto at = [&](const char* word) {
        const auto p = line.find(word);
        if (p == std::string::npos) return std::int64_t{0};
        const auto start = line.rfind(' ', p - 1);
        return static_cast<std::int64_t>(std::strtoll(line.c_str() + start + 1, nullptr, 10));
      };
      books += at(" books");
      r.examined += at(" batches");
      identical = line.find("every batch identical to the record") != std::string::npos;
    }
    if (!leaders.count(node) && exit_line != "exit=1") continue;  // it led nothing: no book, or any it kept
    if (exit_line != "exit=0")
      add(node + ": baton-sim --replay " + (exit_line.empty() ? "did not run" : exit_line));
    else if (!identical)
      add(node + ": baton-sim --replay gave no verdict");
  }
  for (const auto& node : leaders)
    if (!replayed.count(node)) add(node + ": led an epoch, but its journal was not replayed");
  if (nodes == 0)
    add("no node's journal was replayed (replay-*.txt in " + dir + ")");
  else if (books == 0)
    add("no node's journal holds an epoch it led");
  return r;
}

}  // namespace baton::chaos::harness
