// The admin API's pure parts (admin_http.h): answers as JSON, the request
// target's path and query, paging, the body. No I/O and no state, so the
// route and query parsing is fuzzed on its own (fuzz/http_route_fuzz.cpp).
#include "admin_http.h"

#include <algorithm>
#include <boost/url/parse.hpp>
#include <cctype>
#include <charconv>

#include "baton/base/json_text.h"

namespace baton::admin {

namespace admin_http {

HttpResponse error(int status, const std::string& code, const std::string& message) {
  return {status, "application/json", json::serialize(json::object{{"code", code}, {"message", message}}), {}};
}

HttpResponse ok_json(const json::value& v, int status) { return {status, "application/json", json::serialize(v), {}}; }

HttpResponse db_error(const Error& e) {
  if (e.code == Errc::bad_input) return error(400, "bad_request", e.message);
  if (e.code == Errc::db_unavailable && e.message.starts_with(reads_busy_prefix)) {
    auto r = error(503, "reads_busy", e.message.substr(reads_busy_prefix.size()));
    r.headers["Retry-After"] = "1";
    return r;
  }
  return error(503, "db_unavailable", e.message);
}

HttpResponse refused(const store::AdminResult& r) {
  switch (r.outcome) {
    case store::AdminOutcome::not_found: return error(404, "not_found", r.message);
    case store::AdminOutcome::fenced: return error(503, "not_leader", r.message);
    case store::AdminOutcome::conflict: {
      boost::system::error_code ec;
      auto current = json::parse(r.json, ec);
      return ok_json(json::object{{"code", "conflict"}, {"message", r.message}, {"current", ec ? nullptr : current}},
                     409);
    }
    case store::AdminOutcome::applied: break;
  }
  return ok_json(json::parse(r.json));
}

std::optional<std::int64_t> parse_id(std::string_view s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > 200) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

std::optional<std::string> query_of(const std::string& target, const std::vector<std::string>& allowed,
                                    std::map<std::string, std::string>& out) {
  auto u = boost::urls::parse_origin_form(target);
  if (!u) return "the request target is not a valid URL: " + u.error().message();
  for (auto p : u->params()) {
    const std::string key = p.key;
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
      return "unknown query parameter " + json_quote(key.substr(0, 64)) +
             " (this route takes: " + (names.empty() ? "none" : names) + ")";
    }
    if (!out.emplace(key, std::string(p.value)).second) return "query parameter '" + key + "' given twice";
  }
  return std::nullopt;
}

std::optional<std::string> int_param(const std::map<std::string, std::string>& q, const std::string& name,
                                     std::int64_t lo, std::int64_t hi, std::optional<std::int64_t>& out) {
  auto it = q.find(name);
  if (it == q.end()) return std::nullopt;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  if (ec != std::errc{} || p != it->second.data() + it->second.size() || v < lo || v > hi)
    return "query parameter '" + name + "' must be an integer from " + std::to_string(lo) + " to " +
           std::to_string(hi) + ", got " + json_quote(it->second.substr(0, 64));
  out = v;
  return std::nullopt;
}

std::optional<std::string> text_param(const std::map<std::string, std::string>& q, const std::string& name) {
  auto it = q.find(name);
  if (it == q.end()) return std::nullopt;
  return it->second;
}

constexpr std::int64_t page_max = 500;

std::optional<std::string> paging_of(const std::map<std::string, std::string>& q, bool numeric, Paging& out) {
  std::optional<std::int64_t> limit;
  if (auto bad = int_param(q, "limit", 1, page_max, limit)) return bad;
  out.limit = static_cast<int>(limit.value_or(50));
  if (numeric) return int_param(q, "cursor", 1, INT64_MAX, out.before_id);
  out.after_name = text_param(q, "cursor");
  return std::nullopt;
}

HttpResponse page_or_error(const Result<store::Page>& page) {
  if (!page) return db_error(page.error());
  std::string body = "{\"items\":" + page->items_json + ",\"next_cursor\":" +
                     (page->next_cursor ? json::serialize(json::value(*page->next_cursor)) : std::string("null")) + "}";
  return {200, "application/json", body, {}};
}

HttpResponse one_or_404(const Result<store::Page>& page, const std::string& what) {
  if (!page) return db_error(page.error());
  auto items = json::parse(page->items_json).as_array();
  if (items.empty()) return error(404, "not_found", "no " + what);
  return ok_json(items[0]);
}

std::variant<json::object, HttpResponse> body_object(const HttpRequest& r, std::size_t max_bytes) {
  if (r.body.size() > max_bytes)
    return error(413, "payload_too_large",
                 "the request body is " + std::to_string(r.body.size()) + " bytes; at most " +
                     std::to_string(max_bytes) + " are accepted");
  if (r.body.empty()) return error(400, "bad_request", "this route needs a JSON object as its body");
  boost::system::error_code ec;
  json::parse_options opt;
  opt.max_depth = 32;
  auto v = json::parse(r.body, ec, {}, opt);
  if (ec) return error(400, "bad_json", "the body is not valid JSON: " + ec.message());
  if (!v.is_object()) return error(400, "bad_request", "the body must be a JSON object");
  return std::move(v.as_object());
}

HttpResponse to_leader(const HttpRequest& r, const std::string& scheme, const std::string& leader_endpoint) {
  if (leader_endpoint.empty()) return error(503, "no_leader", "no leader is known right now; retry in a few seconds");
  HttpResponse res = ok_json(json::object{{"code", "not_leader"},
                                          {"message", "send this to the leader at " + leader_endpoint},
                                          {"leader_endpoint", leader_endpoint}},
                             307);
  res.headers["Location"] = scheme + "://" + leader_endpoint + r.target;
  return res;
}

std::variant<std::vector<std::string>, std::string> path_segments(const std::string& target) {
  // Percent-decoded by Boost.URL ("every%2Dminute" is the job every-minute;
  // an encoded '/' stays inside its segment, and the handler's own check
  // refuses it in a name or an id).
  auto u = boost::urls::parse_origin_form(target);
  if (!u) return "the request target is not a valid URL path: " + u.error().message();
  std::vector<std::string> segments;
  for (auto seg : u->segments()) segments.push_back(std::string(seg));
  return segments;
}

std::optional<std::map<std::string, std::string>> match_pattern(std::string_view pattern,
                                                                const std::vector<std::string>& segments) {
  std::map<std::string, std::string> params;
  std::size_t i = 0, at = 1;
  while (at <= pattern.size()) {
    auto next = pattern.find('/', at);
    if (next == std::string_view::npos) next = pattern.size();
    const std::string_view part = pattern.substr(at, next - at);
    at = next + 1;
    if (i >= segments.size()) return std::nullopt;
    if (part.size() > 2 && part.front() == '{' && part.back() == '}')
      params[std::string(part.substr(1, part.size() - 2))] = segments[i];
    else if (part != segments[i])
      return std::nullopt;
    ++i;
  }
  if (i != segments.size()) return std::nullopt;
  return params;
}

}  // namespace admin_http

}  // namespace baton::admin
