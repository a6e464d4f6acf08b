#include "baton/verify/history_sweep.h"

namespace baton::verify {

bool repairable_by_leader(const std::string& invariant) {
  return invariant == "running_has_owner" || invariant == "assigned_has_owner";
}

Result<SweepOutcome> sweep_once(store::VerifyStore& store, const SweepSettings& settings, const std::string& node,
                                std::int64_t epoch, const Clock& clock) {
  SweepOutcome out;
  for (int i = 0; i < settings.slices_max; ++i) {
    if (i > 0 && settings.keep_going && !settings.keep_going()) break;
    const MonoTime read_from = clock.mono();
    auto from = store.verify_cursor();
    if (!from) return from.error();
    auto slice = store.recorded_slice(*from, settings.settle, settings.slice_runs, i == 0);
    if (!slice) return slice.error();
    const MonoTime read_to = clock.mono();
    const std::int64_t runs = slice->runs;
    const bool full = slice->full;
    const store::VerifyCursor to = slice->next;
    SliceVerdict verdict = judge_slice(std::move(*slice), settings.check);

    store::SweepRecord record;
    record.node = node;
    record.epoch = epoch;
    record.from = *from;
    record.to = to;
    record.runs = runs;
    record.database_us = std::chrono::duration_cast<std::chrono::microseconds>(read_to - read_from).count();
    for (const auto& inv : verdict.report.invariants) record.by_invariant[inv.name] = {inv.examined, inv.violations};
    for (const auto& [name, why] : verdict.report.not_examinable) record.not_examinable.push_back(name);
    record.violations = verdict.violations;
    auto recorded = store.record_sweep(record);
    if (!recorded) return recorded.error();
    out.database += (read_to - read_from) + (clock.mono() - read_to);
    ++out.slices;
    if (!recorded->recorded) {
      out.refused = true;
      break;
    }
    out.new_violations += recorded->new_violations;
    for (const auto& v : verdict.violations)
      if (recorded->new_findings.count({v.invariant, v.finding})) out.new_findings.push_back(v);
    for (const auto& v : verdict.violations)
      if (repairable_by_leader(v.invariant)) {
        auto& runs_of = out.to_repair[v.invariant];
        runs_of.insert(runs_of.end(), v.runs.begin(), v.runs.end());
      }
    out.tally.add(verdict, runs);
    if (!full) break;
  }
  if (!out.refused) {
    auto marked = store.mark_receipt_heads();
    if (!marked) return marked.error();
    out.heads_marked = static_cast<std::int64_t>(marked->size());
  }
  return out;
}

Result<VerifyTally> verify_all(store::VerifyStore& store, const store::VerifyCursor& from, int slice_runs,
                               const CheckSettings& check, const std::function<void(const VerifyTally&)>& progress) {
  VerifyTally tally;
  store::VerifyCursor at = from;
  for (bool first = true;; first = false) {
    auto slice = store.recorded_slice(at, Millis{0}, slice_runs, first);
    if (!slice) return slice.error();
    const std::int64_t runs = slice->runs;
    const bool full = slice->full;
    at = slice->next;
    tally.add(judge_slice(std::move(*slice), check), runs);
    if (progress) progress(tally);
    if (!full) break;
  }
  return tally;
}

}  // namespace baton::verify
