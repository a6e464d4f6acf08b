#pragma once
// A read's times that count from the moment it was made, moved to the
// moment its result reaches the book.
//
// The book counts a due run's hold (DueRun::starts_in_ms) and a cron slot's
// wake-up (ScheduledJob::now_unix_ms) from `now` when the read's result is
// fed to it. A shell that reads on another thread (ControlLoop's read lane)
// feeds the result later than the read returned: by then the run is that
// much nearer its time and the database's clock that much further on.
// Unmoved, every hold and wake-up would be late by the time the result
// waited in the inbox (behind a pass's cron creates: milliseconds).
//
// `held` is the whole milliseconds between the read's return and the feed,
// rounded down, so a moved time is never ahead of the truth: a start is
// never held for less than the run's time left (the database refuses a
// start before it), and a wake-up never comes before its slot.
#include <vector>

#include "baton/base/clock.h"
#include "baton/store/leader_rows.h"

namespace baton::leader_core {

/// Each run's time left before it may start, less `held` (never below 0).
void age_read(std::vector<store::DueRun>& rows, Millis held);
/// The database's clock at the read, plus `held`.
void age_read(std::vector<store::ScheduledJob>& jobs, Millis held);

}  // namespace baton::leader_core
