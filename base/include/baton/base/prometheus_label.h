#pragma once
// A label value as the Prometheus text exposition format writes it:
// backslash, double quote and newline escaped. For values a worker or an
// operator chose (worker ids, job names), so no value ends its label early.
#include <string>
#include <string_view>

namespace baton {

inline std::string prometheus_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace baton
