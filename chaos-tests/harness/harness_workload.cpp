#include "baton/base/assert.h"
#include "harness.h"

namespace baton::chaos::harness {

void Harness::drive(const std::atomic<bool>& stop) {
  std::mt19937_64 rng(o_.seed * 31 + 7);
  int n = 0;
  const std::vector<std::string> jobs = {"chaos-short",  "chaos-short",   "chaos-medium", "chaos-fail",
                                         "chaos-slow",   "chaos-garbage", "chaos-pair",   "chaos-excl-a",
                                         "chaos-excl-b", "chaos-keyed",   "chaos-keyed"};
  auto next_cancel = std::chrono::steady_clock::now() + cancel_every;
  bool exclusive_owed = false;
  while (!stop.load()) {
    const std::string key = "s" + std::to_string(o_.seed) + "-" + std::to_string(++n);
    const bool cancel = std::chrono::steady_clock::now() >= next_cancel;
    // Now and then a run of the exclusive job: the cluster drains for it
    // (up to a chaos-slow run, 8 s), so rarely enough to leave the rest a
    // workload (every 60th round, ~15 s). A round taken by a cancel leaves
    // it owed to the next one: a 30 s run has one such round, and a
    // weakening of the gates is caught only if that run is made.
    if (n % 60 == 30) exclusive_owed = true;
    const std::string job = cancel ? "chaos-long" : exclusive_owed ? "chaos-exclusive" : jobs[rng() % jobs.size()];
    if (!cancel) exclusive_owed = false;
    if (cancel) next_cancel = std::chrono::steady_clock::now() + cancel_every;
    // A keyed run's tenant: one of two, so that runs of one key queue up.
    const std::string body =
        job == "chaos-keyed" ? R"({"parameters":{"tenant":"t)" + std::to_string(rng() % 2) + "\"}}" : "";
    const std::int64_t run = submit(job, key, stop, body);
    BATON_ASSERT(run >= 0);  // a run id, or 0: not accepted (recorded as such)
    // Every fourth round an event, and every tenth event posted twice (the
    // second post must record nothing).
    if (n % 4 == 0) {
      const std::string event = "e" + std::to_string(o_.seed) + "-" + std::to_string(n);
      post_event(event, stop);
      if (n % 40 == 0) post_event(event, stop);
    }
    if (cancel && run > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300 + rng() % 700));
      // Given up when the window closes, as every other call is: against
      // hung nodes each try can take 20 s (the leader asked of each node,
      // then the cancel), and 20 of them kept one weakened run's window
      // from closing for 284 s. An uncancelled chaos-long ends by itself.
      for (int tries = 0; tries < cancel_tries && !stop.load(); ++tries) {
        auto l = leader();
        if (!l.empty() && http_request(node_port_[l], "POST", "/api/v1/runs/" + std::to_string(run) + "/cancel",
                                       {{"Authorization", "Bearer " + admin_token}})
                                  .status == 202)
          break;
        std::this_thread::sleep_for(api_retry_every);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 200));
  }
}

std::int64_t Harness::submit(const std::string& job, const std::string& key, const std::atomic<bool>& stop,
                             const std::string& body) {
  static const std::regex run_re("\"run_id\":(\\d+)");
  BATON_ASSERT(!node_port_.empty());  // the cluster is up before the workload starts
  for (int attempt = 0; attempt < api_tries && !stop.load(); ++attempt) {
    std::string target = leader();
    if (target.empty()) target = node_port_.begin()->first;
    BATON_ASSERT(node_port_.count(target));  // leader() names a node of this cluster
    std::vector<std::pair<std::string, std::string>> headers = {{"Authorization", "Bearer " + admin_token},
                                                                {"Idempotency-Key", key}};
    if (!body.empty()) headers.emplace_back("Content-Type", "application/json");
    auto r = http_request(node_port_[target], "POST", "/api/v1/jobs/" + job + "/trigger", headers, body);
    std::smatch m;
    if (r.status == 201 && std::regex_search(r.body, m, run_re)) {
      ++created_;
      std::lock_guard lock(mutex_);
      submissions_ << "key=" << key << " job=" << job << " accepted=1 status=201 run=" << m[1] << "\n";
      submissions_.flush();
      return std::stoll(m[1]);
    }
    if (r.status == 200) {  // an earlier try of this key created it (its answer was lost)
      const std::string run = std::regex_search(r.body, m, run_re) ? m[1].str() : "0";
      std::lock_guard lock(mutex_);
      submissions_ << "key=" << key << " job=" << job << " accepted=1 status=200 run=" << run << "\n";
      submissions_.flush();
      return std::stoll(run);
    }
    std::this_thread::sleep_for(api_retry_every);
  }
  std::lock_guard lock(mutex_);
  submissions_ << "key=" << key << " job=" << job << " accepted=0\n";
  return 0;
}

void Harness::post_event(const std::string& key, const std::atomic<bool>& stop) {
  const std::string body = R"({"kind":"chaos.tick","payload":{"key":")" + key + R"("},"dedupe_key":")" + key + "\"}";
  BATON_ASSERT(!node_port_.empty());
  for (int attempt = 0; attempt < api_tries && !stop.load(); ++attempt) {
    std::string target = leader();
    if (target.empty()) target = node_port_.begin()->first;
    BATON_ASSERT(node_port_.count(target));
    auto r =
        http_request(node_port_[target], "POST", "/api/v1/events", {{"Authorization", "Bearer " + admin_token}}, body);
    if (r.status == 201 || r.status == 200) {
      std::lock_guard lock(mutex_);
      submissions_ << "event=" << key << " accepted=1 status=" << r.status << "\n";
      submissions_.flush();
      return;
    }
    std::this_thread::sleep_for(api_retry_every);
  }
  std::lock_guard lock(mutex_);
  submissions_ << "event=" << key << " accepted=0\n";
}

void Harness::probe(const std::string& node, int port, const std::atomic<bool>& stop) {
  static const std::regex role_re("\"role\":\"(\\w+)\""), epoch_re("\"epoch\":(\\d+)"),
      leader_re("\"leader_id\":\"([^\"]*)\"");
  while (!stop.load()) {
    const std::int64_t at = mono_ns(), at_us = wall_us();
    auto r = http_request(port, "GET", "/status", {}, "", 1000ms);
    std::smatch role, epoch, leader;
    const bool up = r.status == 200 && std::regex_search(r.body, role, role_re) &&
                    std::regex_search(r.body, epoch, epoch_re) && std::regex_search(r.body, leader, leader_re);
    {
      std::lock_guard lock(mutex_);
      probes_ << "mono_ns=" << at << " t_us=" << at_us << " node=" << node << " up=" << (up ? 1 : 0)
              << " role=" << (up ? role[1].str() : "") << " epoch=" << (up ? epoch[1].str() : "0")
              << " leader=" << (up ? leader[1].str() : "") << "\n";
    }
    std::this_thread::sleep_for(probe_every);
  }
}

}  // namespace baton::chaos::harness
