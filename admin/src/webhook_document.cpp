#include "baton/admin/webhook_document.h"

#include <algorithm>
#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <set>

#include "admin_http.h"
#include "baton/admin/api_auth.h"
#include "baton/base/json_text.h"

namespace baton::admin {

namespace json = boost::json;

namespace {

/// An integer given as a JSON integer or as its text.
std::optional<std::int64_t> integer_of(const json::value& v) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64() && v.as_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
    return static_cast<std::int64_t>(v.as_uint64());
  if (!v.is_string() || v.as_string().empty() || v.as_string().size() > 18) return std::nullopt;
  std::int64_t out = 0;
  for (char ch : v.as_string()) {
    if (ch < '0' || ch > '9') return std::nullopt;
    out = out * 10 + (ch - '0');
  }
  return out;
}

std::optional<bool> boolean_of(const json::value& v) {
  if (v.is_bool()) return v.as_bool();
  if (v.is_string() && v.as_string() == "true") return true;
  if (v.is_string() && v.as_string() == "false") return false;
  return std::nullopt;
}

/// Why `url` cannot be a webhook's, or nullopt.
std::optional<std::string> url_problem(const std::string& url) {
  if (url.size() > 2000) return "must be at most 2000 characters";
  auto u = boost::urls::parse_uri(url);
  if (!u) return "is not a URL";
  if (u->scheme() != "https") return "must be https:// (deliveries are signed, and sent over TLS only)";
  if (u->host_address().empty()) return "names no host";
  if (u->has_userinfo()) return "must not hold a user or password (the signature authenticates a delivery)";
  if (u->has_fragment()) return "must not have a #fragment";
  return std::nullopt;
}

}  // namespace

Result<store::WebhookDefinition> parse_webhook_document(const json::object& doc, const std::string& name) {
  store::WebhookDefinition w;
  w.name = name;
  std::vector<std::string> problems;
  const auto problem = [&](const std::string& key, const std::string& what) {
    problems.push_back("body: " + key + ": " + what);
  };
  static const std::set<std::string> known{"name",         "url",     "events", "jobs", "failures_in_a_row",
                                           "max_attempts", "enabled", "secret", "kind"};
  for (const auto& kv : doc)
    if (!known.count(std::string(kv.key())))
      problem(std::string(kv.key()),
              "is not a key of a webhook (url, events, jobs, failures_in_a_row, "
              "max_attempts, enabled, secret)");
  if (auto* n = doc.if_contains("name"); n && (!n->is_string() || n->as_string() != name))
    problem("name", "must be the name in the path, " + json_quote(name));
  if (auto* k = doc.if_contains("kind"); k && (!k->is_string() || k->as_string() != "webhook"))
    problem("kind", "must be \"webhook\" when given");

  if (auto* u = doc.if_contains("url"); !u || !u->is_string())
    problem("url", "is required: https://HOST[:PORT]/PATH");
  else if (auto why = url_problem(std::string(u->as_string())))
    problem("url", *why + ", got " + json_quote(std::string(u->as_string()).substr(0, 100)));
  else
    w.url = std::string(u->as_string());

  const auto& kinds = store::webhook_event_kinds();
  std::string kinds_text;
  for (const auto& k : kinds) kinds_text += (kinds_text.empty() ? "" : ", ") + k;
  if (auto* e = doc.if_contains("events"); !e || !e->is_array() || e->as_array().empty()) {
    problem("events", "is required: a list of one or more of " + kinds_text);
  } else {
    for (const auto& v : e->as_array()) {
      const std::string k = v.is_string() ? std::string(v.as_string()) : json::serialize(v);
      if (!v.is_string() || std::find(kinds.begin(), kinds.end(), k) == kinds.end())
        problem("events", json_quote(k.substr(0, 64)) + " is not an event (" + kinds_text + ")");
      else if (std::find(w.events.begin(), w.events.end(), k) != w.events.end())
        problem("events", json_quote(k) + " is listed twice");
      else
        w.events.push_back(k);
    }
  }
  if (auto* j = doc.if_contains("jobs"); j && !j->is_null()) {
    if (!j->is_array()) {
      problem("jobs", "must be a list of job names (leave it out for every job)");
    } else {
      for (const auto& v : j->as_array()) {
        if (!v.is_string() || !admin_http::valid_name(std::string(v.as_string())))
          problem("jobs", json_quote(json::serialize(v).substr(0, 64)) + " is not a job name");
        else
          w.jobs.emplace_back(v.as_string());
      }
      if (w.jobs.size() > 1000) problem("jobs", "lists more than 1000 jobs");
    }
  }
  if (auto* v = doc.if_contains("failures_in_a_row")) {
    auto n = integer_of(*v);
    if (!n || *n < 2 || *n > 1000)
      problem("failures_in_a_row", "must be a whole number from 2 to 1000");
    else
      w.failures_in_a_row = static_cast<int>(*n);
  }
  if (auto* v = doc.if_contains("max_attempts")) {
    auto n = integer_of(*v);
    if (!n || *n < 1 || *n > 100)
      problem("max_attempts", "must be a whole number from 1 to 100");
    else
      w.max_attempts = static_cast<int>(*n);
  }
  if (auto* v = doc.if_contains("enabled")) {
    auto b = boolean_of(*v);
    if (!b)
      problem("enabled", "must be true or false");
    else
      w.enabled = *b;
  }
  if (auto* s = doc.if_contains("secret"); s && !s->is_null()) {
    if (!s->is_string() || s->as_string().size() < 16 || s->as_string().size() > 1000)
      problem("secret", "must be text of 16 to 1000 characters (the HMAC key of the signature)");
    else
      w.secret = std::string(s->as_string());
  }
  if (!problems.empty()) {
    std::string message;
    for (const auto& p : problems) message += (message.empty() ? "" : "\n") + p;
    return make_error(Errc::bad_input, message);
  }
  return w;
}

std::vector<std::string> webhook_changes(const store::StoredWebhook& stored, const store::WebhookDefinition& w) {
  const auto& s = stored.definition;
  std::vector<std::string> out;
  if (s.url != w.url) out.push_back("url");
  if (s.events != w.events) out.push_back("events");
  if (s.jobs != w.jobs) out.push_back("jobs");
  if (s.failures_in_a_row != w.failures_in_a_row) out.push_back("failures_in_a_row");
  if (s.max_attempts != w.max_attempts) out.push_back("max_attempts");
  if (s.enabled != w.enabled) out.push_back("enabled");
  if (!w.secret.empty() && sha256_hex(w.secret) != stored.secret_sha256) out.push_back("secret");
  return out;
}

}  // namespace baton::admin
