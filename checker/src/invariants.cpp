#include "invariants.h"

#include "invariant_support.h"

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace baton::checker {

namespace {

using namespace checks;
/// Inputs are whole.
InvariantResult check_history_complete(const History& h, const Report& /*so_far*/) {
  InvariantResult inv = invariant("history_complete", "every input file is present and every evidence line parses");
  inv.examined = h.evidence_lines + h.evidence_bad_lines + 1;
  for (const auto& e : h.read_errors) add(inv, e);
  if (h.evidence_bad_lines > 0)
    add(inv, std::to_string(h.evidence_bad_lines) + " evidence lines are not JSON objects (torn or interleaved)");
  return inv;
}

/// No two executions of a run overlap.
InvariantResult check_no_overlapping_executions(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("no_overlapping_executions",
                "no two executions of one run (every descendant process counted; a duplicate start of one "
                "attempt is a second execution) were alive at the same time");
  for (const auto& [run, xs] : h.executions) {
    if (!judged(h, run)) continue;
    inv.examined++;
    for (std::size_t i = 0; i < xs.size(); ++i)
      for (std::size_t j = i + 1; j < xs.size(); ++j) {
        const Execution &a = xs[i], &b = xs[j];
        const std::int64_t overlap = std::min(a.to_ns, b.to_ns) - std::max(a.from_ns, b.from_ns);
        if (overlap < 0) continue;
        add(inv, "run " + std::to_string(run) + ": " + describe(a) + " and " + describe(b) +
                     (a.attempt == b.attempt && a.token == b.token ? " (the same attempt started twice)" : "") +
                     " were both alive for " + ms(overlap));
      }
  }
  return inv;
}

/// The group of a run's idempotency key: a key names one request for one
/// job (schemas/0048), so the same key on two jobs is two groups.
std::string key_group(const RunRow& r) { return "key " + r.key + " of job " + r.job; }

/// At most one successful execution; nothing starts after it.
InvariantResult check_one_successful_execution(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("one_successful_execution",
                "per run, cron slot and idempotency key: at most one execution ended successfully and "
                "nothing started after it (except the documented at-least-once window)");
  // Group executions by run, by (job, slot) and by key.
  // A group is judged when it holds a run judged here (context runs only
  // complete the slot and key groups of the runs judged).
  std::map<std::string, std::vector<const Execution*>> groups;
  std::set<std::string> judged_groups;
  for (const auto& [run, xs] : h.executions) {
    auto r = h.runs.find(run);
    const bool here = judged(h, run);
    if (here) {
      judged_groups.insert("run " + std::to_string(run));
      if (r != h.runs.end() && r->second.slot > 0)
        judged_groups.insert("slot " + r->second.job + "@" + std::to_string(r->second.slot));
      if (r != h.runs.end() && !r->second.key.empty()) judged_groups.insert(key_group(r->second));
    }
    for (const auto& x : xs) {
      if (here) groups["run " + std::to_string(run)].push_back(&x);
      if (r == h.runs.end()) continue;
      if (r->second.slot > 0) groups["slot " + r->second.job + "@" + std::to_string(r->second.slot)].push_back(&x);
      if (!r->second.key.empty()) groups[key_group(r->second)].push_back(&x);
    }
  }
  for (auto& [name, xs] : groups) {
    if (!judged_groups.count(name)) continue;
    inv.examined++;
    std::sort(xs.begin(), xs.end(), [](const auto* a, const auto* b) { return a->from_ns < b->from_ns; });
    const Execution* success = nullptr;
    for (const Execution* x : xs) {
      if (success) {
        const std::int64_t ended = success->main->last_ns;
        std::string what;
        if (x->from_ns > ended)
          what = name + ": " + describe(*x) + " started " + ms(x->from_ns - ended) + " after " + describe(*success) +
                 " had ended successfully";
        else if (x->succeeded())
          what = name + ": " + describe(*x) + " and " + describe(*success) + " both ended successfully";
        if (!what.empty()) {
          const std::string why = at_least_once_reason(h, *success, x->from_ns);
          if (why.empty())
            add(inv, what);
          else
            excuse(inv, what + "; " + why);
        }
      }
      if (x->succeeded() && !success) success = x;
    }
  }
  return inv;
}

/// A durable success is recorded.
InvariantResult check_success_recorded(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("success_recorded",
                "a run with an execution that ended successfully is recorded SUCCEEDED (no success discarded)");
  for (const auto& [run, xs] : h.executions) {
    for (const auto& x : xs) {
      if (!x.succeeded()) continue;
      inv.examined++;
      auto r = h.runs.find(run);
      const std::string state = r == h.runs.end() ? "(missing)" : r->second.state;
      if (state == "SUCCEEDED") continue;
      const std::string what = "run " + std::to_string(run) + ": " + describe(x) + " exited 0 but the run is " + state;
      // In a chaos export, a run created after the window closed (a cron
      // slot's, say) may be in flight when the harness stops the cluster:
      // quiescence waits only for the window's runs (as owner_judged).
      // Its success was cut off by the stop, not discarded; one that
      // reached another final state still counts.
      if (r != h.runs.end() && h.window.end_us > 0 && r->second.created_us > h.window.end_us && !terminal(state)) {
        excuse(inv, what + "; in flight when the cluster was stopped (created " +
                        std::to_string((r->second.created_us - h.window.end_us) / 1000) +
                        " ms after the window closed)");
        continue;
      }
      const std::string why = at_least_once_reason(h, x, h.window.end_mono_ns + 3600 * 1000 * ms_ns);
      if (why.empty())
        add(inv, what);
      else
        excuse(inv, what + "; " + why);
    }
  }
  return inv;
}

/// Recorded attempt outcomes match the processes.
InvariantResult check_outcome_matches_process(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("outcome_matches_process",
                "each attempt's recorded outcome and lease token match what its process did (exit status "
                "from the task's own evidence)");
  std::map<std::pair<std::int64_t, int>, std::vector<const Execution*>> by_attempt;
  for (const auto& [run, xs] : h.executions)
    for (const auto& x : xs) by_attempt[{run, x.attempt}].push_back(&x);
  for (const auto& a : h.attempts) {
    inv.examined++;
    const std::string what = "run " + std::to_string(a.run) + " attempt " + std::to_string(a.attempt) + " on " +
                             a.worker + " recorded " + a.outcome;
    auto it = by_attempt.find({a.run, a.attempt});
    if (it == by_attempt.end()) {
      if (a.outcome == "SUCCEEDED") add(inv, what + " with no execution in the evidence");
      continue;
    }
    for (const Execution* x : it->second) {
      if (!a.token.empty() && x->token != a.token)
        add(inv, what + " with lease token " + a.token + " but its process ran with " + x->token);
      const bool ok = x->succeeded();
      if (ok && a.outcome != "SUCCEEDED") {
        const std::string why = at_least_once_reason(h, *x, h.window.end_mono_ns + 3600 * 1000 * ms_ns);
        if (why.empty())
          add(inv, what + " but its process exited 0");
        else
          excuse(inv, what + " but its process exited 0; " + why);
      }
      if (!ok && a.outcome == "SUCCEEDED")
        add(inv, what + " but its process " +
                     (x->main && x->main->exit_status ? "exited " + std::to_string(*x->main->exit_status)
                                                      : std::string("never exited (killed)")));
    }
  }
  return inv;
}

/// Attempts grow by one, tokens rotate.
InvariantResult check_attempts_and_tokens(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("attempts_and_tokens",
                "attempt grows by exactly 1 per reassignment after an execution (RETRY_WAITING -> ASSIGNED), "
                "stays the same when an assignment that never started is reassigned (ORPHANED -> ASSIGNED), and "
                "stays within max_attempts; lease_token differs on every assignment");
  std::map<std::int64_t, std::vector<const TransitionRow*>> by_run;
  for (const auto& t : h.transitions) by_run[t.run].push_back(&t);
  for (const auto& [run, ts] : by_run) {
    inv.examined++;
    int attempt = 0;
    std::string state;
    for (const auto* t : ts) {
      const bool retry = t->to == "ASSIGNED" && t->from == "RETRY_WAITING";
      if (state.empty())
        attempt = t->attempt;
      else if (retry && t->attempt != attempt + 1)
        add(inv, "run " + std::to_string(run) + ": reassigned from attempt " + std::to_string(attempt) + " to " +
                     std::to_string(t->attempt) + " after RETRY_WAITING");
      else if (!retry && t->attempt != attempt)
        add(inv, "run " + std::to_string(run) + ": attempt changed " + std::to_string(attempt) + " -> " +
                     std::to_string(t->attempt) + " on " + t->from + " -> " + t->to);
      attempt = t->attempt;
      state = t->to;
    }
    auto r = h.runs.find(run);
    if (r != h.runs.end() && r->second.max_attempts > 0 && attempt > r->second.max_attempts)
      add(inv, "run " + std::to_string(run) + ": attempt " + std::to_string(attempt) + " exceeds max_attempts " +
                   std::to_string(r->second.max_attempts));
  }
  std::map<std::int64_t, std::map<std::string, int>> tokens;  // run -> token -> attempt
  auto token_seen = [&](std::int64_t run, int attempt, const std::string& token, const char* where) {
    if (token.empty()) return;
    auto [it, fresh] = tokens[run].try_emplace(token, attempt);
    if (!fresh && it->second != attempt)
      add(inv, "run " + std::to_string(run) + ": lease token " + token + " used by attempts " +
                   std::to_string(it->second) + " and " + std::to_string(attempt) + " (" + where + ")");
  };
  for (const auto& a : h.attempts) token_seen(a.run, a.attempt, a.token, "attempt records");
  for (const auto& [run, xs] : h.executions)
    for (const auto& x : xs) token_seen(run, x.attempt, x.token, "task evidence");
  return inv;
}

/// CONFIRMING is respected.
InvariantResult check_confirming_not_cut_short(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("confirming_not_cut_short",
                "a RUNNING attempt in CONFIRMING is given up (retried or failed) no sooner than continuation "
                "timeout + margin after it began confirming");
  // The run's own continuation timeout when the history has it (nodes may
  // be configured differently; the run carries the value its worker got).
  auto need_us = [&](const TransitionRow& t) {
    return (t.continuation_ms.value_or(h.window.continuation_ms) + h.window.continuation_margin_ms) * 1000;
  };
  std::map<std::int64_t, std::optional<std::int64_t>> confirming_since;  // run -> commit us
  std::map<std::int64_t, std::string> continuation;
  for (const auto& t : h.transitions) {
    const std::string before = continuation[t.run];
    continuation[t.run] = t.continuation;
    if (t.to == "RUNNING" && t.continuation == "CONFIRMING" && before != "CONFIRMING") {
      confirming_since[t.run] = t.commit_us;
      inv.examined++;
      continue;
    }
    if (before != "CONFIRMING" || t.from != "RUNNING" || t.to == "RUNNING" || t.to == "SUCCEEDED" || t.to == "CANCELED")
      continue;
    auto since = confirming_since[t.run];
    if (!since || !t.commit_us) continue;  // reported by transition_history_continuous
    if (*t.commit_us - *since < need_us(t))
      add(inv, "run " + std::to_string(t.run) + " attempt " + std::to_string(t.attempt) + ": RUNNING -> " + t.to + " " +
                   std::to_string((*t.commit_us - *since) / 1000) + " ms after it began confirming (needs " +
                   std::to_string(need_us(t) / 1000) + " ms)");
  }
  return inv;
}

/// Dead letters exactly for exhausted failures.
InvariantResult check_dead_letter_iff_failed(const History& h, const Report& /*so_far*/) {
  InvariantResult inv = invariant("dead_letter_iff_failed",
                                  "a dead letter exists iff the run ended FAILED or TIMED_OUT (attempts exhausted)");
  std::set<std::int64_t> dead;
  for (const auto& d : h.dead_letters) dead.insert(d.run);
  for (const auto& [id, r] : h.runs) {
    if (!terminal(r.state) || !judged(h, id)) continue;
    inv.examined++;
    const bool failed = r.state == "FAILED" || r.state == "TIMED_OUT";
    if (failed && !dead.count(id)) add(inv, "run " + std::to_string(id) + " ended " + r.state + " with no dead letter");
    if (!failed && dead.count(id))
      add(inv, "run " + std::to_string(id) + " ended " + r.state + " but has a dead letter");
  }
  return inv;
}

/// The transition history is continuous.
InvariantResult check_transition_history_continuous(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("transition_history_continuous",
                "each run's recorded writes chain (from_version = previous to_version) and every one has a "
                "commit timestamp");
  std::map<std::int64_t, std::optional<std::int64_t>> last;
  for (const auto& t : h.transitions) {
    inv.examined++;
    if (!t.commit_us)
      add(inv, "run " + std::to_string(t.run) + " " + t.from + " -> " + t.to + " (version " +
                   std::to_string(t.to_version) + ") has no commit timestamp");
    auto it = last.find(t.run);
    if (it == last.end()) {
      if (t.from_version)
        add(inv, "run " + std::to_string(t.run) + ": first recorded write starts at version " +
                     std::to_string(*t.from_version) + ", not at the insert");
    } else if (t.from_version != it->second) {
      add(inv, "run " + std::to_string(t.run) + ": write " + t.from + " -> " + t.to + " from version " +
                   (t.from_version ? std::to_string(*t.from_version) : "(none)") + " follows version " +
                   (it->second ? std::to_string(*it->second) : "(none)") + ": a write is missing from the history");
    }
    last[t.run] = t.to_version;
  }
  return inv;
}

/// Every cron slot in the window materialised once and finished.
InvariantResult check_cron_slots_complete(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("cron_slots_complete",
                "every slot of the every-second cron job in the window has exactly one run, and it finished");
  if (h.window.cron_job.empty()) return inv;  // a simulated history: its cron job stops before the window ends
  std::map<std::int64_t, std::vector<std::int64_t>> slots;
  for (const auto& [id, r] : h.runs)
    if (r.job == h.window.cron_job && r.slot > 0) slots[r.slot].push_back(id);
  const std::int64_t first = (h.window.start_us + 999'999) / 1'000'000;
  const std::int64_t last = h.window.end_us / 1'000'000 - 5;  // slots due well before the window closed
  for (std::int64_t s = first; s <= last; ++s) {
    inv.examined++;
    auto it = slots.find(s);
    if (it == slots.end())
      add(inv, "slot " + std::to_string(s) + " has no run");
    else if (it->second.size() > 1)
      add(inv, "slot " + std::to_string(s) + " has " + std::to_string(it->second.size()) + " runs");
    else if (!terminal(h.runs.at(it->second[0]).state))
      add(inv, "slot " + std::to_string(s) + " run " + std::to_string(it->second[0]) + " is " +
                   h.runs.at(it->second[0]).state);
  }
  return inv;
}

/// Every cron slot is accounted for once, in runs and the ledger.
// The database's unique (job, slot) constraint is what prevents a second
// run; this checks it held, that every created slot left its decision in
// the ledger, that no slot given up was run anyway, and that every slot of
// the every-second job in the window was either run or given up on record.
InvariantResult check_cron_slots_accounted(const History& h, const Report& /*so_far*/) {
  InvariantResult inv = invariant(
      "cron_slots_accounted",
      "per cron job: at most one run per slot, each with a `created` ledger entry naming it; no run for a slot "
      "inside a `skipped` ledger range; every slot of the every-second job in the window is run or recorded as "
      "skipped");
  std::map<std::pair<std::string, std::int64_t>, std::vector<std::int64_t>> runs_by_slot;
  for (const auto& [id, r] : h.runs)
    if (r.slot > 0) runs_by_slot[{r.job, r.slot}].push_back(id);
  std::set<std::int64_t> created_runs;
  std::map<std::string, std::vector<const LedgerRow*>> skipped;
  for (const auto& l : h.ledger) {
    if (l.decision == "created" && l.run) created_runs.insert(*l.run);
    if (l.decision == "skipped") skipped[l.job].push_back(&l);
  }
  auto skipped_by = [&](const std::string& job, std::int64_t slot) -> const LedgerRow* {
    auto it = skipped.find(job);
    if (it == skipped.end()) return nullptr;
    for (const LedgerRow* l : it->second)
      if (slot >= l->slot && slot <= l->slot_last) return l;
    return nullptr;
  };
  for (const auto& [key, ids] : runs_by_slot) {
    const auto& [job, slot] = key;
    if (std::none_of(ids.begin(), ids.end(), [&](std::int64_t id) { return judged(h, id); })) continue;
    inv.examined++;
    if (ids.size() > 1)
      add(inv, "job " + job + " slot " + std::to_string(slot) + " has " + std::to_string(ids.size()) + " runs");
    for (std::int64_t id : ids) {
      if (!judged(h, id)) continue;  // its ledger entries were not read
      // Only cron runs have a slot and a `created` entry (retries keep the run).
      if (!created_runs.count(id))
        add(inv, "run " + std::to_string(id) + " (job " + job + " slot " + std::to_string(slot) +
                     ") has no `created` ledger entry");
      if (const LedgerRow* l = skipped_by(job, slot))
        add(inv, "run " + std::to_string(id) + " ran job " + job + " slot " + std::to_string(slot) + ", which epoch " +
                     std::to_string(l->epoch) + " recorded as skipped (" + l->reason + ")");
    }
  }
  // The every-second job of a chaos run; a simulated history names none
  // (its cron job stops when the faults do, before the window ends).
  if (h.window.cron_job.empty()) return inv;
  const std::int64_t first = (h.window.start_us + 999'999) / 1'000'000;
  const std::int64_t last = h.window.end_us / 1'000'000 - 5;
  for (std::int64_t s = first; s <= last; ++s) {
    inv.examined++;
    if (!runs_by_slot.count({h.window.cron_job, s}) && !skipped_by(h.window.cron_job, s))
      add(inv, "slot " + std::to_string(s) + " of " + h.window.cron_job + " has neither a run nor a ledger record");
  }
  return inv;
}

/// Overlap control: limits, mutually exclusive and exclusive jobs, by the
/// processes.
// Judged on the tasks' own evidence (every descendant counted), not on the
// recorded states: how many executions of a limited job were alive at
// once, whether executions of two mutually exclusive jobs ever were, and
// whether any execution was alive beside one of an exclusive job.
InvariantResult check_overlap_respected(const History& h, const Report& /*so_far*/) {
  InvariantResult inv = invariant(
      "overlap_respected",
      "no more executions of a job alive at once than its max_instances (1 under concurrency_policy forbid or "
      "replace), never two executions of mutually exclusive jobs at once, and no execution alive beside one of an "
      "exclusive job (exclusive_execution), and no more executions of a job with one concurrency key alive at once "
      "than its concurrency.limit");
  struct Edge {
    std::int64_t t;
    int delta;
    const Execution* x;
  };
  // Sweeps the executions' lifetimes; reports each moment the count first
  // exceeds `limit` (touching lifetimes count as overlapping).
  auto sweep = [&](const std::string& what, std::vector<const Execution*> xs, std::int64_t limit) {
    std::vector<Edge> edges;
    for (const Execution* x : xs) {
      edges.push_back({x->from_ns, +1, x});
      edges.push_back({x->to_ns, -1, x});
    }
    std::sort(edges.begin(), edges.end(),
              [](const Edge& a, const Edge& b) { return a.t != b.t ? a.t < b.t : a.delta > b.delta; });
    // Ordered by what the executions are, not where they are in memory: the
    // evidence reads the same every time the same history is checked.
    const auto before = [](const Execution* a, const Execution* b) {
      return std::tie(a->from_ns, a->run, a->attempt, a->root_pid, a->root_pstart) <
             std::tie(b->from_ns, b->run, b->attempt, b->root_pid, b->root_pstart);
    };
    std::set<const Execution*, decltype(before)> alive(before);
    bool over = false;
    for (const Edge& e : edges) {
      if (e.delta < 0) {
        alive.erase(e.x);
        over = over && static_cast<std::int64_t>(alive.size()) > limit;
        continue;
      }
      alive.insert(e.x);
      if (static_cast<std::int64_t>(alive.size()) > limit && !over) {
        over = true;
        std::string who;
        for (const Execution* a : alive) who += (who.empty() ? "" : ", ") + describe(*a);
        add(inv, what + ": " + std::to_string(alive.size()) + " executions alive at once (limit " +
                     std::to_string(limit) + "): " + who);
      }
    }
  };
  std::map<std::string, std::vector<const Execution*>> by_job;
  std::map<std::pair<std::string, std::string>, std::vector<const Execution*>> by_key;
  std::vector<const Execution*> mutually_exclusive, exclusive, all;
  for (const auto& [run, xs] : h.executions) {
    auto r = h.runs.find(run);
    auto j = r == h.runs.end() ? h.jobs.end() : h.jobs.find(r->second.job);
    for (const auto& x : xs) {
      all.push_back(&x);
      if (j == h.jobs.end()) continue;
      if (j->second.limit()) by_job[j->first].push_back(&x);
      if (j->second.concurrency_limit) by_key[{j->first, r->second.concurrency_key}].push_back(&x);
      if (j->second.mutually_exclusive) mutually_exclusive.push_back(&x);
      if (j->second.exclusive_execution) exclusive.push_back(&x);
      if (j->second.limit() || j->second.mutually_exclusive || j->second.exclusive_execution ||
          j->second.concurrency_limit)
        inv.examined++;
    }
  }
  for (const auto& [job, xs] : by_job) sweep("job " + job, xs, *h.jobs.at(job).limit());
  // Keyed concurrency: per job and key (its key is printed escaped: it comes
  // from a run's parameters).
  for (const auto& [job_key, xs] : by_key)
    sweep("job " + job_key.first + " key " + boost::json::serialize(boost::json::value(job_key.second)), xs,
          *h.jobs.at(job_key.first).concurrency_limit);
  sweep("mutually exclusive jobs", mutually_exclusive, 1);
  // Each execution of an exclusive job against every other execution, of
  // any run (touching lifetimes count as overlapping, as above).
  for (const Execution* e : exclusive) {
    std::string beside;
    for (const Execution* x : all)
      if (x != e && x->from_ns <= e->to_ns && e->from_ns <= x->to_ns)
        beside += (beside.empty() ? "run " : ", run ") + std::to_string(x->run) + " " + describe(*x);
    if (!beside.empty())
      add(inv, "exclusive job " + h.runs.at(e->run).job + ": run " + std::to_string(e->run) + " " + describe(*e) +
                   " alive beside " + beside);
  }
  return inv;
}

/// Events: one per dedupe key, one run per subscriber, every one.
InvariantResult check_events_once(const History& h, const Report& /*so_far*/) {
  InvariantResult inv = invariant(
      "events_once",
      "at most one event per dedupe key; per subscribed job at most one run per event; every event the harness "
      "saw accepted was processed and each job subscribed to its kind has exactly one finished run of it");
  // A dedupe key names one event of one kind (schemas/0048): the same key
  // on two kinds is two events.
  std::map<std::pair<std::string, std::string>, std::vector<const EventRow*>> by_key;  // (key, kind)
  std::map<std::string, const EventRow*> first_of_key;  // the harness's keys are unique across kinds
  for (const auto& e : h.events)
    if (!e.dedupe_key.empty()) {
      by_key[{e.dedupe_key, e.kind}].push_back(&e);
      first_of_key.emplace(e.dedupe_key, &e);
    }
  for (const auto& [key, es] : by_key) {
    inv.examined++;
    if (es.size() > 1)
      add(inv, "dedupe key " + key.first + " has " + std::to_string(es.size()) + " events of kind " + key.second);
  }
  std::map<std::pair<std::string, std::int64_t>, std::vector<std::int64_t>> runs_of;  // (job, event) -> runs
  for (const auto& [id, r] : h.runs)
    if (r.event_id > 0) runs_of[{r.job, r.event_id}].push_back(id);
  for (const auto& [k, ids] : runs_of) {
    inv.examined++;
    if (ids.size() > 1)
      add(inv, "event " + std::to_string(k.second) + " has " + std::to_string(ids.size()) + " runs of job " + k.first);
  }
  for (const auto& key : std::set<std::string>(h.accepted_events.begin(), h.accepted_events.end())) {
    inv.examined++;
    auto it = first_of_key.find(key);
    if (it == first_of_key.end()) {
      add(inv, "event " + key + " was accepted but is not recorded");
      continue;
    }
    const EventRow& e = *it->second;
    if (!e.processed) add(inv, "event " + key + " (id " + std::to_string(e.id) + ") was never processed");
    for (const auto& [name, job] : h.jobs) {
      if (std::find(job.on_events.begin(), job.on_events.end(), e.kind) == job.on_events.end()) continue;
      auto runs = runs_of.find({name, e.id});
      if (runs == runs_of.end())
        add(inv, "event " + key + " (id " + std::to_string(e.id) + ") has no run of subscribed job " + name);
      else if (!terminal(h.runs.at(runs->second.front()).state))
        add(inv, "event " + key + " run " + std::to_string(runs->second.front()) + " is " +
                     h.runs.at(runs->second.front()).state);
    }
  }
  return inv;
}

/// Every idempotency key has one run, finished.
InvariantResult check_idempotency_keys_once(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("idempotency_keys_once", "every API submission key has exactly one run, and it finished");
  std::map<std::string, std::vector<std::int64_t>> by_key;
  for (const auto& [id, r] : h.runs)
    if (!r.key.empty()) by_key[r.key].push_back(id);
  for (const auto& key : std::set<std::string>(h.accepted_keys.begin(), h.accepted_keys.end())) {
    inv.examined++;
    auto it = by_key.find(key);
    if (it == by_key.end())
      add(inv, "key " + key + " was accepted but has no run");
    else if (it->second.size() != 1)
      add(inv, "key " + key + " has " + std::to_string(it->second.size()) + " runs");
    else if (!terminal(h.runs.at(it->second[0]).state))
      add(inv, "key " + key + " run " + std::to_string(it->second[0]) + " is " + h.runs.at(it->second[0]).state);
  }
  return inv;
}

/// Every recorded transition legal.
InvariantResult check_legal_transitions(const History& h, const Report& /*so_far*/) {
  InvariantResult inv = invariant("legal_transitions", "every recorded state change is in the transition table");
  for (const auto& t : h.transitions) {
    inv.examined++;
    if (!legal(t.from, t.to))
      add(inv, "run " + std::to_string(t.run) + ": " + (t.from.empty() ? "(new)" : t.from) + " -> " + t.to);
  }
  return inv;
}

/// Nothing left unfinished after quiescence.
InvariantResult check_quiescent(const History& h, const Report& /*so_far*/) {
  InvariantResult inv = invariant("quiescent", "every run created in the window reached a final state");
  for (const auto& [id, r] : h.runs) {
    if (r.created_us > h.window.end_us || r.created_us < h.window.start_us - 60'000'000) continue;
    inv.examined++;
    if (!terminal(r.state)) add(inv, "run " + std::to_string(id) + " (" + r.job + ") is " + r.state);
  }
  return inv;
}

// The runs running_has_owner judges: the RUNNING ones, but in a chaos
// export (a window was set) only the window's. The harness waits for the
// window's runs to finish; the cron job keeps firing until it stops the
// cluster, and a run created after the window may be running then.
bool owner_judged(const History& h, const RunRow& r) {
  return r.state == "RUNNING" && !(h.window.end_us > 0 && r.created_us > h.window.end_us);
}

// The leader's grace for a run whose worker is gone (owner_grace_ms, or
// twice a lease and a poll when the history does not say).
std::int64_t owner_grace_us(const History& h) {
  return (h.window.owner_grace_ms > 0 ? h.window.owner_grace_ms : 2 * (h.window.lease_ms + h.window.poll_ms)) * 1000;
}

// Why the worker a run is `held` ("is RUNNING on", "is ASSIGNED to") cannot
// be counted on: unknown, or detached longer ago than the grace; empty when
// it is attached or gone within the grace (the leader's to notice yet).
std::string worker_gone(const History& h, const RunRow& r, const std::string& held, std::int64_t grace_us) {
  auto w = h.workers.find(r.worker);
  if (w == h.workers.end()) return held + " " + (r.worker.empty() ? "no worker" : "unknown worker " + r.worker);
  if (w->second.attached) return "";
  const std::int64_t gone = w->second.detached_us ? h.taken_us - *w->second.detached_us : grace_us + 1;
  if (gone <= grace_us) return "";
  return held + " " + r.worker + ", detached " +
         (w->second.detached_us ? std::to_string(gone / 1000) + " ms ago" : std::string("(no time)"));
}

/// A RUNNING run has an owner: its worker attached, or a CONFIRMING
/// deadline the leader still keeps.
// The state when the history was taken (a live database's; a chaos export
// is taken after every run of the window finished, so it has none of those
// to examine). A worker that detached moments ago, or a deadline that
// passed moments ago, is the leader's to notice within `owner_grace_ms`;
// after that the run is stuck: nothing will finish it, retry it or give it
// up.
InvariantResult check_running_has_owner(const History& h, const Report& /*so_far*/) {
  InvariantResult inv =
      invariant("running_has_owner",
                "every RUNNING run is on an attached worker, or CONFIRMING within its deadline (+ margin); a worker "
                "detached or a deadline passed longer ago than the leader's grace is a run nothing will finish");
  const std::int64_t grace_us = owner_grace_us(h);
  const std::int64_t margin_us = h.window.continuation_margin_ms * 1000;
  for (const auto& [id, r] : h.runs) {
    if (!owner_judged(h, r)) continue;
    inv.examined++;
    const std::string what = "run " + std::to_string(id) + " (" + r.job + ") attempt " + std::to_string(r.attempt);
    if (r.continuation == "CONFIRMING") {
      if (!r.continuation_deadline_us) {
        add(inv, what + " is CONFIRMING without a deadline");
        continue;
      }
      const std::int64_t late = h.taken_us - (*r.continuation_deadline_us + margin_us);
      if (late > grace_us)
        add(inv, what + " on " + r.worker + " is CONFIRMING " + std::to_string(late / 1000) +
                     " ms past its deadline and margin: nobody gave it up");
      continue;
    }
    const std::string gone = worker_gone(h, r, "is RUNNING on", grace_us);
    if (gone.empty()) continue;
    const bool known = h.workers.count(r.worker) > 0;
    add(inv, what + " " + gone + (known ? ", and not CONFIRMING: nothing will finish it" : ""));
  }
  return inv;
}

// The runs assigned_has_owner judges: the ASSIGNED ones, with the same
// window rule as owner_judged.
bool assignee_judged(const History& h, const RunRow& r) {
  return r.state == "ASSIGNED" && !(h.window.end_us > 0 && r.created_us > h.window.end_us);
}

/// An ASSIGNED run has a worker to start it: attached, or detached for less
/// than the leader's grace.
// The state when the history was taken, as for running_has_owner. The
// leader takes an assignment back from a detached worker after
// `reassign_detached_after` (a second by default), far inside the grace;
// a run left ASSIGNED to a worker gone longer waits for a start that will
// never come, and holds its job's overlap and its key's slot meanwhile.
InvariantResult check_assigned_has_owner(const History& h, const Report& /*so_far*/) {
  InvariantResult inv = invariant("assigned_has_owner",
                                  "every ASSIGNED run is on an attached worker; a worker detached longer ago than "
                                  "the leader's grace holds a run nothing will start or place again");
  const std::int64_t grace_us = owner_grace_us(h);
  for (const auto& [id, r] : h.runs) {
    if (!assignee_judged(h, r)) continue;
    inv.examined++;
    const std::string what = "run " + std::to_string(id) + " (" + r.job + ") attempt " + std::to_string(r.attempt);
    const std::string gone = worker_gone(h, r, "is ASSIGNED to", grace_us);
    if (gone.empty()) continue;
    const bool known = h.workers.count(r.worker) > 0;
    add(inv, what + " " + gone + (known ? ": nothing will start it or place it again" : ""));
  }
  return inv;
}

/// The run did what was asked: every requested fault took effect.

InvariantResult check_fault_coverage(const History& h, const Report& report) {
  InvariantResult inv = invariant("fault_coverage",
                                  "every requested fault kind took effect at least once (observed, not only "
                                  "scheduled)");
  for (const auto& f : h.window.faults) {
    inv.examined++;
    if (!report.faults.count(f))
      add(inv, "fault " + f + " was requested but never injected");
    else if (!report.faults_effective.count(f))
      add(inv, "fault " + f + " was injected " + std::to_string(report.faults.at(f)) +
                   " times but never seen to take effect");
  }
  return inv;
}

}  // namespace

void fail_unexamined(const History& h, Report& report) {
  // A check that examined nothing proves nothing: count it as a failure.
  // (Checks of rare events may examine nothing when their fault was not
  // requested: a pause check without pauses, a confirm check without detaches.)
  auto requested = [&](const std::string& f) {
    return std::find(h.window.faults.begin(), h.window.faults.end(), f) != h.window.faults.end();
  };
  for (auto& inv : report.invariants) {
    if (inv.examined > 0) continue;
    if (inv.name == "fault_coverage" && h.window.faults.empty()) continue;
    if (inv.name == "paused_leader_superseded" && !requested("pause_leader")) continue;
    if (inv.name == "confirming_not_cut_short" && !requested("kill9_worker") && !requested("pause_worker") &&
        !requested("partition_workers"))
      continue;  // nothing detaches a worker with a run in flight
    if (inv.name == "dead_letter_iff_failed" && h.runs.empty()) continue;
    if (inv.name == "no_stale_epoch_writes" && h.epochs.size() < 2) continue;  // no election to be stale against
    // The state at export: a chaos history is exported once every run of
    // the window finished, so there is nothing RUNNING to examine.
    if (inv.name == "running_has_owner" &&
        std::none_of(h.runs.begin(), h.runs.end(), [&](const auto& r) { return owner_judged(h, r.second); }))
      continue;
    if (inv.name == "assigned_has_owner" &&
        std::none_of(h.runs.begin(), h.runs.end(), [&](const auto& r) { return assignee_judged(h, r.second); }))
      continue;
    add(inv, "nothing was examined: the run was too short or the history is missing");
  }
}

std::span<const InvariantCheck> invariant_checks() {
  static constexpr InvariantCheck all[] = {
      check_history_complete,
      check_no_overlapping_executions,
      check_one_successful_execution,
      check_success_recorded,
      check_outcome_matches_process,
      check_attempts_and_tokens,
      check_confirming_not_cut_short,
      check_dead_letter_iff_failed,
      check_transition_history_continuous,
      check_no_stale_epoch_writes,
      check_one_leader_per_epoch,
      check_elections_kept,
      check_paused_leader_superseded,
      check_leaderless_bounded,
      check_election_progress,
      check_cron_slots_complete,
      check_cron_slots_accounted,
      check_overlap_respected,
      check_events_once,
      check_idempotency_keys_once,
      check_legal_transitions,
      check_quiescent,
      check_running_has_owner,
      check_assigned_has_owner,
      check_fault_coverage,
  };
  return all;
}

std::span<const InvariantCheck> recorded_invariant_checks() {
  // The database's records alone: the recorded writes, attempts, epochs,
  // dead letters, ledger, events and keys, and the state when taken.
  static constexpr InvariantCheck recorded[] = {
      check_no_overlapping_executions,
      check_one_successful_execution,
      check_attempts_and_tokens,
      check_confirming_not_cut_short,
      check_dead_letter_iff_failed,
      check_transition_history_continuous,
      check_no_stale_epoch_writes,
      check_one_leader_per_epoch,
      check_cron_slots_accounted,
      check_overlap_respected,
      check_events_once,
      check_idempotency_keys_once,
      check_legal_transitions,
      check_running_has_owner,
      check_assigned_has_owner,
  };
  return recorded;
}

const std::map<std::string, std::string>& evidence_only_invariants() {
  static const std::map<std::string, std::string> needs = {
      {"history_complete", "the harness's files"},
      {"success_recorded", "the tasks' own exit statuses"},
      {"outcome_matches_process", "the tasks' own exit statuses"},
      {"elections_kept", "what each node said while it happened (the harness's probes)"},
      {"paused_leader_superseded", "the harness's fault log"},
      {"leaderless_bounded", "the harness's fault log and probes"},
      {"election_progress", "the harness's probes"},
      {"cron_slots_complete", "a cron job firing every second for the whole window"},
      {"quiescent", "a window after which nothing new is submitted"},
      {"fault_coverage", "the harness's fault log"},
  };
  return needs;
}

}  // namespace baton::checker
