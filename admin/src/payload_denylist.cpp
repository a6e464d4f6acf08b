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

std::optional<std::string> matching(const std::string& text, const std::vector<std::string>& denylist) {
  const std::string l = lower(text);
  for (const auto& entry : denylist)
    if (!entry.empty() && l.find(lower(entry)) != std::string::npos) return entry;
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& default_payload_denylist() {
  static const std::vector<std::string> list{"password", "passwd", "secret",      "_token",
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
      if (auto hit = matching(key, denylist))
        return path.substr(0, 200) + ": the name contains " + json_quote(*hit) + advice;
      if (auto deeper = find_denied(kv.value(), denylist, path)) return deeper;
    }
  } else if (v.is_array()) {
    const auto& a = v.as_array();
    for (std::size_t i = 0; i < a.size(); ++i)
      if (auto deeper = find_denied(a[i], denylist, where + "[" + std::to_string(i) + "]")) return deeper;
  } else if (v.is_string()) {
    if (auto hit = matching(std::string(v.as_string()), denylist))
      return where.substr(0, 200) + ": the value contains " + json_quote(*hit) + advice;
  }
  return std::nullopt;
}

}  // namespace baton::admin
