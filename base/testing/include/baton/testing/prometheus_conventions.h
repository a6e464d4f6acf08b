#pragma once
// What a Prometheus exposition must keep to (the text format and the naming
// conventions of prometheus.io "Metric and label naming"), as a list of the
// places it does not: one family declared once with its HELP and TYPE,
// lower-case names in base units, counters ending in _total and nothing
// else, histograms complete, every sample a number. Tests of /metrics use it.
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace baton::testing {

inline std::vector<std::string> exposition_problems(const std::string& text) {
  std::vector<std::string> out;
  std::map<std::string, std::string> types;
  std::set<std::string> helped, sampled;
  const std::regex name_re("^[a-z_:][a-z0-9_:]*$");
  // Label values are quoted and may hold anything escaped (a route's braces).
  const std::regex sample_re(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})? (\S+)$)");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      if (!helped.insert(name).second) out.push_back(name + ": HELP twice");
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      if (types.count(name)) out.push_back(name + ": TYPE twice");
      types[name] = type;
      if (!std::regex_match(name, name_re)) out.push_back(name + ": not a lower-case metric name");
      if (name.rfind("baton_", 0) != 0 && name.rfind("process_", 0) != 0)
        out.push_back(name + ": neither baton_ nor process_");
      if ((type == "counter") != name.ends_with("_total"))
        out.push_back(name + ": a " + type + " (_total is for counters)");
      if (type == "histogram" && !name.ends_with("_seconds") && !name.ends_with("_bytes"))
        out.push_back(name + ": a histogram not in seconds or bytes");
      for (const char* unit : {"_ms", "millis", "_us", "_kb", "_mb"})
        if (name.find(unit) != std::string::npos) out.push_back(name + ": not in a base unit (" + unit + ")");
      for (const char* timely : {"age", "duration", "latency", "_time"})
        if (name.find(timely) != std::string::npos && !name.ends_with("_seconds") && !name.ends_with("_seconds_total"))
          out.push_back(name + ": a time not in _seconds");
      continue;
    }
    if (line.empty()) continue;
    if (!std::regex_match(line, m, sample_re)) {
      out.push_back("not a sample: " + line);
      continue;
    }
    std::string family = m[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (!types.count(family) && family.ends_with(suffix) &&
          types.count(family.substr(0, family.size() - std::string(suffix).size())))
        family = family.substr(0, family.size() - std::string(suffix).size());
    if (!types.count(family)) out.push_back(std::string(m[1]) + ": a sample before (or without) its TYPE");
    if (!helped.count(family)) out.push_back(std::string(m[1]) + ": no HELP");
    sampled.insert(m[1]);
    try {
      const std::string v = m[3];
      if (v != "+Inf" && v != "-Inf" && v != "NaN") (void)std::stod(v);
    } catch (...) {
      out.push_back(line + ": the value is not a number");
    }
  }
  for (const auto& [name, type] : types)
    if (type == "histogram" && sampled.count(name + "_count") &&
        (!sampled.count(name + "_bucket") || !sampled.count(name + "_sum")))
      out.push_back(name + ": a histogram without its buckets or sum");
  return out;
}

}  // namespace baton::testing
