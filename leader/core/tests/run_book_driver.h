#pragma once
// What RunBook's tests share: a book driven by hand (Driver), answering its
// reads from tables and leaving its writes to the test, and the rows and
// messages the tests build. Header-only.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>

#include "baton/leader_core/run_book.h"

namespace baton::leader_core::run_book_testing {

using namespace std::chrono_literals;

inline constexpr Epoch kEpoch{3};

inline RuntimeConfig config() {
  RuntimeConfig c;
  c.retry_jitter_max = Millis{0};  // retry delays are exact
  c.assign_with_start = true;      // version-4 workers' runs start with their assignment
  return c;
}

inline MonoTime at(Millis t) { return MonoTime{t}; }

/// How often the reaper reads the active runs when nothing made it doubt its
/// book (RunBook::full_read_every_reaps reaps).
inline Millis full_read_period() { return config().reap_every * RunBook::full_read_every_reaps; }

inline store::ActiveRun active(std::int64_t id, RunState state, const std::string& worker, int attempt = 1,
                               Epoch epoch = kEpoch) {
  store::ActiveRun r;
  r.id = RunId{id};
  r.version = Version{10};
  r.state = state;
  r.attempt = attempt;
  r.max_attempts = 3;
  r.worker_id = worker;
  r.lease_token = "tok-" + std::to_string(id) + "-" + std::to_string(attempt);
  r.leader_epoch = epoch;
  r.retry_base_ms = 200;
  r.retry_cap_ms = 300;
  return r;
}

inline protocol::AttemptRef ref(const store::ActiveRun& r) { return {r.id.value, r.attempt, r.lease_token}; }

inline protocol::Finish finish(const store::ActiveRun& r, protocol::Outcome outcome) {
  protocol::Finish f;
  f.ref = ref(r);
  f.outcome = outcome;
  return f;
}

inline protocol::Hello hello(const std::string& worker, std::vector<protocol::AttemptRef> running = {}) {
  protocol::Hello h;
  h.worker_id = worker;
  h.capacity = 4;
  h.instance = worker + "-i1";
  h.running = std::move(running);
  return h;
}

template <class T>
inline std::vector<T> all(const std::vector<Effect>& es) {
  std::vector<T> out;
  for (const auto& e : es)
    if (auto* t = std::get_if<T>(&e)) out.push_back(*t);
  return out;
}

/// The messages of type M sent in `es`.
template <class M>
inline std::vector<M> sent(const std::vector<Effect>& es) {
  std::vector<M> out;
  for (const auto& s : all<Send>(es))
    if (auto* m = std::get_if<M>(&s.message)) out.push_back(*m);
  return out;
}

inline store::WriteResult applied(Version v = Version{11}) {
  store::WriteResult w;
  w.outcome = store::WriteOutcome::applied;
  w.current_epoch = kEpoch;
  w.new_version = v;
  return w;
}

inline store::BatchWriteResult batch(Epoch current, std::vector<std::int64_t> ids) {
  store::BatchWriteResult b;
  b.current_epoch = current;
  for (auto id : ids) b.applied[id] = applied();
  return b;
}

/// A due run as the dispatcher reads it: id, version, and how long until it
/// may start.
inline store::DueRun due_run(std::int64_t id, std::int64_t version, std::int64_t starts_in_ms = 0) {
  store::DueRun d;
  d.id = RunId{id};
  d.version = Version{version};
  d.starts_in_ms = starts_in_ms;
  return d;
}

/// An assign batch that applied for `id`: attempt 1, lease token "t<id>".
inline store::BatchWriteResult assigned(std::int64_t id) {
  auto b = batch(kEpoch, {id});
  b.applied[id].lease_token = "t" + std::to_string(id);
  b.applied[id].attempt = 1;
  return b;
}

/// Drives a book: answers the reads (active runs, due runs, scheduled jobs)
/// from its tables at once and leaves writes to the test.
struct Driver {
  Driver() : Driver(config()) {}
  explicit Driver(const RuntimeConfig& c) : book{kEpoch, "n1", c, 1, at(0ms)} {}
  RunBook book;
  std::vector<store::ActiveRun> rows;
  std::vector<store::DueRun> due;
  std::vector<store::ScheduledJob> jobs;
  std::vector<store::DueRun> unmatched;  ///< what ReadUnmatched answers
  std::vector<store::DueRun> waiting;    ///< what ReadWaiting answers
  std::vector<store::DueRun> key_waits;  ///< what ReadWaiting{for_keys} answers
  store::Controls controls;
  /// What the next ProcessSubmissions answers (then nothing taken again).
  store::SubmissionsProcessed submitted{kEpoch, 0, 0, 0};
  std::vector<ProcessSubmissions> submission_takes;  ///< every ProcessSubmissions seen
  bool hold_submissions = false;                     ///< leave them unanswered (their ops in held_submissions)
  std::vector<OpId> held_submissions;
  bool fail_controls = false;
  bool fail_reads = false;
  MonoTime now = at(0ms);
  int active_reads = 0;

