// `baton ctl runs cancel|rerun` by filter (docs/ctl.md): every run the
// filters of `runs list` match, listed with --dry-run, acted on with --yes,
// one call per run (each audited as its own cancel or re-run). A run the
// API refuses (one already finished, for a cancel) is reported and the
// rest go on.
#include <boost/json.hpp>
#include <boost/url.hpp>
#include <ostream>

#include "baton/ctl/ctl.h"
#include "ctl_verbs.h"

namespace baton::ctl {

namespace json = boost::json;

namespace {

/// More than this many matches is refused: narrow the filter.
constexpr std::size_t bulk_runs_max = 10000;

}  // namespace

int runs_bulk(Call& c, const std::string& verb) {
  std::vector<std::pair<std::string, std::string>> q;
  if (auto bad = run_filters(c, q)) return *bad;
  if (q.empty())
    return c.usage("give RUN, or filters (--job, --state, --worker, --key, --error, --since, --until) to " + verb +
                   " every run they match");
  boost::urls::url u("/api/v1/runs");
  for (const auto& [k, v] : q) u.params().append({k, v});
  u.params().append({"limit", "500"});
  std::vector<std::int64_t> ids;
  std::optional<std::string> cursor;
  for (;;) {
    boost::urls::url page = u;
    if (cursor) page.params().set("cursor", *cursor);
    auto reply = c.api.call("GET", std::string(page.buffer()));
    if (reply.status != 200) return c.fail(reply);
    const auto body = json::parse(reply.body).as_object();
    for (const auto& r : body.at("items").as_array()) ids.push_back(r.at("id").as_int64());
    if (ids.size() > bulk_runs_max)
      return c.error(exit_refused, "more than " + std::to_string(bulk_runs_max) + " runs match: narrow the filter");
    const auto& next = body.at("next_cursor");
    if (!next.is_string()) break;
    cursor = std::string(next.as_string());
  }
  auto id_list = [&] {
    std::string s;
    for (auto id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
    return s;
  };
  if (c.has("--dry-run") || !c.has("--yes")) {
    if (c.json_output()) {
      json::array a;
      for (auto id : ids) a.push_back(id);
      c.out << json::serialize(json::object{{"verb", verb}, {"dry_run", true}, {"runs", a}}) << '\n';
    } else {
      c.out << ids.size() << " run(s) match" << (ids.empty() ? "" : ": " + id_list()) << '\n';
    }
    if (!c.has("--dry-run") && !ids.empty())
      return c.usage(std::to_string(ids.size()) + " run(s) match: add --yes to " + verb + " them");
    return exit_ok;
  }
  json::array done, refused;
  for (auto id : ids) {
    auto reply = c.api.call("POST", "/api/v1/runs/" + std::to_string(id) + "/" + verb);
    if (reply.status >= 200 && reply.status < 300) {
      done.push_back(id);
      continue;
    }
    std::string why = "http " + std::to_string(reply.status);
    boost::system::error_code ec;
    auto v = json::parse(reply.body, ec);
    if (!ec && v.is_object() && v.as_object().contains("message")) why = std::string(v.at("message").as_string());
    if (reply.status == 0) why = reply.error;
    refused.push_back(json::object{{"run_id", id}, {"why", why}});
    if (!c.json_output()) c.err << "run " << id << ": not done: " << why << '\n';
  }
  if (c.json_output())
    c.out << json::serialize(json::object{{"verb", verb}, {"done", done}, {"refused", refused}}) << '\n';
  else
    c.out << verb << ": " << done.size() << " done, " << refused.size() << " not done, of " << ids.size()
          << " matched\n";
  return refused.empty() ? exit_ok : exit_refused;
}

}  // namespace baton::ctl
