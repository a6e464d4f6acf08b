#pragma once
// The payload denylist (docs/scheduling.md, "Parameters"): names and text
// that must not travel as run parameters or event payloads, because they
// are secrets (they would be stored in the database, shown by the API and
// the dashboard, and copied to dead letters). Pure.
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <vector>

namespace baton::admin {

/// The node's default `payload_denylist`.
const std::vector<std::string>& default_payload_denylist();

/// The first key (at any depth) or string value of `v` that contains an
/// entry of `denylist` (case-insensitive), as an error naming its path
/// (`where`.a.b) and the entry; nullopt when none does. An entry written
/// `=name` matches a key that is exactly `name` (case-insensitive) and no
/// value: `=token` refuses the key `token` without refusing `tokens_used`
/// or the text "tokenize".
std::optional<std::string> find_denied(const boost::json::value& v, const std::vector<std::string>& denylist,
                                       const std::string& where);

}  // namespace baton::admin
