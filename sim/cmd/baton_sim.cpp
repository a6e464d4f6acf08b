// baton-sim: runs the cluster simulator over a range of seeds and prints
// what failed, with the seed to replay.
//
//   baton-sim [--seeds N] [--from S] [--threads T] [--expect-failure]
//   baton-sim --seed S        replay one seed and print its whole trace
//   baton-sim --seed S --journals DIR
//                             ... and write each of its books' incident
//                             journals to DIR/book-<n>.jsonl
//   baton-sim --replay FILE [--since MS] [--until MS] [--effects]
//                             replay an incident journal (`baton ctl incident
//                             export`, or --journals) into the leader's core
//                             and show every decision it made in the window,
//                             checking each batch of effects against the
//                             record (docs/assurance.md, "Incident replay");
//                             exit 0 when all are identical, 1 when one
//                             differs (the line and both are printed), 2 on
//                             a usage or file error
//
// Exit status: 0 when every seed passed (with --expect-failure: when at
// least one failed, which is what a weakened build must show), 1 otherwise.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "baton/journal/replay.h"
#include "baton/sim/simulation.h"

namespace {

void print_failure(const baton::sim::Outcome& o) {
  std::printf("FAIL seed %llu: %s violated\n", static_cast<unsigned long long>(o.seed), o.violated.front().c_str());
  for (const auto& inv : o.report.invariants) {
    if (inv.violations == 0 || std::find(o.violated.begin(), o.violated.end(), inv.name) == o.violated.end()) continue;
    for (std::size_t i = 0; i < inv.evidence.size() && i < 5; ++i)
      std::printf("  %s: %s\n", inv.name.c_str(), inv.evidence[i].c_str());
  }
  std::printf("  replay: BATON_SIM_SEED=%llu (or baton-sim --seed %llu)\n", static_cast<unsigned long long>(o.seed),
              static_cast<unsigned long long>(o.seed));
}

constexpr const char* usage =
    "usage: baton-sim [--seeds N] [--from S] [--threads T] [--expect-failure]\n"
    "       baton-sim --seed S [--journals DIR]\n"
    "       baton-sim --replay FILE [--since MS] [--until MS] [--effects]\n"
    "\n"
    "  --seeds N          simulate N seeds (default 100000) from --from S (default 1), on T threads\n"
    "  --expect-failure   succeed only if a seed fails (a weakened build), stopping at the first\n"
    "  --seed S           replay one seed and print its whole trace\n"
    "  --journals DIR     ... and write each book's incident journal to DIR/book-<n>.jsonl\n"
    "  --replay FILE      replay an incident journal (baton ctl incident export) into the leader's\n"
    "                     core and check every decision against the record (docs/assurance.md)\n"
    "  --since/--until MS the window of the replay, in ms since the epoch; --effects prints them\n"
    "\n"
    "exit: 0 every seed passed (or, with --expect-failure, one failed); 1 otherwise; 2 a usage or file error\n";

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seeds = 100000, from = 1;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  bool expect_failure = false;
  std::optional<std::uint64_t> replay;
  std::string journals_dir, replay_file;
  baton::journal::ReplayWindow window;
  bool effects = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::uint64_t {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "baton-sim: %s needs a number\n", a.c_str());
        std::exit(2);
      }
      return std::strtoull(argv[++i], nullptr, 10);
    };
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      return 0;
    } else if (a == "--seeds")
      seeds = value();
    else if (a == "--from")
      from = value();
    else if (a == "--threads")
      threads = static_cast<unsigned>(std::max<std::uint64_t>(1, value()));
    else if (a == "--seed")
      replay = value();
    else if (a == "--expect-failure")
      expect_failure = true;  // and stop at the first failure
    else if (a == "--journals" && i + 1 < argc)
      journals_dir = argv[++i];
    else if (a == "--replay" && i + 1 < argc)
      replay_file = argv[++i];
    else if (a == "--since")
      window.from_ms = static_cast<std::int64_t>(value());
    else if (a == "--until")
      window.to_ms = static_cast<std::int64_t>(value());
    else if (a == "--effects")
      effects = true;
    else {
      std::fprintf(stderr, "baton-sim: unknown argument '%s'\n%s", a.c_str(), usage);
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::off);
  if (!replay_file.empty()) {
    std::ifstream in(replay_file);
    if (!in) {
      std::fprintf(stderr, "baton-sim: cannot read %s\n", replay_file.c_str());
      return 2;
    }
    const auto r = baton::journal::replay(in, window, effects, std::cout);
    std::cout.flush();
    if (r.books == 0 && r.divergence.empty()) {
      std::fprintf(stderr, "baton-sim: %s holds no book of an incident journal (baton ctl incident export)\n",
                   replay_file.c_str());
      return 2;
    }
    std::printf("replay: %lld lines, %lld books, %lld inputs, %lld batches of effects (%lld effects) replayed, %s%s\n",
                static_cast<long long>(r.lines), static_cast<long long>(r.books), static_cast<long long>(r.inputs),
                static_cast<long long>(r.batches), static_cast<long long>(r.effects),
                r.divergence.empty() ? "every batch identical to the record" : "DIVERGED",
                r.gaps ? (", " + std::to_string(r.gaps) + " book(s) cut short by a gap in the journal").c_str() : "");
    if (!r.divergence.empty()) {
      std::printf("replay: line %lld: %s\n", static_cast<long long>(r.line), r.divergence.c_str());
      return 1;
    }
    return 0;
  }
  if (replay) {
    std::vector<std::string> trace;
    baton::sim::Journals journals;
    const auto o = baton::sim::simulate(*replay, &trace, journals_dir.empty() ? nullptr : &journals);
    for (const auto& line : trace) std::printf("%s\n", line.c_str());
    if (!journals_dir.empty()) {
      std::filesystem::create_directories(journals_dir);
      for (std::size_t b = 0; b < journals.size(); ++b) {
        std::ofstream out(journals_dir + "/book-" + std::to_string(b + 1) + ".jsonl");
        for (const auto& line : journals[b]) out << line << "\n";
      }
      std::printf("journals: %zu books in %s\n", journals.size(), journals_dir.c_str());
    }
    std::printf("%s", o.report.markdown().c_str());
    if (!o.ok()) print_failure(o);
    return o.ok() ? 0 : 1;
  }
  std::atomic<std::uint64_t> next{from};
  std::atomic<std::int64_t> runs{0}, failed{0}, simulated{0}, requeued{0}, granted{0};
  std::atomic<std::int64_t> partitioned{0}, partitioned_runs{0}, partitioned_epochs{0}, moves{0};
  std::atomic<std::int64_t> with_cron{0}, cron_runs{0}, cron_skips{0};
  std::atomic<std::int64_t> with_events{0}, events{0}, event_runs{0}, after_runs{0};
  std::mutex print;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (std::uint64_t s = next++; s < from + seeds; s = next++) {
        if (expect_failure && failed.load() > 0) break;
        const auto o = baton::sim::simulate(s);
        simulated++;
        runs += o.stats.at("runs");
        requeued += o.stats.at("requeued");
        granted += o.stats.at("granted");
        if (o.knobs.cron_every_s > 0) {
          with_cron++;
          cron_runs += o.stats.at("cron_runs");
          cron_skips += o.stats.at("cron_skips");
        }
        if (o.knobs.events > 0) {
          with_events++;
          events += o.stats.at("events");
          event_runs += o.stats.at("event_runs");
          after_runs += o.stats.at("after_runs");
        }
        if (o.stats.at("partitions") > 1) {
          partitioned++;
          partitioned_runs += o.stats.at("runs");
          partitioned_epochs += o.stats.at("epochs");
          moves += o.stats.at("worker_moves");
        }
        if (o.ok()) continue;
        failed++;
        std::lock_guard lock(print);
        print_failure(o);
      }
    });
  for (auto& t : pool) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "baton-sim: %lld seeds from %llu simulated: %lld failed; %lld simulated runs in %.1f s wall (%.0f runs/s, "
      "%.1f seeds/s, %u threads; %lld runs taken back from prefetch queues, %lld assignments carried the start)\n",
      static_cast<long long>(simulated.load()), static_cast<unsigned long long>(from),
      static_cast<long long>(failed.load()), static_cast<long long>(runs.load()), wall, runs.load() / wall,
      static_cast<double>(simulated.load()) / wall, threads, static_cast<long long>(requeued.load()),
      static_cast<long long>(granted.load()));
  std::printf(
      "baton-sim: %lld of them with partitioned leadership (2-4 leases): %lld runs, %lld elections, %lld workers moved "
      "between partitions\n",
      static_cast<long long>(partitioned.load()), static_cast<long long>(partitioned_runs.load()),
      static_cast<long long>(partitioned_epochs.load()), static_cast<long long>(moves.load()));
  std::printf(
      "baton-sim: %lld of them with a cron job (a slot every 1-3 s while faults last): %lld slots run, %lld "
      "skips recorded in the ledger\n",
      static_cast<long long>(with_cron.load()), static_cast<long long>(cron_runs.load()),
      static_cast<long long>(cron_skips.load()));
  std::printf(
      "baton-sim: %lld of them with events (3-15 posted, some twice): %lld events recorded, %lld runs of the "
      "subscribed job, %lld runs of the job that runs after it\n",
      static_cast<long long>(with_events.load()), static_cast<long long>(events.load()),
      static_cast<long long>(event_runs.load()), static_cast<long long>(after_runs.load()));
  const bool any_failed = failed.load() > 0;
  return expect_failure ? (any_failed ? 0 : 1) : (any_failed ? 1 : 0);
}
