#include "history_sweeper.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "baton/base/json_text.h"
#include "baton/verify/history_sweep.h"
#include "baton/verify/sweep_pace.h"

namespace baton::node {

void run_history_sweeps(const HistorySweeperParts& p) {
  verify::SweepSettings settings;
  settings.settle = p.cfg.verify.settle;
  settings.slice_runs = p.cfg.verify.slice_runs;
  settings.slices_max = p.cfg.verify.slices_per_sweep;
  settings.check.continuation_margin_ms = p.cfg.runtime.continuation_margin.count();
  settings.check.owner_grace_ms = p.cfg.verify.owner_grace.count();
  // Under load the sweep yields (docs/assurance.md, "Under load"): the
  // runs this node finished since the last round, and since the slice
  // before, set how many slices it reads.
  const verify::SweepPace pace{.busy_runs_per_s = p.cfg.verify.yield_above_runs_per_s,
                               .slices_busy = p.cfg.verify.slices_under_load,
                               .slices_max = p.cfg.verify.slices_per_sweep};
  MonoTime next = p.clock.mono();
  std::int64_t sweeping_epoch = 0;
  MonoTime counted_at = p.clock.mono();
  std::int64_t counted = p.runs_finished.load();
  auto finishes_per_s = [&] {
    const MonoTime now = p.clock.mono();
    const std::int64_t finished = p.runs_finished.load();
    const double rate =
        verify::finished_per_s(finished - counted, std::chrono::duration_cast<Millis>(now - counted_at));
    counted = finished;
    counted_at = now;
    return rate;
  };
  int slices_read = 0;
  settings.keep_going = [&] {
    return !p.stop.load() && p.leading_epoch.load() == sweeping_epoch &&
           verify::next_slice_allowed(pace, ++slices_read, finishes_per_s());
  };
  while (!p.stop.load()) {
    const std::int64_t epoch = p.leading_epoch.load();
    if (epoch > 0 && p.clock.mono() >= next) {
      sweeping_epoch = epoch;
      next = p.clock.mono() + p.cfg.verify.every;
      settings.slices_max = verify::slices_this_round(pace, finishes_per_s());
      slices_read = 0;
      if (settings.slices_max == 0) continue;  // yielding: nothing this round
      auto swept = verify::sweep_once(p.store, settings, p.me.node_id, epoch, p.clock);
      if (!swept) {
        spdlog::warn("verify_sweep_failed node={} epoch={} error={}", p.me.node_id, epoch,
                     json_quote(swept.error().message));
      } else {
        // Only what is new: a finding seen again (a run left RUNNING on
        // a gone worker is found by every sweep) was told already.
        for (const auto& v : swept->new_findings) {
          std::string runs;
          for (auto r : v.runs) runs += (runs.empty() ? "" : ",") + std::to_string(r);
          spdlog::error("invariant_violation node={} epoch={} invariant={} runs={} evidence={}", p.me.node_id, epoch,
                        v.invariant, runs.empty() ? "-" : runs, json_quote(v.evidence));
        }
        // What the leader's reaper can repair, asked of this epoch's
        // book at every sweep that finds it (docs/assurance.md,
        // "Repair").
        for (const auto& [invariant, runs] : swept->to_repair)
          if (!p.recheck(Epoch{epoch}, runs, invariant))
            spdlog::info("invariant_recheck_skipped node={} epoch={} invariant={} runs={} reason=not_leading",
                         p.me.node_id, epoch, invariant, runs.size());
        if (swept->tally.runs > 0 || swept->refused)
          spdlog::info(
              "verify_swept node={} epoch={} runs={} slices={} violations={} new_violations={} "
              "database_ms={} refused={}",
              p.me.node_id, epoch, swept->tally.runs, swept->slices, swept->tally.violations_total,
              swept->new_violations, std::chrono::duration_cast<Millis>(swept->database).count(), swept->refused);
      }
    }
    std::this_thread::sleep_for(Millis{200});
  }
}

}  // namespace baton::node
