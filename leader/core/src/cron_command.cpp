#include "baton/leader_core/cron_command.h"

#include <charconv>

#include "baton/leader_core/cron.h"
#include "baton/leader_core/cron_zone.h"

namespace baton::leader_core {

const char* const kCronUsage =
    "usage: baton cron next EXPR [--tz ZONE] [--from TIME] [-n N]\n"
    "\n"
    "Prints the next N (default 5, at most 1000) fire times of the cron expression EXPR\n"
    "(quote it: \"0 9 * * MON-FRI\"), read in ZONE (default UTC; an IANA name such as\n"
    "Europe/Berlin or a fixed offset such as +02:00), after TIME (default now; ISO 8601,\n"
    "e.g. 2026-03-29T00:00:00Z, or a wall clock in ZONE without an offset). Times are\n"
    "printed in ISO 8601 with ZONE's offset. The dialect: docs/scheduling.md.\n";

namespace {

CronCommandResult usage_error(const std::string& message) {
  return {2, "", "baton cron: " + message + "\n" + kCronUsage};
}

// The expression with a caret under the offending character.
std::string point_at(const std::string& expr, std::size_t position) {
  return "  " + expr + "\n  " + std::string(std::min(position, expr.size()), ' ') + "^\n";
}

}  // namespace

CronCommandResult run_cron_command(const std::vector<std::string>& args, std::chrono::sys_seconds now) {
  if (args.empty()) return usage_error("missing subcommand: next");
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") return {0, kCronUsage, ""};
  if (args[0] != "next") return usage_error("unknown subcommand '" + args[0] + "', expected next");
  std::optional<std::string> expr, tz, from;
  long count = 5;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    if (a == "--help" || a == "-h") return {0, kCronUsage, ""};
    if (a == "--tz" || a == "--from" || a == "-n") {
      auto v = value();
      if (!v) return usage_error(a + " needs a value");
      if (a == "--tz") tz = *v;
      if (a == "--from") from = *v;
      if (a == "-n") {
        const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), count);
        if (ec != std::errc{} || end != v->data() + v->size() || count < 1 || count > 1000)
          return usage_error("-n '" + *v + "': expected a number from 1 to 1000");
      }
    } else if (!a.empty() && a[0] == '-' && a.size() > 1) {
      return usage_error("unknown option '" + a + "'");
    } else if (expr) {
      return usage_error("unexpected argument '" + a + "': quote the whole expression, e.g. \"0 9 * * *\"");
    } else {
      expr = a;
    }
  }
  if (!expr) return usage_error("missing cron expression");

  auto located = CronZone::locate(tz.value_or("UTC"));
  if (auto* e = std::get_if<std::string>(&located)) return {2, "", "baton cron: --tz: " + *e + "\n"};
  const CronZone& zone = std::get<CronZone>(located);

  auto parsed = parse_cron(*expr);
  if (auto* e = std::get_if<CronParseError>(&parsed)) {
    return {2, "",
            "baton cron: bad expression at position " + std::to_string(e->position) + ": " + e->message + "\n" +
                point_at(*expr, e->position)};
  }
  const CronSchedule& schedule = std::get<CronSchedule>(parsed);

  std::chrono::sys_seconds after = now;
  if (from) {
    auto t = parse_iso8601(*from, zone);
    if (auto* e = std::get_if<std::string>(&t)) return {2, "", "baton cron: --from: " + *e + "\n"};
    // Fire times strictly after the instant before TIME: TIME itself counts.
    after = std::get<std::chrono::sys_seconds>(t) - std::chrono::seconds{1};
  }
  CronCommandResult r;
  for (long i = 0; i < count; ++i) {
    const auto next = next_fire(schedule, after, zone);
    if (!next) {
      if (i == 0) return {1, "", "baton cron: \"" + *expr + "\" never fires within 5 years\n"};
      break;
    }
    r.out += format_iso8601(*next, zone) + "\n";
    after = *next;
  }
  return r;
}

}  // namespace baton::leader_core
