#include "baton/base/redact.h"

#include <algorithm>
#include <cctype>

namespace baton {

std::string redact_url(std::string_view url) {
  std::string out(url);
  // user:password@host -- also in a malformed URL (one slash, no scheme),
  // which is exactly what a config error would quote: the userinfo is what
  // stands between the last '/' before the first '@' and that '@'.
  if (auto at = out.find('@'); at != std::string::npos) {
    const auto slash = out.rfind('/', at);
    const auto start = slash == std::string::npos ? 0 : slash + 1;
    const auto colon = out.find(':', start);
    if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
  }
  // password=VALUE, as a query parameter or a keyword=value pair.
  std::string lower = out;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (std::size_t pos = lower.find("password="); pos != std::string::npos; pos = lower.find("password=", pos + 1)) {
    const auto value = pos + 9;
    auto end = out.find_first_of("& ", value);
    if (end == std::string::npos) end = out.size();
    out.replace(value, end - value, "***");
    lower.replace(value, end - value, "***");
  }
  return out;
}

}  // namespace baton
