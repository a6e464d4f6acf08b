// `baton ctl apply`: job files are the declared state; the API is asked to
// make the database match. Every job and webhook is first checked by a dry
// run, so a set of files with one bad entry changes nothing at all.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <boost/json.hpp>
#include <boost/url/url.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

/// What a file declares: a job (the `jobs:` list) or a webhook (the
/// `webhooks:` list, docs/webhooks.md).
struct Kind {
  const char* list;   ///< "jobs"
  const char* one;    ///< "job"
  const char* route;  ///< "/api/v1/jobs/"
};
const Kind job_kind{"jobs", "job", "/api/v1/jobs/"};
const Kind webhook_kind{"webhooks", "webhook", "/api/v1/webhooks/"};

struct Declared {
  const Kind* kind;
  std::string where;  ///< "FILE: jobs[i]"
  std::string name;
  std::string body;  ///< the entry as JSON
};

/// A webhook's secret read where its entry says (secret_file, relative to
/// the YAML file, or secret_env) into `secret`; false with the problem
/// written to `err` when it cannot be.
bool read_secret(json::object& o, const std::string& file, const std::string& where, std::ostream& err) {
  const bool from_file = o.contains("secret_file"), from_env = o.contains("secret_env");
  if (int(from_file) + int(from_env) + int(o.contains("secret")) > 1) {
    err << where << ".secret: give one of secret, secret_file and secret_env\n";
    return false;
  }
  std::string secret;
  if (from_file) {
    std::filesystem::path path(std::string(o["secret_file"].as_string()));
    if (path.is_relative()) path = std::filesystem::path(file).parent_path() / path;
    std::ifstream in(path);
    if (!in) {
      err << where << ".secret_file: cannot read " << path.string() << '\n';
      return false;
    }
    std::getline(in, secret);  // the first line, without its newline
    o.erase("secret_file");
  } else if (from_env) {
    const std::string name(o["secret_env"].as_string());
    const char* v = std::getenv(name.c_str());
    if (!v || !*v) {
      err << where << ".secret_env: the environment variable " << name << " is not set\n";
      return false;
    }
    secret = v;
    o.erase("secret_env");
  } else {
    return true;  // inline, or none (an update keeps the stored one)
  }
  o["secret"] = secret;
  return true;
}

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
  std::set<std::string> names[2];
  bool webhooks_declared = false;  ///< some file has a `webhooks:` list: --prune covers webhooks too
  int problems = 0;
  for (const auto& f : files) {
    try {
      YAML::Node root = YAML::LoadFile(f);
      if (!root.IsMap() || (!root["jobs"] && !root["webhooks"])) {
        c.err << f << ": must hold a `jobs:` list of job definitions, a `webhooks:` list of webhooks, or both\n";
        ++problems;
        continue;
      }
      for (const Kind* kind : {&job_kind, &webhook_kind}) {
        YAML::Node list = root[kind->list];
        if (!list) continue;
        if (!list.IsSequence()) {
          c.err << f << ": " << kind->list << ": must be a list\n";
          ++problems;
          continue;
        }
        if (kind == &webhook_kind) webhooks_declared = true;
        for (std::size_t i = 0; i < list.size(); ++i) {
          const std::string where = f + ": " + kind->list + "[" + std::to_string(i) + "]";
          auto name = list[i]["name"];
          if (!list[i].IsMap() || !name || !name.IsScalar()) {
            c.err << where << ".name: is required\n";
            ++problems;
            continue;
          }
          if (!names[kind == &webhook_kind].insert(name.as<std::string>()).second) {
            c.err << where << ".name: " << kind->one << " '" << name.as<std::string>() << "' is defined twice\n";
            ++problems;
            continue;
          }
          json::value entry = to_json(list[i]);
          if (kind == &webhook_kind && !read_secret(entry.as_object(), f, where, c.err)) {
            ++problems;
            continue;
          }
          declared.push_back({kind, where, name.as<std::string>(), json::serialize(entry)});
        }
      }
    } catch (const YAML::Exception& e) {
      c.err << f << ": " << e.what() << '\n';
      ++problems;
    }
  }
  if (problems)
    return c.error(exit_refused, std::to_string(problems) + " problem(s) in the job files; nothing changed");

  // Every entry checked first (the server's dry run): all valid, or no change.
  struct Plan {
    const Declared* job;
    std::string action;
    std::string changes;
  };
  std::vector<Plan> plan;
  for (const auto& d : declared) {
    auto reply = c.api.call("PUT", d.kind->route + path_segment(d.name) + "?dry_run=true", d.body);
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
  if (problems) return c.error(exit_refused, std::to_string(problems) + " invalid entries; nothing changed");
  std::vector<std::pair<const Kind*, std::string>> prune;
  for (const Kind* kind : {&job_kind, &webhook_kind}) {
    if (!c.has("--prune") || (kind == &webhook_kind && !webhooks_declared)) continue;
    std::optional<std::string> cursor;
    for (;;) {
      boost::urls::url page_url(std::string("/api/v1/") + kind->list);
      page_url.params().append({"limit", "500"});
      if (cursor) page_url.params().append({"cursor", *cursor});  // a query value, encoded as one
      auto reply = c.api.call("GET", std::string(page_url.buffer()));
      if (reply.status != 200) return c.fail(reply);
      auto page = json::parse(reply.body).as_object();
      for (const auto& j : page["items"].as_array()) {
        std::string n(j.as_object().at("name").as_string());
        if (!names[kind == &webhook_kind].count(n)) prune.emplace_back(kind, n);
      }
      if (!page["next_cursor"].is_string()) break;
      cursor = std::string(page["next_cursor"].as_string());
    }
  }

  const bool dry = c.has("--dry-run");
  json::array report[2];
  int created = 0, updated = 0, unchanged = 0, deleted = 0;
  // A webhook is shown as "webhook NAME", a job by its name alone (as before).
  const auto shown = [](const Kind* k, const std::string& n) { return k == &job_kind ? n : "webhook " + n; };
  for (const auto& p : plan) {
    const Kind* kind = p.job->kind;
    if (!dry && p.action != "unchanged") {
      auto reply = c.api.call("PUT", kind->route + path_segment(p.job->name), p.job->body);
      if (reply.status != 200 && reply.status != 201) return c.fail(reply);
    }
    (p.action == "create" ? created : p.action == "update" ? updated : unchanged)++;
    report[kind == &webhook_kind].push_back(
        json::object{{kind->one, p.job->name}, {"action", p.action}, {"changes", json::parse(p.changes)}});
    if (!c.json_output() && p.action != "unchanged")
      c.out << (p.action == "create" ? "+ " : "~ ") << shown(kind, p.job->name)
            << (p.action == "update" ? " (" + p.changes + ")" : std::string()) << '\n';
  }
  for (const auto& [kind, n] : prune) {
    if (!dry) {
      auto reply = c.api.call("DELETE", kind->route + path_segment(n));
      if (reply.status != 200) return c.fail(reply);
    }
    ++deleted;
    report[kind == &webhook_kind].push_back(
        json::object{{kind->one, n}, {"action", "delete"}, {"changes", json::array{}}});
    if (!c.json_output()) c.out << "- " << shown(kind, n) << '\n';
  }
  if (c.json_output()) {
    json::object o{{"dry_run", dry}, {"jobs", report[0]}};
    if (webhooks_declared) o["webhooks"] = report[1];
    c.out << json::serialize(o) << '\n';
  } else {
    c.out << (dry ? "dry run: would create " : "created ") << created << ", " << (dry ? "update " : "updated ")
          << updated << ", " << (dry ? "delete " : "deleted ") << deleted << ", unchanged " << unchanged << '\n';
  }
  return exit_ok;
}

}  // namespace baton::ctl
