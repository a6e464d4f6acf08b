#pragma once
// What a systemd unit gives the worker it starts: its user and its ambient
// capabilities, read from the unit file and its drop-ins as systemd reads
// them (`baton doctor`; security review N1). The worker itself sees only
// what it holds when it runs; an operator running doctor as root before
// the first start needs what the unit will give.
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace baton::worker {

struct UnitGrant {
  std::vector<std::string> files;  ///< read, in systemd's order: the unit, then its drop-ins
  std::string user;                ///< User= (empty: root)
  std::set<std::string> ambient;   ///< AmbientCapabilities=, e.g. "CAP_SETUID"
  bool ambient_inverted = false;   ///< "~": every capability but those in `ambient`
};

/// Applies one file's [Service] section to `grant` with systemd's rules:
/// AmbientCapabilities= lines merge, an empty assignment resets, a list
/// starting with "~" grants every capability but the ones listed; the last
/// User= wins; comments, other sections and continued lines are handled.
void apply_unit_text(const std::string& text, UnitGrant& grant);

/// Reads unit `name` as systemd would: the file from the first of `dirs`
/// that holds it, then `name`.d/*.conf from every dir in file-name order
/// (a name in an earlier dir hides the same name in a later one). None
/// when no dir holds the unit.
std::optional<UnitGrant> read_unit_grant(const std::string& name, const std::vector<std::string>& dirs);

/// The directories systemd looks in: $SYSTEMD_UNIT_PATH (colon-separated)
/// when set, otherwise /etc/systemd/system, /run/systemd/system,
/// /lib/systemd/system, /usr/lib/systemd/system.
std::vector<std::string> unit_dirs();

}  // namespace baton::worker
