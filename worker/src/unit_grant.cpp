#include "baton/worker/unit_grant.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace baton::worker {

namespace fs = std::filesystem;

namespace {

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

void apply_ambient(std::string value, UnitGrant& g) {
  if (value.empty()) {  // an empty assignment resets what earlier lines gave
    g.ambient.clear();
    g.ambient_inverted = false;
    return;
  }
  const bool inverted = value.front() == '~';
  if (inverted) value.erase(0, 1);
  std::set<std::string> listed;
  std::istringstream words(value);
  for (std::string w; words >> w;) listed.insert(upper(w));
  if (inverted == g.ambient_inverted || g.ambient.empty()) {
    // Same sense: the lists merge (for "~", the exclusions add up).
    if (g.ambient.empty()) g.ambient_inverted = inverted;
    g.ambient.insert(listed.begin(), listed.end());
  } else if (inverted) {
    // "everything but L" after a grant of A: everything but L - A.
    std::set<std::string> left;
    for (const auto& c : listed)
      if (!g.ambient.count(c)) left.insert(c);
    g.ambient = std::move(left);
    g.ambient_inverted = true;
  } else {
    // A grant of A after "everything but L": everything but L - A.
    for (const auto& c : listed) g.ambient.erase(c);
  }
}

}  // namespace

void apply_unit_text(const std::string& text, UnitGrant& grant) {
  std::istringstream in(text);
  std::string section;
  std::string line;
  while (std::getline(in, line)) {
    // A line ending in a backslash continues on the next.
    while (!line.empty() && line.back() == '\\') {
      line.pop_back();
      std::string next;
      if (!std::getline(in, next)) break;
      line += " " + next;
    }
    const std::string t = trimmed(line);
    if (t.empty() || t[0] == '#' || t[0] == ';') continue;
    if (t.front() == '[') {
      section = t;
      continue;
    }
    if (section != "[Service]") continue;
    const auto eq = t.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = trimmed(t.substr(0, eq)), value = trimmed(t.substr(eq + 1));
    if (key == "AmbientCapabilities") apply_ambient(value, grant);
    if (key == "User") grant.user = value;
  }
}

std::optional<UnitGrant> read_unit_grant(const std::string& name, const std::vector<std::string>& dirs) {
  UnitGrant g;
  auto read = [&](const fs::path& p) {
    std::ifstream f(p);
    std::stringstream text;
    text << f.rdbuf();
    apply_unit_text(text.str(), g);
    g.files.push_back(p.string());
  };
  std::error_code ec;
  bool found = false;
  for (const auto& d : dirs) {
    const fs::path p = fs::path(d) / name;
    if (fs::is_regular_file(p, ec)) {
      read(p);
      found = true;
      break;
    }
  }
  if (!found) return std::nullopt;
  std::map<std::string, fs::path> dropins;  // by file name: the earliest dir's wins
  for (const auto& d : dirs) {
    const fs::path dir = fs::path(d) / (name + ".d");
    if (!fs::is_directory(dir, ec)) continue;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".conf") dropins.emplace(e.path().filename().string(), e.path());
  }
  for (const auto& [file, path] : dropins) read(path);
  return g;
}

std::vector<std::string> unit_dirs() {
  if (const char* env = std::getenv("SYSTEMD_UNIT_PATH"); env && *env) {
    std::vector<std::string> out;
    std::stringstream s(env);
    for (std::string d; std::getline(s, d, ':');)
      if (!d.empty()) out.push_back(d);
    return out;
  }
  return {"/etc/systemd/system", "/run/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"};
}

}  // namespace baton::worker
