#include "baton/sim/simulation.h"

#include <algorithm>
#include <random>

#include "baton/protocol/vocabulary.h"
#include "world.h"

namespace baton::sim::detail {

Outcome World::run() {
  start_ns_ = now_ns();
  end_faults_ns_ = start_ns_ + k_.fault_ms * ms_ns;
  // Run creations and faults, at random moments of the fault period.
  std::vector<std::int64_t> creations;
  for (int i = 0; i < k_.runs; ++i) creations.push_back(start_ns_ + uniform(500, k_.fault_ms) * ms_ns);
  std::sort(creations.begin(), creations.end());
  std::exponential_distribution<double> gap(k_.faults_per_s);
  std::int64_t next_fault = start_ns_ + 2000 * ms_ns + static_cast<std::int64_t>(gap(rng_) * 1e9);
  std::size_t next_creation = 0;
  if (k_.cron_every_s > 0) {
    store::fake::FakeJob j;
    j.name = cron_job;
    j.schedule = "*/" + std::to_string(k_.cron_every_s) + " * * * * *";
    j.concurrency_policy = k_.cron_policy;
    j.misfire_policy = k_.cron_misfire;
    run_db_.define_job(j);
  }
  std::vector<std::int64_t> postings;
  if (k_.events > 0) {
    store::fake::FakeJob on_event;
    on_event.name = event_job;
    on_event.on_events = {event_kind};
    run_db_.define_job(on_event);
    store::fake::FakeJob after;
    after.name = after_job;
    after.run_after = {event_job};
    run_db_.define_job(after);
    for (int i = 0; i < k_.events; ++i) postings.push_back(start_ns_ + uniform(500, k_.fault_ms) * ms_ns);
    std::sort(postings.begin(), postings.end());
  }
  std::size_t next_posting = 0;
  while (now_ns() < end_faults_ns_) {
    while (next_creation < creations.size() && creations[next_creation] <= now_ns()) {
      create_run();
      next_creation++;
    }
    while (next_posting < postings.size() && postings[next_posting] <= now_ns()) {
      post_event(static_cast<int>(next_posting));
      next_posting++;
    }
    if (k_.faults_per_s > 0 && now_ns() >= next_fault) {
      inject();
      next_fault = now_ns() + static_cast<std::int64_t>(gap(rng_) * 1e9) + ms_ns;
    }
    advance();
  }
  note("faults end");
  if (k_.cron_every_s > 0) run_db_.delete_job(cron_job);  // no more slots: the history can go quiet
  const std::int64_t limit = now_ns() + k_.quiet_ms * ms_ns;
  // Timers still heal what they started (restarts, resumes); then quiesce.
  while (now_ns() < limit) {
    advance();
    if (timers_.empty() && quiet()) break;
  }
  heal_all();
  end_ns_ = now_ns();
  for (auto& w : workers_) end_leaderless(w, now_ns());

  Outcome out;
  out.seed = seed_;
  out.knobs = k_;
  out.report = check_partitioned(history());
  const auto& checked = checked_invariants();
  for (const auto& inv : out.report.invariants)
    if (inv.examined > 0 && inv.violations > 0 && std::find(checked.begin(), checked.end(), inv.name) != checked.end())
      out.violated.push_back(inv.name);
  out.stats["runs"] = created_;
  out.stats["executions"] = static_cast<std::int64_t>(trees_.size());
  out.stats["epochs"] = 0;
  for (const auto& l : lease_dbs_) out.stats["epochs"] += static_cast<std::int64_t>(l->history().size());
  out.stats["partitions"] = k_.partitions;
  out.stats["worker_moves"] = moves_;
  out.stats["frames"] = frames_sent_;
  out.stats["faults"] = static_cast<std::int64_t>(faults_.size());
  out.stats["transitions"] = static_cast<std::int64_t>(run_db_.transitions().size());
  out.stats["simulated_ms"] = (end_ns_ - start_ns_) / ms_ns;
  out.stats["requeued"] = requeued_;
  out.stats["granted"] = granted_;
  std::int64_t succeeded = 0, cron_runs = 0, cron_skipped = 0;
  for (const auto& [id, r] : run_db_.runs()) {
    succeeded += r.state == RunState::succeeded;
    cron_runs += r.slot_unix.has_value();
  }
  for (const auto& l : run_db_.ledger()) cron_skipped += l.decision == "skipped";
  out.stats["succeeded"] = succeeded;
  out.stats["cron_runs"] = cron_runs;
  out.stats["cron_skips"] = cron_skipped;
  std::int64_t event_runs = 0, after_runs = 0;
  for (const auto& [id, r] : run_db_.runs())
    if (r.event_id) {
      const bool after = r.job_definition_id == run_db_.jobs().at(after_job).id;
      (after ? after_runs : event_runs)++;
    }
  out.stats["events"] = static_cast<std::int64_t>(run_db_.events().size());
  out.stats["event_runs"] = event_runs;
  out.stats["after_runs"] = after_runs;
  return out;
}

PartitionedHistory World::history() const {
  PartitionedHistory ph;
  checker::History& h = ph.whole;
  const auto us = [](MonoTime t) { return t.since_start.count() / 1000; };
  h.window.start_us = start_ns_ / 1000;
  h.window.end_us = end_ns_ / 1000;
  h.window.start_mono_ns = start_ns_;
  h.window.end_mono_ns = end_ns_;
  h.window.continuation_ms = cfg_.continuation_timeout.count();
  h.window.continuation_margin_ms = cfg_.continuation_margin.count();
  h.window.lease_ms = election_config().lease.count();
  h.window.poll_ms = election_config().poll_every.count();
  for (const auto& f : faults_) {
    checker::FaultWindow w;
    w.fault = f.kind;
    w.target = f.target;
    w.from_ns = f.from_ns;
    w.to_ns = f.to_ns;
    w.from_us = f.from_ns / 1000;
    w.to_us = f.to_ns / 1000;
    w.took_effect = true;
    h.faults.push_back(w);
  }
  // Executions, as the tasks' own evidence would show them.
  for (const auto& t : trees_) {
    checker::Execution x;
    x.run = t.ref.run_id;
    x.attempt = t.ref.attempt;
    x.token = t.ref.lease_token;
    x.worker = t.worker;
    x.root_pid = x.root_pstart = t.main.pid;
    auto life = [&](const Life& l) {
      checker::ProcessLife p;
      p.run = x.run;
      p.attempt = x.attempt;
      p.token = x.token;
      p.worker = x.worker;
      p.pid = p.pstart = l.pid;
      p.start_ns = l.start_ns;
      p.last_ns = l.dead ? l.end_ns : end_ns_;
      p.start_wall_us = l.start_ns / 1000;
      p.exit_status = l.status;
      return p;
    };
    x.main = life(t.main);
    x.processes.push_back(*x.main);
    if (t.child) x.processes.push_back(life(*t.child));
    x.from_ns = t.main.start_ns;
    x.to_ns = 0;
    for (const auto& p : x.processes) x.to_ns = std::max(x.to_ns, p.last_ns);
    h.executions[x.run].push_back(std::move(x));
  }
  for (auto& [run, xs] : h.executions)
    std::sort(xs.begin(), xs.end(), [](const auto& a, const auto& b) { return a.from_ns < b.from_ns; });
  std::map<std::int64_t, std::string> job_names;
  for (const auto& [name, j] : run_db_.jobs()) {
    job_names[j.id] = name;
    checker::JobRow job;
    job.name = name;
    job.concurrency_policy = j.concurrency_policy;
    job.on_events = j.on_events;
    // Running after a job is subscribing to the event its successes set
    // off: events_once then checks the dependency as it checks any event.
    for (const auto& upstream : j.run_after) job.on_events.push_back("job.succeeded:" + upstream);
    h.jobs[name] = job;
  }
  for (const auto& e : run_db_.events()) h.events.push_back({e.id, e.kind, e.dedupe_key, e.processed});
  h.accepted_events = posted_keys_;
  for (const auto& [id, r] : run_db_.runs())  // every success of a job another runs after: its event was due
    if (r.state == RunState::succeeded && r.job_definition_id && job_names[*r.job_definition_id] == event_job)
      h.accepted_events.push_back("run-succeeded:" + std::to_string(id));
  for (const auto& l : run_db_.ledger()) {
    checker::LedgerRow row;
    row.job = l.job;
    row.decision = l.decision;
    row.reason = l.reason;
    row.slot = l.slot;
    row.slot_last = l.slot_last;
    if (l.run) row.run = l.run->value;
    row.epoch = l.epoch.value;
    h.ledger.push_back(row);
  }
  for (const auto& [id, r] : run_db_.runs()) {
    checker::RunRow row;
    row.id = id;
    if (r.job_definition_id) row.job = job_names[*r.job_definition_id];
    row.slot = r.slot_unix.value_or(0);
    row.event_id = r.event_id.value_or(0);
    row.state = std::string(to_string(r.state));
    row.error_code = r.error_code;
    row.attempt = r.attempt;
    row.max_attempts = r.max_attempts;
    row.created_us = h.window.start_us;
    h.runs[id] = row;
    ph.run_partition[id] = r.partition;
  }
  std::int64_t log_id = 0;
  for (const auto& t : run_db_.transitions()) {
    checker::TransitionRow row;
    row.id = ++log_id;
    row.run = t.run.value;
    row.from = t.from_version.value == 0 ? "" : std::string(to_string(t.from));
    row.to = std::string(to_string(t.to));
    row.continuation = std::string(to_string(t.continuation));
    if (t.from_version.value != 0) row.from_version = t.from_version.value;
    row.to_version = t.to_version.value;
    row.attempt = t.attempt;
    row.epoch = t.epoch.value;
    row.commit_us = us(t.at);
    if (t.continuation_timeout_ms > 0) row.continuation_ms = t.continuation_timeout_ms;
    h.transitions.push_back(row);
    ph.fenced_by.push_back(t.partition);
  }
  for (const auto& lease : lease_dbs_) {
    auto& epochs = ph.epochs.emplace_back();
    for (const auto& e : lease->history())
      epochs.push_back({e.epoch.value, e.leader_id, e.incarnation, us(e.elected_at)});
  }
  for (const auto& a : run_db_.attempts())
    h.attempts.push_back(
        {a.run.value, a.attempt, a.worker, std::string(to_string(a.outcome)), a.lease_token, a.exit_code});
  h.durable_finishes = durable_;
  for (const auto& d : run_db_.dead_letters())
    h.dead_letters.push_back({d.run.value, std::string(to_string(d.final_state)), d.attempts});
  return ph;
}

}  // namespace baton::sim::detail

