#include "baton/admin/payload_denylist.h"

#include <boost/json.hpp>

#include "baton/base/json_text.h"

namespace baton::admin {

namespace {

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

enum class Part { name, value };

// What matched, as the error names it: "contains \"password\"", or for an
// exact entry "is \"token\"".
std::optional<std::string> matching(const std::string& text, const std::vector<std::string>& denylist, Part part) {
  const std::string l = lower(text);
  for (const auto& entry : denylist) {
    if (entry.empty()) continue;
    if (entry[0] == '=') {
      if (part == Part::name && entry.size() > 1 && l == lower(entry.substr(1)))
        return "is " + json_quote(entry.substr(1));
      continue;
    }
    if (l.find(lower(entry)) != std::string::npos) return "contains " + json_quote(entry);
  }
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& default_payload_denylist() {
  static const std::vector<std::string> list{"password", "passwd", "secret",      "_token",    "=token",
                                             "api_key",  "apikey", "private_key", "-----BEGIN"};
  return list;
}

std::optional<std::string> find_denied(const boost::json::value& v, const std::vector<std::string>& denylist,
                                       const std::string& where) {
  const std::string advice =
      ": secrets do not belong in run parameters or event payloads (they are stored and shown); give the worker "
      "a file or an environment variable instead (the node's payload_denylist)";
  if (v.is_object()) {
    for (const auto& kv : v.as_object()) {
      const std::string key(kv.key());
      const std::string path = where + "." + key;
      if (auto hit = matching(key, denylist, Part::name)) return path.substr(0, 200) + ": the name " + *hit + advice;
      if (auto deeper = find_denied(kv.value(), denylist, path)) return deeper;
    }
  } else if (v.is_array()) {
    const auto& a = v.as_array();
    for (std::size_t i = 0; i < a.size(); ++i)
      if (auto deeper = find_denied(a[i], denylist, where + "[" + std::to_string(i) + "]")) return deeper;
  } else if (v.is_string()) {
    if (auto hit = matching(std::string(v.as_string()), denylist, Part::value))
      return where.substr(0, 200) + ": the value " + *hit + advice;
  }
  return std::nullopt;
}

}  // namespace baton::admin
