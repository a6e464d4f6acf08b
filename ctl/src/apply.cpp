// `baton ctl apply`: job files are the declared state; the API is asked to
// make the database match. Every job is first checked by a dry run, so a
// set of files with one bad job changes nothing at all.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/json.hpp>
#include <boost/url/url.hpp>
#include <filesystem>
#include <ostream>
#include <set>
#include <sstream>

#include "baton/ctl/ctl.h"
#include "ctl_verbs.h"

namespace baton::ctl {

namespace json = boost::json;

namespace {

/// A YAML node as JSON. Scalars become strings: the server reads a job with
/// the same YAML reader as a job file, which does not tell 3 from "3".
json::value to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json::object o;
      for (const auto& kv : n) o[kv.first.as<std::string>()] = to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      json::array a;
      for (const auto& v : n) a.push_back(to_json(v));
      return a;
    }
    case YAML::NodeType::Scalar: return json::value(n.as<std::string>());
    default: return nullptr;
  }
}

struct Declared {
  std::string where;  ///< "FILE: jobs[i]"
  std::string name;
  std::string body;  ///< the job as JSON
};

}  // namespace

int apply(Call& c) {
  auto files_flag = c.flag("--file");
  if (!files_flag) return c.usage("apply needs -f FILE or -f DIR");
  std::vector<std::string> files;
  std::istringstream paths(*files_flag);
  for (std::string p; std::getline(paths, p);) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::string> in_dir;
      for (const auto& e : std::filesystem::directory_iterator(p, ec))
        if (e.path().extension() == ".yaml" || e.path().extension() == ".yml") in_dir.push_back(e.path().string());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (std::filesystem::exists(p, ec)) {
      files.push_back(p);
    } else {
      return c.error(exit_usage, "no such file or directory: " + p);
    }
  }

  std::vector<Declared> declared;
  std::set<std::string> names;
  int problems = 0;
  for (const auto& f : files) {
    try {
      YAML::Node root = YAML::LoadFile(f);
      YAML::Node list = root["jobs"];
      if (!root.IsMap() || !list || !list.IsSequence()) {
        c.err << f << ": jobs: must be a list of job definitions\n";
        ++problems;
        continue;
      }
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string where = f + ": jobs[" + std::to_string(i) + "]";
        auto name = list[i]["name"];
        if (!list[i].IsMap() || !name || !name.IsScalar()) {
          c.err << where << ".name: is required\n";
          ++problems;
          continue;
        }
        if (!names.insert(name.as<std::string>()).second) {
          c.err << where << ".name: job '" << name.as<std::string>() << "' is defined twice\n";
          ++problems;
          continue;
        }
        declared.push_back({where, name.as<std::string>(), json::serialize(to_json(list[i]))});
      }
    } catch (const YAML::Exception& e) {
      c.err << f << ": " << e.what() << '\n';
      ++problems;
    }
  }
  if (problems)
    return c.error(exit_refused, std::to_string(problems) + " problem(s) in the job files; nothing changed");

  // Every job checked first (the server's dry run): all valid, or no change.
  struct Plan {
    const Declared* job;
    std::string action;
    std::string changes;
  };
  std::vector<Plan> plan;
  for (const auto& d : declared) {
    auto reply = c.api.call("PUT", "/api/v1/jobs/" + path_segment(d.name) + "?dry_run=true", d.body);
    if (reply.status != 200) {
      boost::system::error_code ec;
      auto v = json::parse(reply.body, ec);
      if (reply.status == 400 && !ec && v.is_object() && v.as_object().contains("message")) {
        // The server names the problem in the request body ("body: KEY: ..."),
        // one per line: each becomes "FILE: jobs[i].KEY: ...".
        std::istringstream lines{std::string(v.as_object()["message"].as_string())};
        for (std::string line; std::getline(lines, line);) {
          if (line.rfind("body: ", 0) == 0) line = line.substr(6);
          c.err << d.where << (line.empty() || line[0] == '.' ? "" : ".") << line << '\n';
        }
        ++problems;
        continue;
      }
      return c.fail(reply);
    }
    auto o = json::parse(reply.body).as_object();
    plan.push_back({&d, std::string(o["action"].as_string()), json::serialize(o["changes"])});
  }
  if (problems) return c.error(exit_refused, std::to_string(problems) + " invalid job(s); nothing changed");
  std::vector<std::string> prune;
  if (c.has("--prune")) {
    std::optional<std::string> cursor;
    for (;;) {
      boost::urls::url page_url("/api/v1/jobs");
      page_url.params().append({"limit", "500"});
      if (cursor) page_url.params().append({"cursor", *cursor});  // a query value, encoded as one
      auto reply = c.api.call("GET", std::string(page_url.buffer()));
      if (reply.status != 200) return c.fail(reply);
      auto page = json::parse(reply.body).as_object();
      for (const auto& j : page["items"].as_array()) {
        std::string n(j.as_object().at("name").as_string());
        if (!names.count(n)) prune.push_back(n);
      }
      if (!page["next_cursor"].is_string()) break;
      cursor = std::string(page["next_cursor"].as_string());
    }
  }

  const bool dry = c.has("--dry-run");
  json::array report;
  int created = 0, updated = 0, unchanged = 0, deleted = 0;
  for (const auto& p : plan) {
    if (!dry && p.action != "unchanged") {
      auto reply = c.api.call("PUT", "/api/v1/jobs/" + path_segment(p.job->name), p.job->body);
      if (reply.status != 200 && reply.status != 201) return c.fail(reply);
    }
    (p.action == "create" ? created : p.action == "update" ? updated : unchanged)++;
    report.push_back(json::object{{"job", p.job->name}, {"action", p.action}, {"changes", json::parse(p.changes)}});
    if (!c.json_output() && p.action != "unchanged")
      c.out << (p.action == "create" ? "+ " : "~ ") << p.job->name
            << (p.action == "update" ? " (" + p.changes + ")" : std::string()) << '\n';
  }
  for (const auto& n : prune) {
    if (!dry) {
      auto reply = c.api.call("DELETE", "/api/v1/jobs/" + path_segment(n));
      if (reply.status != 200) return c.fail(reply);
    }
    ++deleted;
    report.push_back(json::object{{"job", n}, {"action", "delete"}, {"changes", json::array{}}});
    if (!c.json_output()) c.out << "- " << n << '\n';
  }
  if (c.json_output())
    c.out << json::serialize(json::object{{"dry_run", dry}, {"jobs", report}}) << '\n';
  else
    c.out << (dry ? "dry run: would create " : "created ") << created << ", " << (dry ? "update " : "updated ")
          << updated << ", " << (dry ? "delete " : "deleted ") << deleted << ", unchanged " << unchanged << '\n';
  return exit_ok;
}

}  // namespace baton::ctl
