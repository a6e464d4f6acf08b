#include "baton/leader_core/read_age.h"

#include <algorithm>

namespace baton::leader_core {

void age_read(std::vector<store::DueRun>& rows, Millis held) {
  for (auto& d : rows) d.starts_in_ms = std::max<std::int64_t>(0, d.starts_in_ms - held.count());
}

void age_read(std::vector<store::ScheduledJob>& jobs, Millis held) {
  for (auto& j : jobs) {
    j.now_unix_ms += held.count();
    j.now_unix = j.now_unix_ms / 1000;  // floor, as the database gives it
  }
}

}  // namespace baton::leader_core
