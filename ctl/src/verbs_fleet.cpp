// `baton ctl`'s verbs of the fleet and the cluster: workers, nodes, epochs, the leader's
// handover, incident export.
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

std::vector<Verb> worker_verbs() {
  return {
      {{"workers", "list"},
       "",
       "workers: state, hold, capacity, in flight, last heartbeat",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/workers", {}, worker_columns()); }},
      {{"workers", "show"},
       "WORKER",
       "one worker and the runs it holds",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "GET", "/api/v1/workers/" + path_segment(c.args[0])); }},
      {{"workers", "drain"},
       "WORKER",
       "finish in-flight runs, take no new ones",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/workers/" + path_segment(c.args[0]) + "/drain"); }},
      {{"workers", "resume"},
       "WORKER",
       "take a drained or evicted worker back",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/workers/" + path_segment(c.args[0]) + "/resume"); }},
      {{"workers", "evict"},
       "WORKER",
       "disconnect it and refuse it until resumed",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/workers/" + path_segment(c.args[0]) + "/evict"); }},
      // worker identity (docs/security.md, "Worker identity")
      {{"workers", "enroll"},
       "WORKER",
       "grant a worker id labels and capacity; prints its bootstrap token (single use, expiring), once",
       {{"--capacity", true, "the most slots its hello may claim"},
        {"--labels", true, "k=v,k2=v2: the only labels its hello may claim"},
        {"--ttl", true, "the bootstrap token expires after this (1m-720h; default 1h)"}},
       1,
       1,
       [](Call& c) -> int {
         auto capacity = c.flag("--capacity");
         if (!capacity) return c.usage("workers enroll needs --capacity N");
         json::object body;
         try {
           std::size_t used = 0;
           body["capacity"] = std::stoll(*capacity, &used);
           if (used != capacity->size()) throw std::invalid_argument("trailing");
         } catch (...) {
           return c.usage("--capacity must be a whole number, got '" + *capacity + "'");
         }
         json::object labels;
         if (auto l = c.flag("--labels")) {
           for (std::size_t at = 0; at <= l->size();) {
             auto comma = l->find(',', at);
             if (comma == std::string::npos) comma = l->size();
             const std::string pair = l->substr(at, comma - at);
             const auto eq = pair.find('=');
             if (eq == std::string::npos || eq == 0) return c.usage("--labels takes k=v,k2=v2; got '" + pair + "'");
             labels[pair.substr(0, eq)] = pair.substr(eq + 1);
             at = comma + 1;
           }
         }
         body["labels"] = labels;
         if (!put_ttl(c, body)) return c.usage("--ttl takes a duration like 30m or 2h, got '" + *c.flag("--ttl") + "'");
         return print_bootstrap(c, c.api.call("POST", "/api/v1/workers/" + path_segment(c.args[0]) + "/enrollments",
                                              json::serialize(body)));
       }},
      {{"workers", "rotate"},
       "WORKER",
       "a new bootstrap token with the worker's grant; its old credential is revoked when the worker enrolls with it",
       {{"--ttl", true, "the bootstrap token expires after this (default 1h)"}},
       1,
       1,
       [](Call& c) -> int {
         json::object body;
         if (!put_ttl(c, body)) return c.usage("--ttl takes a duration like 30m or 2h, got '" + *c.flag("--ttl") + "'");
         return print_bootstrap(
             c, c.api.call("POST", "/api/v1/workers/" + path_segment(c.args[0]) + "/rotate", json::serialize(body)));
       }},
      {{"workers", "revoke"},
       "WORKER",
       "revoke its credential and unused bootstrap tokens; every node closes its sessions within seconds",
       {},
       1,
       1,
       [](Call& c) -> int { return simple(c, "POST", "/api/v1/workers/" + path_segment(c.args[0]) + "/revoke"); }},
      {{"workers", "credentials"},
       "",
       "worker credentials and unused bootstrap tokens (never the tokens)",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/worker-credentials", {}, credential_columns()); }},
      // dead letters
  };
}

std::vector<Verb> cluster_verbs() {
  return {
      {{"nodes"},
       "",
       "coordinator nodes: role, whether it leads, last heartbeat",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/nodes", {}, node_columns()); }},
      {{"epochs"},
       "",
       "who led each epoch, when, and how it ended",
       list_flags,
       0,
       0,
       [](Call& c) -> int { return list(c, "/api/v1/epochs", {}, epoch_columns()); }},
      {{"leader", "handover"},
       "",
       "hand leadership over (audited): the leader stops creating and assigning, finishes its writes in flight "
       "and releases its lease for NODE (--to; none: any other node), which leads at once",
       {{"--to", true, "the node to lead next"}},
       0,
       0,
       [](Call& c) -> int {
         json::object body;
         if (auto to = c.flag("--to")) body["to"] = *to;
         return simple(c, "POST", "/api/v1/leader/handover", json::serialize(body));
       }},
      {{"incident", "export"},
       "",
       "the incident journal of the node asked (--addr): every input of its leader's decision core in each epoch it "
       "led that overlaps the window, from the epoch's start; `baton-sim --replay FILE` replays it",
       {{"--from", true, "start of the window: unix seconds, 15m back, or an RFC 3339 time (default: 15m)"},
        {"--to", true, "end of the window (default: now)"},
        {"--file", true, "write it here (default: stdout)"}},
       0,
       0,
       incident_export},
  };
}

}  // namespace baton::ctl::kit
