#pragma once
// The settings an operator changes without a restart (`ctl settings set`,
// PUT /api/v1/settings/{key}; docs/operations.md, "Live settings"): one
// catalogue, read by the API that validates a change and by the leader that
// applies it. A key that is not set means the node config's value.
//
// Pure: the raw values arrive as the store read them (store::Controls), the
// node config's RuntimeConfig beside them.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "baton/leader_core/runtime_config.h"

namespace baton::leader_core {

enum class SettingKind { boolean, integer, selectors };

struct SettingSpec {
  std::string_view key;
  SettingKind kind;
  std::int64_t min = 0, max = 0;  ///< integer: the allowed range
  std::string_view unit;          ///< integer: days, milliseconds, runs
  std::string_view effect;        ///< what it does, for `ctl settings get`
};

/// Every live setting, in the order `ctl settings get` lists them.
std::span<const SettingSpec> live_setting_specs();
const SettingSpec* live_setting_spec(std::string_view key);

/// A selector as a setting spells it: "k=v" or "k=v,k2=v2" (every key must
/// equal the worker's label). nullopt: not one.
std::optional<std::map<std::string, std::string>> parse_selector(std::string_view text);

/// What the leader applies: the gates, and the node config's timings with
/// the live ones over them.
struct LiveSettings {
  bool cron_enabled = true;
  bool events_enabled = true;
  /// Workers matching any of these get no new runs (what they hold goes on).
  std::vector<std::map<std::string, std::string>> dispatch_paused;
  RuntimeConfig runtime;
  /// Stored values the leader did not apply, each naming its key and why
  /// (a value out of range, or timings that break a rule together).
  std::vector<std::string> refused;
};

/// The raw rows: key -> its value as text (an array: one element each; an
/// empty array: no element). Unknown keys are ignored.
LiveSettings live_settings(const std::map<std::string, std::vector<std::string>>& raw, const RuntimeConfig& base);

/// Whether two configs agree on every timing a live setting changes.
bool same_live_timings(const RuntimeConfig& a, const RuntimeConfig& b);

/// What is wrong with `runtime`'s timings together, naming the keys of a
/// live setting (empty: nothing): the rules of the node config's `runtime:`.
std::optional<std::string> timing_rules_broken(const RuntimeConfig& runtime);

}  // namespace baton::leader_core
