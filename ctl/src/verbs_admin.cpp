// `baton ctl`'s verbs of administration: audit, version, verify, webhooks, settings, tokens,
// contexts, completion.
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

namespace baton::ctl::kit {

namespace json = boost::json;

std::vector<Verb> admin_verbs() {
  return {
      {{"audit"},
       "",
       "the audit log, newest first",
       with_list({{"--subject", true, "only this subject (job:NAME)"}}),
       0,
       0,
       [](Call& c) -> int {
         std::vector<std::pair<std::string, std::string>> q;
         if (auto s = c.flag("--subject")) q.emplace_back("subject", *s);
         return list(c, "/api/v1/audit", q, audit_columns());
       }},
      {{"version"},
       "",
       "this ctl's version and the answering node's",
       {},
       0,
       0,
       [](Call& c) -> int {
         auto reply = c.api.call("GET", "/status");
         const std::string node =
             reply.status == 200 ? field(json::parse(reply.body).as_object(), "version") : std::string("-");
         if (c.json_output()) {
           c.out << json::serialize(json::object{{"client", BATON_VERSION}, {"server", node}}) << '\n';
         } else {
           c.out << "client: baton ctl " << BATON_VERSION << "\nserver: " << node
                 << (reply.status == 200 ? " (" + reply.answered_by + ")" : "") << '\n';
         }
         return reply.status == 200 ? exit_ok : c.fail(reply);
       }},
      // the history checker in production (docs/assurance.md)
      {{"verify", "status"},
       "",
       "the history checker's sweep: runs checked, the last sweep, violations per invariant, and the violations "
       "(newest first); exit 1 while one is not acknowledged",
       {{"--open", false, "only the violations not acknowledged"},
        {"--limit", true, "violations shown (default 50, at most 1000)"}},
       0,
       0,
       [](Call& c) -> int {
         boost::urls::url u("/api/v1/verify");
         if (c.has("--open")) u.params().append({"open", "true"});
         if (auto l = c.flag("--limit")) u.params().append({"limit", *l});
         auto reply = c.api.call("GET", std::string(u.buffer()));
         if (reply.status != 200) return c.fail(reply);
         const auto o = json::parse(reply.body).as_object();
         const bool open = o.at("violations_open").to_number<std::int64_t>() > 0;
         if (c.json_output()) {
           c.out << reply.body << '\n';
           return open ? exit_refused : exit_ok;
         }
         c.out << "runs checked: " << field(o, "runs_checked") << " in " << field(o, "sweeps") << " sweeps; last sweep "
               << field(o, "swept_at") << " by " << field(o, "node_id") << " (epoch " << field(o, "epoch")
               << ")\nviolations: " << field(o, "violations_total") << " recorded, " << field(o, "violations_open")
               << " not acknowledged\n";
         for (const auto& [name, n] : o.at("by_invariant").as_object())
           c.out << "  " << std::string(name) << ": " << json::serialize(n) << '\n';
         const auto& list = o.at("violations").as_array();
         if (!list.empty()) {
           c.out << '\n';
           print_table(c.out, violation_columns(), list);
         }
         return open ? exit_refused : exit_ok;
       }},
      {{"verify", "acknowledge"},
       "ID",
       "acknowledge every violation up to ID (audited): the dashboard's banner no longer shows them",
       {},
       1,
       1,
       [](Call& c) -> int {
         std::int64_t id = 0;
         try {
           std::size_t used = 0;
           id = std::stoll(c.args[0], &used);
           if (used != c.args[0].size() || id < 1) id = 0;
         } catch (const std::exception&) {
           id = 0;
         }
         if (id == 0) return c.usage("ID must be a violation id (a positive integer), got '" + c.args[0] + "'");
         return simple(c, "POST", "/api/v1/verify/acknowledge", json::serialize(json::object{{"through_id", id}}));
       }},
      // webhooks (docs/webhooks.md; defined with `apply`)
      {{"webhooks", "list"},
       "",
       "webhooks: url, events, jobs, and their deliveries by state (never the secret)",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/webhooks", {}, webhook_columns()); }},
      {{"webhooks", "show"},
       "NAME",
       "one webhook",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "GET", "/api/v1/webhooks/" + path_segment(c.args[0])); }},
      {{"webhooks", "deliveries"},
       "NAME",
       "its deliveries, newest first: event id, kind, state, attempts, next attempt, last error",
       with_list({{"--state", true, "pending, delivered or failed"}}),
       1,
       1,
       [](Call& c) -> int {
         std::vector<std::pair<std::string, std::string>> q;
         if (auto s = c.flag("--state")) q.emplace_back("state", *s);
         return list(c, "/api/v1/webhooks/" + path_segment(c.args[0]) + "/deliveries", q, delivery_columns());
       }},
      {{"webhooks", "ping"},
       "NAME",
       "queue a test delivery (kind ping) to it",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/webhooks/" + path_segment(c.args[0]) + "/ping"); }},
      {{"webhooks", "redeliver"},
       "DELIVERY_ID",
       "send a delivery again (the same event id), whatever its state",
       {},
       1,
       1,
       [](Call& c) -> int {
         return simple(c, "POST", "/api/v1/webhook-deliveries/" + path_segment(c.args[0]) + "/redeliver");
       }},
      {{"webhooks", "delete"},
       "NAME",
       "delete a webhook and its deliveries",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "DELETE", "/api/v1/webhooks/" + path_segment(c.args[0])); }},
      // settings and tokens
      {{"settings", "get"},
       "[KEY]",
       "settings: value, who set it, what it does",
       {},
       0,
       1,
       [](Call& c) -> int {
         auto reply = c.api.call("GET", "/api/v1/settings");
         if (reply.status != 200) return c.fail(reply);
         auto all = json::parse(reply.body).as_object();
         if (!c.args.empty()) {
           auto* one = all.if_contains(c.args[0]);
           if (!one) return c.error(exit_not_found, "no setting '" + c.args[0] + "'");
           // the value in force: unset means the node config's
           const auto& o = one->as_object();
           c.out << (c.json_output() ? json::serialize(*one) : field(o, o.at("value").is_null() ? "default" : "value"))
                 << '\n';
           return exit_ok;
         }
         if (c.json_output()) {
           c.out << reply.body << '\n';
           return exit_ok;
         }
         json::array items;
         for (auto& kv : all) {
           auto o = kv.value().as_object();
           o["key"] = kv.key();
           items.push_back(o);
         }
         print_table(c.out,
                     {{"KEY", [](const json::object& o) { return field(o, "key"); }},
                      {"VALUE",
                       [](const json::object& o) {
                         // unset: the node config's value, said so
                         return o.at("value").is_null() ? field(o, "default") + " (node config)" : field(o, "value");
                       }},
                      {"UPDATED BY", [](const json::object& o) { return field(o, "updated_by"); }},
                      {"UPDATED", [](const json::object& o) { return field(o, "updated_at"); }},
                      {"EFFECT", [](const json::object& o) { return field(o, "effect"); }}},
                     items);
         return exit_ok;
       }},
      {{"settings", "set"},
       "KEY VALUE",
       "set a setting (VALUE is JSON: true, false, 3, [\"pool=gpu\"]; null: back to the node config)",
       {},
       2,
       2,
       [](Call& c) -> int {
         boost::system::error_code ec;
         auto value = json::parse(c.args[1], ec);
         if (ec) value = json::value(c.args[1]);  // a bare word is a string
         return simple(c, "PUT", "/api/v1/settings/" + path_segment(c.args[0]),
                       json::serialize(json::object{{"value", value}}));
       }},
      {{"token", "create"},
       "NAME",
       "a token for a person or a program; printed once",
       {{"--role", true, "read, operate or admin"},
        {"--ttl", true, "the token expires after this (1m to ten years; default: it does not expire)"}},
       1,
       1,
       [](Call& c) -> int {
         auto role = c.flag("--role");
         if (!role) return c.usage("token create needs --role read|operate|admin");
         json::object body{{"name", c.args[0]}, {"role", *role}};
         if (!put_ttl(c, body)) return c.usage("--ttl must be a duration like 30m, 12h or 720h");
         return print_secret(c, c.api.call("POST", "/api/v1/tokens", json::serialize(body)), [](const json::object& o) {
           return "token " + field(o, "id") + " '" + field(o, "name") + "' (" + field(o, "role") +
                  "): keep it now, it is not shown again";
         });
       }},
      {{"token", "list"},
       "",
       "tokens (never the token itself)",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/tokens", {}, token_columns()); }},
      {{"token", "revoke"},
       "ID",
       "revoke a token (every node refuses it within 5 s)",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/tokens/" + path_segment(c.args[0]) + "/revoke"); }},
      {{"config", "get-contexts"},
       "",
       "the contexts of the config file, the current one marked *",
       {},
       0,
       0,
       [](Call& c) -> int { return config_get_contexts(c); }},
      {{"config", "current-context"},
       "",
       "the context in use (--context, BATON_CONTEXT or the file's current_context)",
       {},
       0,
       0,
       [](Call& c) -> int { return config_current_context(c); }},
      {{"config", "use-context"},
       "NAME",
       "make NAME the config file's current context (only its current_context line is rewritten)",
       {},
       1,
       1,
       [](Call& c) -> int { return config_use_context(c); }},
      {{"completion"},
       "SHELL",
       "print a completion script (SHELL: bash, zsh or fish): source <(baton ctl completion bash)",
       {},
       1,
       1,
       [](Call& c) -> int {
         if (c.args[0] != "bash" && c.args[0] != "zsh" && c.args[0] != "fish")
           return c.usage("SHELL must be bash, zsh or fish, got '" + c.args[0] + "'");
         c.out << completion_script(verbs(), c.args[0]);
         return exit_ok;
       }},
      // For the completion scripts: names, a line each; silent on any
      // failure (a completion must not print errors into the command line).
      {{"__complete"},
       "KIND",
       "the names of the cluster's jobs or workers, or the config file's contexts (KIND), a line each",
       {},
       1,
       1,
       [](Call& c) -> int {
         const std::string& kind = c.args[0];
         if (kind == "contexts") {
           for (const auto& n : c.contexts) c.out << terminal_safe(n) << '\n';
           return exit_ok;
         }
         const char* path = kind == "jobs"      ? "/api/v1/jobs?limit=500"
                            : kind == "workers" ? "/api/v1/workers?limit=500"
                                                : nullptr;
         const char* key = kind == "jobs" ? "name" : "worker_id";
         if (!path) return exit_ok;
         auto reply = c.api.call("GET", path);
         if (reply.status != 200) return exit_ok;
         boost::system::error_code ec;
         auto v = json::parse(reply.body, ec);
         const auto* items = !ec && v.is_object() ? v.as_object().if_contains("items") : nullptr;
         if (!items || !items->is_array()) return exit_ok;
         for (const auto& it : items->as_array())
           if (const auto* n = it.is_object() ? it.as_object().if_contains(key) : nullptr; n && n->is_string())
             c.out << terminal_safe(std::string(n->as_string())) << '\n';
         return exit_ok;
       }},
  };
}

}  // namespace baton::ctl::kit