  std::vector<Effect> run() {
    std::vector<Effect> seen;
    while (book.has_effects()) {
      for (auto& e : book.take_effects()) {
        seen.push_back(e);
        if (auto* r = std::get_if<ReadActive>(&e)) {
          active_reads++;
          if (fail_reads)
            book.result(r->op, Result<std::vector<store::ActiveRun>>(make_error(Errc::db_unavailable, "down")), now);
          else
            book.result(r->op, Result<std::vector<store::ActiveRun>>(rows), now);
        } else if (auto* d = std::get_if<ReadDue>(&e)) {
          book.result(d->op, Result<std::vector<store::DueRun>>(due), now);
        } else if (auto* pr = std::get_if<Prune>(&e)) {
          book.result(pr->op, Result<store::Pruned>(store::Pruned{kEpoch, 0, 0, 0, 0}), now);
        } else if (auto* ev = std::get_if<ProcessEvents>(&e)) {
          book.result(ev->op, Result<store::EventsProcessed>(store::EventsProcessed{kEpoch, 0, 0}), now);
        } else if (auto* sp = std::get_if<ProcessSubmissions>(&e)) {
          submission_takes.push_back(*sp);
          if (hold_submissions) {
            held_submissions.push_back(sp->op);
            continue;
          }
          book.result(sp->op, Result<store::SubmissionsProcessed>(std::exchange(submitted, {kEpoch, 0, 0, 0})), now);
        } else if (auto* u = std::get_if<ReadUnmatched>(&e)) {
          book.result(u->op, Result<std::vector<store::DueRun>>(unmatched), now);
        } else if (auto* wt = std::get_if<ReadWaiting>(&e)) {
          book.result(wt->op, Result<std::vector<store::DueRun>>(wt->for_keys ? key_waits : waiting), now);
        } else if (auto* rd = std::get_if<RecordDecision>(&e)) {
          store::CreateResult written;
          written.outcome = store::WriteOutcome::applied;
          written.current_epoch = kEpoch;
          written.run = rd->run;
          book.result(rd->op, Result<store::CreateResult>(written), now);
        } else if (auto* j = std::get_if<ReadScheduledJobs>(&e)) {
          book.result(j->op, Result<std::vector<store::ScheduledJob>>(jobs), now);
        } else if (auto* c = std::get_if<ReadControls>(&e)) {
          book.result(c->op,
                      fail_controls ? Result<store::Controls>(make_error(Errc::db_unavailable, "down"))
                                    : Result<store::Controls>(controls),
                      now);
        }
      }
    }
    return seen;
  }
  std::vector<Effect> start() {
    book.start(now);
    return run();
  }
  /// The book starts knowing `active`, and worker `h` attaches on link 7.
  std::vector<Effect> begin(std::vector<store::ActiveRun> active, const protocol::Hello& h) {
    rows = std::move(active);
    start();
    return attach(7, h);
  }
  std::vector<Effect> attach(LinkId link, const protocol::Hello& h) {
    book.attached(link, h, now);
    return run();
  }
  std::vector<Effect> msg(LinkId link, const std::string& worker, protocol::Message m) {
    book.message(link, worker, m, now);
    return run();
  }
  std::vector<Effect> tick(Millis t) {
    now = at(t);
    book.tick(now);
    return run();
  }
  template <class T>
  std::vector<Effect> answer(OpId op, T result) {
    book.result(op, Result<T>(std::move(result)), now);
    return run();
  }
};

}  // namespace baton::leader_core::run_book_testing
