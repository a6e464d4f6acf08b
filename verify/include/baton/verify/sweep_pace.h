#pragma once
// How much the leader's sweep reads in a round (docs/assurance.md, "Under
// load"): the sweep yields to runs. While runs finish faster than
// `busy_runs_per_s`, a round reads at most `slices_busy` slices and its
// cursor may lag (baton_verify_lag_seconds says by how much); once they
// finish slower, a round reads up to `slices_max` and the cursor catches up.
// Every run is still checked: later, not never. A pure decision over the
// runs this node finished and a monotonic time.
#include <cstdint>

#include "baton/base/clock.h"

namespace baton::verify {

struct SweepPace {
  /// Runs finished per second above which the sweep yields; 0: never.
  double busy_runs_per_s = 500;
  /// Slices a round reads while busy (0: none).
  int slices_busy = 1;
  /// Slices a round reads otherwise (verify.slices_per_sweep).
  int slices_max = 100;
};

/// The rate of finishes the pace compares with its threshold: `finished`
/// runs counted over `elapsed` (0 when no time has passed).
double finished_per_s(std::int64_t finished, Millis elapsed);

/// The slices a round may read, given the rate of finishes since the last
/// round.
int slices_this_round(const SweepPace& pace, double runs_per_s);

/// Whether a round that has begun reads its next slice: not while runs
/// finish faster than the threshold (measured since the slice before), once
/// it has read its busy allowance.
bool next_slice_allowed(const SweepPace& pace, int slices_read, double runs_per_s);

}  // namespace baton::verify
