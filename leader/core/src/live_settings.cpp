#include "baton/leader_core/live_settings.h"

#include <array>
#include <charconv>

namespace baton::leader_core {

namespace {

constexpr std::array<SettingSpec, 11> specs{{
    {"dispatch_enabled", SettingKind::boolean, 0, 0, "",
     "false: the leader assigns no runs (within runtime.controls_every, 500 ms by default); runs already assigned or "
     "running go on, and runs keep being created"},
    {"dispatch_paused_selectors", SettingKind::selectors, 0, 0, "",
     "workers whose labels match any of these selectors (\"pool=gpu\", \"zone=b,pool=gpu\") get no new runs; what "
     "they hold goes on, and the other workers are dispatched to as before"},
    {"cron_enabled", SettingKind::boolean, 0, 0, "",
     "false: the leader creates no cron slots; slots that come due meanwhile are treated by each job's "
     "misfire_policy when it is set back to true"},
    {"events_enabled", SettingKind::boolean, 0, 0, "",
     "false: posted events are stored and wait; the leader turns none into runs until it is set back to true"},
    {"retention_days", SettingKind::integer, 1, 36500, "days",
     "days finished runs (with their history and logs), decision-ledger entries, processed events and triaged "
     "dead letters are kept; the leader prunes older ones in bounded batches every runtime.prune_every"},
    {"reassign_after_ms", SettingKind::integer, 1000, 86400000, "milliseconds",
     "an ASSIGNED run not started this long is ORPHANED and reassigned (runtime.reassign_after)"},
    {"heartbeat_interval_ms", SettingKind::integer, 100, 60000, "milliseconds",
     "how often workers heartbeat (runtime.heartbeat_interval); told to each worker when it is welcomed, so a "
     "worker attached before the change keeps its cadence until it reconnects"},
    {"heartbeat_timeout_ms", SettingKind::integer, 300, 600000, "milliseconds",
     "a worker silent this long is detached (runtime.heartbeat_timeout); more than heartbeat_interval_ms, and "
     "like it told to each worker when it is welcomed"},
    {"continuation_timeout_ms", SettingKind::integer, 1000, 86400000, "milliseconds",
     "how long a detached worker keeps a RUNNING attempt going (runtime.continuation_timeout); told to workers "
     "when they are welcomed, and recorded with each run when it starts"},
    {"continuation_margin_ms", SettingKind::integer, 0, 86400000, "milliseconds",
     "the leader waits a detached run's continuation deadline plus this before it retries the attempt "
     "(runtime.continuation_margin); at least heartbeat_timeout_ms"},
    {"dispatch_batch", SettingKind::integer, 1, 100000, "runs",
     "at most this many runs are read and assigned per label set in one dispatch (runtime.dispatch_batch)"},
}};

std::optional<std::int64_t> whole_number(const std::string& text) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

std::span<const SettingSpec> live_setting_specs() { return specs; }

const SettingSpec* live_setting_spec(std::string_view key) {
  for (const auto& s : specs)
    if (s.key == key) return &s;
  return nullptr;
}

std::optional<std::map<std::string, std::string>> parse_selector(std::string_view text) {
  std::map<std::string, std::string> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view pair = text.substr(0, comma);
    const auto eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == pair.size()) return std::nullopt;
    if (!out.emplace(std::string(pair.substr(0, eq)), std::string(pair.substr(eq + 1))).second) return std::nullopt;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return std::nullopt;  // a trailing comma
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<std::string> timing_rules_broken(const RuntimeConfig& r) {
  if (r.heartbeat_timeout <= r.heartbeat_interval)
    return "heartbeat_timeout_ms (" + std::to_string(r.heartbeat_timeout.count()) +
           ") must be greater than heartbeat_interval_ms (" + std::to_string(r.heartbeat_interval.count()) + ")";
  if (r.continuation_margin < r.heartbeat_timeout)
    return "continuation_margin_ms (" + std::to_string(r.continuation_margin.count()) +
           ") must be at least heartbeat_timeout_ms (" + std::to_string(r.heartbeat_timeout.count()) +
           "): a worker may notice its detach that much later";
  return std::nullopt;
}

bool same_live_timings(const RuntimeConfig& a, const RuntimeConfig& b) {
  return a.reassign_after == b.reassign_after && a.heartbeat_interval == b.heartbeat_interval &&
         a.heartbeat_timeout == b.heartbeat_timeout && a.continuation_timeout == b.continuation_timeout &&
         a.continuation_margin == b.continuation_margin && a.dispatch_batch == b.dispatch_batch;
}

LiveSettings live_settings(const std::map<std::string, std::vector<std::string>>& raw, const RuntimeConfig& base) {
  LiveSettings out;
  out.runtime = base;
  RuntimeConfig timed = base;
  for (const auto& entry : raw) {
    // Named copies, not a structured binding: clang 14 (the fuzz build) refuses to capture one in a lambda.
    const std::string& key = entry.first;
    const std::vector<std::string>& values = entry.second;
    const SettingSpec* spec = live_setting_spec(key);
    if (!spec || key == "dispatch_enabled") continue;  // dispatch_enabled: store::Controls has it
    auto refuse = [&](const std::string& why) { out.refused.push_back(key + ": " + why); };
    if (spec->kind == SettingKind::selectors) {
      for (const auto& text : values) {
        if (auto sel = parse_selector(text))
          out.dispatch_paused.push_back(std::move(*sel));
        else
          refuse("\"" + text.substr(0, 64) + "\" is not a selector (k=v[,k=v])");
      }
      continue;
    }
    if (values.size() != 1) {
      refuse("not a single value");
      continue;
    }
    if (spec->kind == SettingKind::boolean) {
      if (values[0] != "true" && values[0] != "false") {
        refuse("not a boolean");
        continue;
      }
      (key == "cron_enabled" ? out.cron_enabled : out.events_enabled) = values[0] == "true";
      continue;
    }
    const auto v = whole_number(values[0]);
    if (!v || *v < spec->min || *v > spec->max) {
      refuse("not a whole number from " + std::to_string(spec->min) + " to " + std::to_string(spec->max));
      continue;
    }
    const Millis ms{*v};
    if (key == "reassign_after_ms") timed.reassign_after = ms;
    if (key == "heartbeat_interval_ms") timed.heartbeat_interval = ms;
    if (key == "heartbeat_timeout_ms") timed.heartbeat_timeout = ms;
    if (key == "continuation_timeout_ms") timed.continuation_timeout = ms;
    if (key == "continuation_margin_ms") timed.continuation_margin = ms;
    if (key == "dispatch_batch") timed.dispatch_batch = static_cast<int>(*v);
    // retention_days: the prune statement reads it itself.
  }
  // Timings that break a rule together are not applied at all (the node
  // config's stand): the API refuses such a change, but two nodes' configs,
  // or two operators at once, can still bring one about.
  if (auto broken = timing_rules_broken(timed))
    out.refused.push_back(*broken);
  else
    out.runtime = timed;
  return out;
}

}  // namespace baton::leader_core