namespace baton::sim {

using detail::World;

Knobs knobs_for(std::uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5DEECE66Dull);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  Knobs k;
  k.nodes = static_cast<int>(pick(1, 4));
  k.workers = static_cast<int>(pick(1, 4));
  k.capacity = static_cast<int>(pick(1, 3));
  k.fault_ms = pick(20, 90) * 1000;
  k.runs = static_cast<int>(pick(10, 60));
  k.quiet_ms = 600000;  // an upper bound: a history stops as soon as it is quiet
  k.frame_delay_min_ms = pick(0, 5);
  k.frame_delay_max_ms = k.frame_delay_min_ms + pick(0, 40);
  k.p_reset = pick(0, 1) ? real(0, 0.01) : 0;
  k.p_in_doubt = pick(0, 1) ? real(0, 0.05) : 0;
  k.faults_per_s = real(0.05, 0.8);
  for (int i = 0; i < k.nodes; ++i) k.node_rate.push_back(real(0.97, 1.03));
  for (int i = 0; i < k.workers; ++i) k.worker_rate.push_back(real(0.97, 1.03));
  k.p_success = real(0.5, 0.95);
  k.p_descendant = real(0, 0.6);
  k.task_max_ms = pick(200, 4000);
  k.lane_delay_max_ms = pick(0, 1) ? pick(1, 30) : 0;
  k.prefetch = pick(0, 1) ? static_cast<int>(pick(1, k.capacity)) : 0;
  k.hand_created = pick(0, 1) != 0;
  // Partitioned leadership (docs/scaling.md) in a third of the seeds, with
  // at least one worker per partition. Drawn last: the other knobs of a seed
  // are what they were before partitions were modelled.
  if (pick(0, 2) == 0) k.partitions = static_cast<int>(std::min<std::int64_t>(pick(2, 4), k.workers));
  // Workers of the previous version (the separate start) in a quarter of
  // the seeds; drawn after everything above for the same reason.
  k.protocol = pick(0, 3) == 0 ? 3 : protocol::protocol_version_max;
  // A cron job in half the unpartitioned seeds; drawn last, like the two
  // above.
  if (k.partitions == 1 && pick(0, 1) == 1) {
    static const char* const policies[] = {"allow", "forbid", "replace"};
    static const char* const misfires[] = {"run_latest", "run_all", "skip"};
    k.cron_every_s = static_cast<int>(pick(1, 3));
    k.cron_policy = policies[pick(0, 2)];
    k.cron_misfire = misfires[pick(0, 2)];
  }
  // Events and a run-after dependency in half the unpartitioned seeds.
  if (k.partitions == 1 && pick(0, 1) == 1) k.events = static_cast<int>(pick(3, 15));
  return k;
}

const std::vector<std::string>& checked_invariants() {
  static const std::vector<std::string> names{"no_overlapping_executions",
                                              "one_successful_execution",
                                              "success_recorded",
                                              "outcome_matches_process",
                                              "attempts_and_tokens",
                                              "confirming_not_cut_short",
                                              "dead_letter_iff_failed",
                                              "transition_history_continuous",
                                              "no_stale_epoch_writes",
                                              "one_leader_per_epoch",
                                              "legal_transitions",
                                              "quiescent",
                                              "writes_fenced_by_own_partition",
                                              "cron_slots_accounted",
                                              "events_once"};
  return names;
}

Outcome simulate(std::uint64_t seed, std::vector<std::string>* trace, Journals* journals) {
  World world(seed, knobs_for(seed), trace, journals);
  return world.run();
}

}  // namespace baton::sim
