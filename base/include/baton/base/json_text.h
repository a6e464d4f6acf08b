#pragma once
// Tiny JSON text builders for the few places that emit JSON without a JSON
// library at hand (config-derived values). Control characters are dropped.
#include <map>
#include <string>
#include <string_view>

namespace baton {

/// A JSON string literal for `s` (quotes and backslashes escaped).
inline std::string json_quote(std::string_view s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    q += c;
  }
  return q + "\"";
}

/// {"k":"v",...} of a string map.
inline std::string json_object(const std::map<std::string, std::string>& m) {
  std::string out = "{";
  for (const auto& [k, v] : m) {
    if (out.size() > 1) out += ',';
    out += json_quote(k) + ":" + json_quote(v);
  }
  return out + "}";
}

}  // namespace baton
