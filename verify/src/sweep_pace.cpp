#include "baton/verify/sweep_pace.h"

#include <algorithm>

namespace baton::verify {

double finished_per_s(std::int64_t finished, Millis elapsed) {
  if (elapsed.count() <= 0 || finished <= 0) return 0;
  return static_cast<double>(finished) * 1000.0 / static_cast<double>(elapsed.count());
}

namespace {
bool busy(const SweepPace& pace, double runs_per_s) {
  return pace.busy_runs_per_s > 0 && runs_per_s > pace.busy_runs_per_s;
}
}  // namespace

int slices_this_round(const SweepPace& pace, double runs_per_s) {
  return busy(pace, runs_per_s) ? std::min(pace.slices_busy, pace.slices_max) : pace.slices_max;
}

bool next_slice_allowed(const SweepPace& pace, int slices_read, double runs_per_s) {
  return !busy(pace, runs_per_s) || slices_read < pace.slices_busy;
}

}  // namespace baton::verify
