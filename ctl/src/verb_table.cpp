// `baton ctl`'s verb table: every verb with its words, arguments, flags and
// help, and how it calls the API and prints its answer, one verb per admin
// API operation. Here: what the families share (verb_kit.h) and verbs(),
// which puts them together; the families are verbs_*.cpp, `apply` is in
// apply.cpp, the invocation in ctl.cpp.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <boost/url/url.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "baton/ctl/api_client.h"
#include "baton/ctl/ctl.h"
#include "ctl_verbs.h"
#include "render.h"
#include "verb_kit.h"

namespace baton::ctl {

namespace json = boost::json;

std::string joined(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

std::optional<std::chrono::milliseconds> parse_duration(const std::string& s) {
  std::size_t used = 0;
  long long n = 0;
  try {
    n = std::stoll(s, &used);
  } catch (...) {
    return std::nullopt;
  }
  const std::string unit = s.substr(used);
  if (n <= 0) return std::nullopt;
  if (unit == "ms") return std::chrono::milliseconds(n);
  if (unit == "s" || unit.empty()) return std::chrono::seconds(n);
  if (unit == "m") return std::chrono::minutes(n);
  if (unit == "h") return std::chrono::hours(n);
  return std::nullopt;
}

namespace kit {

const std::vector<Flag> list_flags{{"--limit", true, "at most N items (1-500, default 50)"},
                                   {"--cursor", true, "start after this cursor (from a previous page)"},
                                   {"--all", false, "follow the cursor to the last page"}};

std::vector<Flag> with_list(std::vector<Flag> f) {
  f.insert(f.end(), list_flags.begin(), list_flags.end());
  return f;
}

/// GET a list, page by page when --all; prints a table or, with -o json,
/// {"items": [...], "next_cursor": ...}.
int list(Call& c, const std::string& path, std::vector<std::pair<std::string, std::string>> query,
         const std::vector<Column>& columns) {
  boost::urls::url u(path);
  for (const auto& [k, v] : query) u.params().append({k, v});
  if (auto l = c.flag("--limit")) u.params().append({"limit", *l});
  std::optional<std::string> cursor = c.flag("--cursor");
  json::array items;
  json::value next = nullptr;
  for (;;) {
    boost::urls::url page = u;
    if (cursor) page.params().set("cursor", *cursor);
    auto reply = c.api.call("GET", std::string(page.buffer()));
    if (reply.status != 200) return c.fail(reply);
    auto body = json::parse(reply.body).as_object();
    for (auto& v : body["items"].as_array()) items.push_back(v);
    next = body["next_cursor"];
    if (!c.has("--all") || !next.is_string()) break;
    cursor = std::string(next.as_string());
  }
  if (c.json_output())
    c.out << json::serialize(json::object{{"items", items}, {"next_cursor", next}}) << '\n';
  else {
    print_table(c.out, columns, items);
    if (next.is_string()) c.err << "(more: --cursor " << std::string(next.as_string()) << ", or --all)\n";
  }
  return exit_ok;
}

/// A call whose answer is printed as-is (-o json) or as key: value lines.
int simple(Call& c, const std::string& method, const std::string& path, const std::string& body) {
  auto reply = c.api.call(method, path, body);
  if (reply.status < 200 || reply.status >= 300) return c.fail(reply);
  if (c.json_output()) {
    c.out << reply.body << '\n';
  } else {
    auto v = json::parse(reply.body);
    if (v.is_object())
      print_object(c.out, v.as_object());
    else
      c.out << reply.body << '\n';
  }
  return exit_ok;
}

int print_secret(Call& c, const ApiReply& reply, const std::function<std::string(const json::object&)>& said) {
  if (reply.status != 201) return c.fail(reply);
  auto o = json::parse(reply.body).as_object();
  if (c.json_output())
    c.out << reply.body << '\n';
  else
    c.out << std::string(o["token"].as_string()) << '\n';
  c.err << said(o) << '\n';
  return exit_ok;
}

int print_bootstrap(Call& c, const ApiReply& reply) {
  return print_secret(c, reply, [](const json::object& o) {
    return "bootstrap token for worker '" + field(o, "worker_id") + "' (capacity " + field(o, "capacity") +
           ", labels " + json::serialize(o.at("labels")) + "), expires " + field(o, "expires_at") +
           ": put it in the worker's enrollment_token_file; it is not shown again";
  });
}

bool terminal(const std::string& state) {
  return state == "SUCCEEDED" || state == "FAILED" || state == "TIMED_OUT" || state == "CANCELED";
}

/// --ttl as the body's ttl_seconds; false when it is not a duration.
bool put_ttl(Call& c, json::object& body) {
  auto t = c.flag("--ttl");
  if (!t) return true;
  auto d = parse_duration(*t);
  if (!d) return false;
  body["ttl_seconds"] = std::chrono::duration_cast<std::chrono::seconds>(*d).count();
  return true;
}

/// The whole of one stream from the node's log archive, a page at a time.
int archived_output(Call& c) {
  std::string query = "?stream=" + c.flag("--stream").value_or("stdout");
  if (auto a = c.flag("--attempt")) query += "&attempt=" + path_segment(*a);
  std::int64_t offset = 0;
  for (int page = 0; page < 1000000; ++page) {
    auto reply = c.api.call(
        "GET", "/api/v1/runs/" + path_segment(c.args.at(0)) + "/output" + query + "&offset=" + std::to_string(offset));
    if (reply.status != 200) return c.fail(reply);
    auto o = json::parse(reply.body).as_object();
    if (c.json_output())
      c.out << json::serialize(o) << '\n';
    else
      c.out << std::string_view(o.at("data").as_string());
    const std::int64_t next = o.at("next_offset").to_number<std::int64_t>();
    if (o.at("complete").as_bool() || next <= offset) break;
    offset = next;
  }
  c.out.flush();
  return exit_ok;
}

int logs(Call& c) {
  if (c.has("--archive")) {
    if (c.has("--follow")) return c.usage("--archive prints what the archive holds; it does not follow (-f)");
    return archived_output(c);
  }
  if (c.flag("--attempt") || c.flag("--stream")) return c.usage("--attempt and --stream go with --archive");
  const std::string path = "/api/v1/runs/" + path_segment(c.args.at(0));
  const bool follow = c.has("--follow");
  auto interval = parse_duration(c.flag("--interval").value_or("1s"));
  if (!interval) return c.usage("--interval must be a duration like 500ms, 2s or 1m");
  std::size_t shown = 0;
  bool at_line_start = true;
  for (;;) {
    auto reply = c.api.call("GET", path);
    if (reply.status != 200) return c.fail(reply);
    auto run = json::parse(reply.body).as_object();
    auto& chunks = run["logs"].as_array();
    for (; shown < chunks.size(); ++shown) {
      const auto& o = chunks[shown].as_object();
      const std::string chunk(o.at("chunk").as_string());
      if (c.json_output()) {
        c.out << json::serialize(o) << '\n';
        continue;
      }
      // Streamed output comes in pieces cut anywhere: printed as it is. A
      // finish's tail (no offset) from a worker that does not stream is
      // a whole, ended by a newline.
      const auto* start = o.if_contains("start_offset");
      const bool streamed = start && !start->is_null();
      // On a terminal, escape sequences a task printed (which could move
      // the cursor, retitle the window or rewrite what is on screen) are
      // shown as text, not obeyed.
      c.out << (c.terminal ? terminal_safe(chunk) : chunk);
      if (!streamed && !chunk.empty() && chunk.back() != '\n') c.out << '\n';
      at_line_start = chunk.empty() ? at_line_start : chunk.back() == '\n';
    }
    c.out.flush();
    const std::string state(run["state"].as_string());
    if (!follow || terminal(state)) {
      if (!at_line_start && !c.json_output()) c.out << '\n';
      c.out.flush();
    }
    if (!follow) return exit_ok;
    if (terminal(state)) {
      c.err << "run " << c.args.at(0) << " ended " << state << '\n';
      return state == "SUCCEEDED" ? exit_ok : exit_refused;
    }
    std::this_thread::sleep_for(*interval);
  }
}

int watch(Call& c) {
  auto interval = parse_duration(c.flag("--interval").value_or("2s"));
  if (!interval) return c.usage("--interval must be a duration like 500ms, 2s or 1m");
  int count = 0;
  if (auto n = c.flag("--count")) {
    try {
      count = std::stoi(*n);
    } catch (...) {
      count = -1;
    }
    if (count <= 0) return c.usage("--count must be a positive number");
  }
  for (int i = 0; count == 0 || i < count; ++i) {
    if (i > 0) std::this_thread::sleep_for(*interval);
    c.out << "--- "
          << iso_utc(
                 std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                     .count())
          << '\n';
    if (int rc = runs_list(c); rc != exit_ok) return rc;
    c.out.flush();
  }
  return exit_ok;
}

}  // namespace kit

std::vector<Verb> verbs() {
  // In the order `--help` lists them; each family in its own file.
  std::vector<Verb> all;
  for (auto family : {kit::run_verbs, kit::job_verbs, kit::worker_verbs, kit::dead_letter_verbs, kit::cluster_verbs,
                      kit::event_verbs, kit::admin_verbs}) {
    auto part = family();
    all.insert(all.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return all;
}

std::vector<std::string> verb_names() {
  std::vector<std::string> out;
  for (const auto& v : verbs())
    if (v.words[0].rfind("__", 0) != 0) out.push_back(joined(v.words));  // __complete is the scripts
  return out;
}

std::optional<std::int64_t> time_filter(const std::string& v, std::int64_t now_unix) {
  if (v.empty()) return std::nullopt;
  if (std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) && v.size() <= 12)
    return std::stoll(v);  // unix seconds
  // A duration back from now: 90s, 15m, 2h, 7d.
  if (v.back() == 'd' && v.size() > 1 &&
      std::all_of(v.begin(), v.end() - 1, [](char ch) { return ch >= '0' && ch <= '9'; }) && v.size() <= 6)
    return now_unix - std::stoll(v.substr(0, v.size() - 1)) * 86400;
  if (auto d = parse_duration(v)) return now_unix - std::chrono::duration_cast<std::chrono::seconds>(*d).count();
  // RFC 3339: 2026-11-29T03:00:00Z, with fractions and an offset allowed.
  int y, mo, da, h, mi, s, n = 0;
  if (std::sscanf(v.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &da, &h, &mi, &s, &n) != 6 || n != 19)
    return std::nullopt;
  std::size_t at = 19;
  if (at < v.size() && v[at] == '.')
    for (++at; at < v.size() && v[at] >= '0' && v[at] <= '9';) ++at;
  std::int64_t offset = 0;
  if (at < v.size() && (v[at] == 'Z' || v[at] == 'z')) {
    ++at;
  } else if (at + 6 == v.size() && (v[at] == '+' || v[at] == '-') && v[at + 3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(v.c_str() + at + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
    offset = (v[at] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    at += 6;
  } else {
    return std::nullopt;  // a time without its zone is ambiguous
  }
  if (at != v.size() || mo < 1 || mo > 12 || da < 1 || da > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  const auto day = std::chrono::sys_days(std::chrono::year(y) / mo / da);
  return day.time_since_epoch().count() * 86400LL + h * 3600 + mi * 60 + s - offset;
}

std::optional<int> run_filters(Call& c, std::vector<std::pair<std::string, std::string>>& q) {
  for (auto [flag, param] : std::vector<std::pair<std::string, std::string>>{{"--job", "job"},
                                                                             {"--state", "state"},
                                                                             {"--worker", "worker"},
                                                                             {"--key", "idempotency_key"},
                                                                             {"--error", "error"}})
    if (auto v = c.flag(flag)) q.emplace_back(param, *v);
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  for (auto [flag, param] :
       std::vector<std::pair<std::string, std::string>>{{"--since", "created_after"}, {"--until", "created_before"}}) {
    auto v = c.flag(flag);
    if (!v) continue;
    auto t = time_filter(*v, now);
    if (!t)
      return c.usage(flag +
                     " must be unix seconds, a duration back from now (90s, 15m, 2h, 7d) or an RFC 3339 time "
                     "(2026-11-29T03:00:00Z), got '" +
                     *v + "'");
    q.emplace_back(param, std::to_string(*t));
  }
  return std::nullopt;
}

/// `incident export`: the node's journal for the window into a file (or
/// stdout), ready for `baton-sim --replay`.
int incident_export(Call& c) {
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::int64_t window[2] = {now - 900, now};
  const char* flags[2] = {"--from", "--to"};
  for (int i = 0; i < 2; ++i) {
    auto v = c.flag(flags[i]);
    if (!v) continue;
    auto t = time_filter(*v, now);
    if (!t)
      return c.usage(std::string(flags[i]) +
                     " must be unix seconds, a duration back from now (90s, 15m, 2h) or an RFC 3339 time "
                     "(2026-11-29T03:00:00Z), got '" +
                     *v + "'");
    window[i] = *t;
  }
  if (window[0] > window[1]) return c.usage("--from is after --to");
  auto reply =
      c.api.call("GET", "/api/v1/incident?from=" + std::to_string(window[0]) + "&to=" + std::to_string(window[1]));
  if (reply.status != 200) return c.fail(reply);
  auto body = json::parse(reply.body).as_object();
  const std::string journal(body["journal"].as_string());
  const auto file = c.flag("--file");
  if (file) {
    // 0600: a journal holds task output and run parameters (security
    // review N-L3); never written through a link.
    const int fd = ::open(file->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool written = fd >= 0;
    for (std::size_t at = 0; written && at < journal.size();) {
      const ssize_t n = ::write(fd, journal.data() + at, journal.size() - at);
      written = n > 0;
      at += written ? static_cast<std::size_t>(n) : 0;
    }
    if (fd >= 0 && ::close(fd) != 0) written = false;
    if (!written) return c.error(exit_refused, "cannot write " + *file);
  } else {
    c.out << journal;
  }
  c.err << "node " << field(body, "node") << ": " << field(body, "books") << " book(s), " << field(body, "lines")
        << " lines, " << journal.size() << " bytes" << (file ? " in " + *file : std::string())
        << "; replay: baton-sim --replay " << (file ? *file : std::string("FILE")) << "\n";
  return exit_ok;
}

int runs_list(Call& c) {
  std::vector<std::pair<std::string, std::string>> q;
  if (auto bad = run_filters(c, q)) return *bad;
  const int rc = kit::list(c, "/api/v1/runs", q, run_columns());
  // Under the table, every run by state (the node's counts, a few seconds
  // old at most), on stderr as the paging hint is: stdout stays the table.
  if (rc != exit_ok || c.json_output()) return rc;
  auto status = c.api.call("GET", "/status");
  if (status.status != 200) return rc;
  boost::system::error_code ec;
  auto v = json::parse(status.body, ec);
  const auto* counts = !ec && v.is_object() ? v.as_object().if_contains("runs_by_state") : nullptr;
  if (!counts || !counts->is_object()) return rc;
  std::string line;
  for (const auto& kv : counts->as_object())
    if (kv.value().is_int64() && kv.value().as_int64() > 0)
      line += (line.empty() ? "" : ", ") + terminal_safe(kv.key()) + " " + std::to_string(kv.value().as_int64());
  c.err << "all runs by state: " << (line.empty() ? "none" : line) << '\n';
  return rc;
}

std::optional<std::string> Call::flag(const std::string& name) const {
  auto it = flags.find(name);
  if (it == flags.end()) return std::nullopt;
  return it->second;
}

}  // namespace baton::ctl
