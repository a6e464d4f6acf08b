// libFuzzer target: a cron expression from a job definition (an API body, a
// job file), parsed, and when it parses, its next fire times from a few
// instants in a fixed zone and in UTC.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "baton/leader_core/cron.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace std::chrono;
  const std::string_view expr(reinterpret_cast<const char*>(data), size);
  auto parsed = baton::leader_core::parse_cron(expr);
  auto* schedule = std::get_if<baton::leader_core::CronSchedule>(&parsed);
  if (!schedule) return 0;
  for (const sys_seconds after : {sys_seconds{seconds{0}}, sys_seconds{seconds{1798761599}}}) {
    (void)baton::leader_core::next_fire(*schedule, after);
    (void)baton::leader_core::next_fire(*schedule, after, baton::leader_core::CronZone::fixed(minutes{-330}));
  }
  return 0;
}
