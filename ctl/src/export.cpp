// `baton ctl jobs export [JOB...]`: the jobs as a job file, each entry as
// GET /api/v1/jobs/{name}/document writes it, so that `baton ctl apply -f`
// of the output changes nothing (docs/ctl.md, "Jobs are data").
#include <boost/json.hpp>
#include <ostream>

#include "baton/ctl/ctl.h"
#include "ctl_verbs.h"
#include "render.h"

namespace baton::ctl {

namespace json = boost::json;

int jobs_export(Call& c) {
  std::vector<std::string> names = c.args;
  if (names.empty()) {
    // Every job, page by page.
    std::string cursor;
    do {
      auto page = c.api.call("GET", "/api/v1/jobs?limit=500" + (cursor.empty() ? "" : "&cursor=" + cursor));
      if (page.status != 200) return c.fail(page);
      const auto body = json::parse(page.body).as_object();
      for (const auto& j : body.at("items").as_array()) names.emplace_back(j.at("name").as_string());
      const auto& next = body.at("next_cursor");
      cursor = next.is_string() ? path_segment(std::string(next.as_string())) : "";
    } while (!cursor.empty());
  }
  json::array jobs;
  for (const auto& name : names) {
    auto reply = c.api.call("GET", "/api/v1/jobs/" + path_segment(name) + "/document");
    if (reply.status != 200) return c.fail(reply);
    jobs.push_back(json::parse(reply.body));
  }
  const std::string doc = json::serialize(json::object{{"jobs", std::move(jobs)}});
  if (c.json_output()) {
    c.out << doc << '\n';
    return exit_ok;
  }
  c.out << "# " << names.size() << " job(s) exported from " << c.api.addr() << " by `baton ctl jobs export`;\n"
        << "# `baton ctl apply -f` of this file changes nothing (docs/ctl.md).\n";
  print_as(c.out, doc, "yaml");
  return exit_ok;
}

}  // namespace baton::ctl
