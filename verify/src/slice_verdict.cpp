#include "baton/verify/slice_verdict.h"

#include <algorithm>
#include <cctype>

namespace baton::verify {

std::vector<std::int64_t> runs_named(const std::string& evidence) {
  std::vector<std::int64_t> runs;
  static const std::string word = "run ";
  for (std::size_t at = evidence.find(word); at != std::string::npos; at = evidence.find(word, at + 1)) {
    // A whole word: "run 12", not "rerun 12".
    if (at > 0 && std::isalpha(static_cast<unsigned char>(evidence[at - 1]))) continue;
    std::size_t i = at + word.size(), j = i;
    while (j < evidence.size() && std::isdigit(static_cast<unsigned char>(evidence[j])) && j - i < 18) ++j;
    if (j == i) continue;
    const std::int64_t run = std::stoll(evidence.substr(i, j - i));
    if (std::find(runs.begin(), runs.end(), run) == runs.end()) runs.push_back(run);
  }
  return runs;
}

std::string finding_of(const std::string& evidence) {
  std::vector<std::int64_t> runs = runs_named(evidence);
  if (runs.empty()) return evidence.substr(0, 4000);
  std::sort(runs.begin(), runs.end());
  std::string key = "runs";
  for (std::int64_t r : runs) key += " " + std::to_string(r);
  return key.substr(0, 4000);
}

SliceVerdict judge_slice(store::RecordedSlice slice, const CheckSettings& settings) {
  checker::History& h = slice.history;
  h.window.continuation_margin_ms = settings.continuation_margin_ms;
  h.window.owner_grace_ms = settings.owner_grace_ms;
  checker::executions_from_attempts(h);
  SliceVerdict v;
  v.report = checker::check_recorded_history(h);
  if (!slice.commit_timestamps) {
    // Each write's own clock reading stood in for its commit time: the
    // order of a write against an election cannot be told.
    auto& is = v.report.invariants;
    is.erase(std::remove_if(is.begin(), is.end(), [](const auto& i) { return i.name == "no_stale_epoch_writes"; }),
             is.end());
    v.report.not_examinable["no_stale_epoch_writes"] =
        "needs each write's commit time: the database runs without track_commit_timestamp";
  }
  v.report.totals["context_runs"] = static_cast<std::int64_t>(h.context_runs.size());
  if (slice.context_truncated > 0) v.report.totals["context_runs_left_out"] = slice.context_truncated;
  for (const auto& i : v.report.invariants)
    for (const auto& e : i.evidence) {
      store::InvariantViolation violation;
      violation.invariant = i.name;
      violation.evidence = e.substr(0, 4000);
      violation.runs = runs_named(e);
      violation.finding = finding_of(e);
      v.violations.push_back(std::move(violation));
    }
  return v;
}

}  // namespace baton::verify
