#include "baton/worker_core/task_parameters.h"

namespace baton::worker_core {

namespace {
bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
}  // namespace

std::variant<std::string, SubstitutionError> substitute_parameters(const std::string& text, const Parameters& params) {
  static const std::string open = "{{param.";
  std::string out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t start = text.find(open, at);
    if (start == std::string::npos) {
      out.append(text, at, std::string::npos);
      return out;
    }
    out.append(text, at, start - at);
    const std::size_t name_at = start + open.size();
    const std::size_t close = text.find("}}", name_at);
    if (close == std::string::npos)
      return SubstitutionError{"unterminated \"{{param.\" at offset " + std::to_string(start) +
                               " (write {{param.NAME}})"};
    const std::string name = text.substr(name_at, close - name_at);
    auto it = params.find(name);
    if (it == params.end()) return SubstitutionError{"{{param." + name + "}} names a parameter the run does not have"};
    out += it->second;
    at = close + 2;
  }
}

bool is_psql_variable_name(const std::string& name) {
  if (name.empty() || name.size() > 63) return false;
  if (!(name[0] == '_' || (name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z'))) return false;
  for (char c : name)
    if (!(is_alnum(c) || c == '_')) return false;
  return true;
}

}  // namespace baton::worker_core
