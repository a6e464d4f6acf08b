// `baton verify`: every invariant of the chaos checker that the database's
// records support, over the runs that finished since a time (or all), read
// and judged in slices by the same code as the leader's sweep
// (verify::verify_all, verify::judge_slice). Read-only: it records nothing
// (the leader's sweep records what it finds; docs/assurance.md).
#include "verify_command.h"

#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>

#include "baton/base/json_text.h"
#include "baton/node/node_config.h"
#include "baton/store_pg/pg_session.h"
#include "baton/store_pg/pg_verify_store.h"
#include "baton/verify/history_sweep.h"
#include "flag_value.h"

namespace baton::verify_command {

const char* const usage =
    "usage: baton verify --config FILE | --database-url URL [--since WHEN] [--json] [--slice N]\n"
    "                    [--owner-grace DURATION]\n"
    "       baton verify --receipts --config FILE | --database-url URL [--json] [--deadline DURATION]\n"
    "                    [--anchors KEPT]\n"
    "       baton verify --receipts --export-anchors --config FILE | --database-url URL\n"
    "\n"
    "Checks the runs that finished since WHEN (all of them without it) against every invariant\n"
    "of the chaos checker that the database's records support: one successful execution per\n"
    "run, one run per cron slot, no overlap where the job forbids it, forward-only transitions,\n"
    "every write's epoch the leader's at its commit, no RUNNING run without a live worker or a\n"
    "CONFIRMING deadline, events and idempotency keys once (docs/assurance.md). Read-only.\n"
    "WHEN: an ISO 8601 UTC time (2026-11-29T08:00:00Z), unix seconds, or an age (90m, 24h, 7d).\n"
    "--config: a node's config (its database URL, continuation margin and verify.owner_grace).\n"
    "--receipts: instead, recompute every chain of receipts (the run ends, late reports and audit\n"
    "entries, each chained to the one before, and each epoch's checkpoint) from the rows, and name\n"
    "the first link that does not hold: a row edited, deleted or reordered (docs/assurance.md,\n"
    "\"Receipts\"). --deadline: how long that pass may take (default 30m; a million ends take\n"
    "about 10 s).\n"
    "--anchors KEPT: also check the chains against anchors kept outside the database: a node's\n"
    "log (its receipts_head and receipts_checkpoint lines; other lines are passed over) or an\n"
    "earlier --export-anchors. A chain rewritten consistently, link, later links and head\n"
    "together, reads as holding; it still differs from what was kept (docs/assurance.md,\n"
    "\"Anchors\").\n"
    "--export-anchors: print every chain's head and every epoch's checkpoint, one line each, to\n"
    "keep.\n"
    "Exit 0: no violation; 1: violations (each printed with its evidence); 2: bad arguments or\n"
    "the database.\n";

namespace {

/// "24h", "90m", "7d", "30s" in milliseconds; nullopt otherwise.
std::optional<std::int64_t> age_ms(const std::string& s) {
  if (s.size() < 2) return std::nullopt;
  const char unit = s.back();
  const std::string digits = s.substr(0, s.size() - 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) return std::nullopt;
  const std::int64_t n = std::stoll(digits);
  switch (unit) {
    case 's': return n * 1000;
    case 'm': return n * 60'000;
    case 'h': return n * 3'600'000;
    case 'd': return n * 86'400'000;
    default: return std::nullopt;
  }
}

/// WHEN as unix microseconds, or an error naming what was wrong.
std::optional<std::int64_t> since_us(const std::string& when, std::string& error) {
  const std::int64_t now_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  if (auto ms = age_ms(when)) return now_us - *ms * 1000;
  if (!when.empty() && when.find_first_not_of("0123456789") == std::string::npos && when.size() <= 12)
    return std::stoll(when) * 1'000'000;
  std::tm tm{};
  const char* end = strptime(when.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end && (std::string(end) == "Z" || std::string(end) == "+00:00")) return std::int64_t{timegm(&tm)} * 1'000'000;
  error = "--since must be an ISO 8601 UTC time (2026-11-29T08:00:00Z), unix seconds or an age (24h), got '" +
          when.substr(0, 64) + "'";
  return std::nullopt;
}

/// The anchors kept in `path`, or nullopt with the reason printed.
std::optional<std::vector<store::ReceiptAnchor>> read_anchors(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "baton: verify: --anchors " << path.substr(0, 200) << ": cannot be read\n";
    return std::nullopt;
  }
  std::vector<store::ReceiptAnchor> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    auto a = store::parse_anchor_line(line, number);
    if (!a) continue;
    if (!*a) {
      std::cerr << "baton: verify: --anchors " << path.substr(0, 200) << ": " << a->error().message << "\n";
      return std::nullopt;
    }
    out.push_back(std::move(**a));
  }
  if (out.empty()) {
    std::cerr << "baton: verify: --anchors " << path.substr(0, 200)
              << ": holds no receipts_head or receipts_checkpoint line (a node's log, or what --export-anchors "
                 "printed)\n";
    return std::nullopt;
  }
  return out;
}

/// `baton verify --receipts --export-anchors`.
int export_anchors(const std::string& url) {
  store::pg::PgVerifyStore store(url, "baton-verify");
  auto anchors = store.receipt_anchors();
  if (!anchors) {
    std::cerr << "baton: verify: database " << store::pg::describe_url(url) << ": " << anchors.error().message << "\n";
    return 2;
  }
  for (const auto& a : *anchors) std::cout << store::anchor_line(a) << "\n";
  return 0;
}

/// `baton verify --receipts`, and against the anchors kept in `anchors_file`
/// when one is named.
int check_receipts(const std::string& url, bool as_json, std::int64_t deadline_ms, const std::string& deadline,
                   const std::string& anchors_file) {
  constexpr int listed = 20;
  std::vector<store::ReceiptAnchor> kept;
  if (!anchors_file.empty()) {
    auto read = read_anchors(anchors_file);
    if (!read) return 2;
    kept = std::move(*read);
  }
  store::pg::PgVerifyStore store(url, "baton-verify");
  auto failed = [&](const Error& e) {
    std::cerr << "baton: verify: database " << store::pg::describe_url(url) << ": " << e.message;
    if (e.message.find("statement timeout") != std::string::npos)
      std::cerr << " (the pass took longer than --deadline " << deadline << "; give it a longer one)";
    std::cerr << "\n";
    return 2;
  };
  auto report = store.check_receipts(listed, Millis{deadline_ms});
  if (!report) return failed(report.error());
  store::ReceiptsReport r = std::move(*report);
  store::AnchorsReport against;
  if (!kept.empty()) {
    auto checked = store.check_anchors(kept, listed, Millis{deadline_ms});
    if (!checked) return failed(checked.error());
    against = std::move(*checked);
    // What the kept anchors find comes first: a consistent rewrite shows
    // there and nowhere else.
    for (std::size_t i = 0; i < r.problems.size() && against.problems.size() < static_cast<std::size_t>(listed); ++i)
      against.problems.push_back(r.problems[i]);
    r.problems = std::move(against.problems);
    r.problems_total += against.problems_total;
  }
  if (as_json) {
    std::string problems;
    for (const auto& p : r.problems)
      problems += std::string(problems.empty() ? "" : ",") + "{\"kind\":" + json_quote(p.kind) +
                  ",\"epoch\":" + std::to_string(p.epoch) + ",\"lane\":" + json_quote(p.lane) +
                  ",\"link\":" + std::to_string(p.seq) + ",\"problem\":" + json_quote(p.problem) + "}";
    std::cout << "{\"ok\":" << (r.problems_total == 0 ? "true" : "false") << ",\"links\":" << r.links
              << ",\"ends\":" << r.ends << ",\"audit_entries\":" << r.audit_entries
              << ",\"checkpoints\":" << r.checkpoints << ",\"anchors_checked\":" << against.checked
              << ",\"problems_total\":" << r.problems_total << ",\"problems\":[" << problems << "]}\n";
    return r.problems_total == 0 ? 0 : 1;
  }
  const std::string counts = std::to_string(r.links) + " links (" + std::to_string(r.ends) + " ends), " +
                             std::to_string(r.audit_entries) + " audit entries, " + std::to_string(r.checkpoints) +
                             " epoch checkpoints" +
                             (kept.empty() ? "" : ", " + std::to_string(against.checked) + " kept anchors");
  if (r.problems_total == 0) {
    std::cout << "OK: the receipts hold: " << counts << "\n";
    return 0;
  }
  auto where = [](const store::ReceiptProblem& p) {
    if (p.kind == "checkpoint") return "the checkpoint of epoch " + std::to_string(p.epoch);
    if (p.seq == 0) return p.kind + ", epoch " + std::to_string(p.epoch);
    return p.kind + " chain " + json_quote(p.lane) + (p.kind == "runs" ? " of epoch " + std::to_string(p.epoch) : "") +
           (p.kind == "runs" ? ", link " : ", entry ") + std::to_string(p.seq);
  };
  std::cout << "VIOLATED: " << r.problems_total << " problem(s) in " << counts << "\n";
  std::cout << "first: " << where(r.problems.front()) << ": " << r.problems.front().problem << "\n";
  for (std::size_t i = 1; i < r.problems.size(); ++i)
    std::cout << "  " << where(r.problems[i]) << ": " << r.problems[i].problem << "\n";
  if (r.problems_total > static_cast<std::int64_t>(r.problems.size()))
    std::cout << "  ... and " << (r.problems_total - static_cast<std::int64_t>(r.problems.size())) << " more\n";
  return 1;
}

}  // namespace

int run(const std::vector<std::string>& args) {
  std::string file, url, since, slice = "2000", grace, deadline, anchors;
  bool as_json = false, receipts = false, export_kept = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& flag, std::string& into) { return cmd::flag_value(args, i, flag, into); };
    if (a == "--json") {
      as_json = true;
      continue;
    }
    if (a == "--receipts") {
      receipts = true;
      continue;
    }
    if (a == "--export-anchors") {
      export_kept = true;
      continue;
    }
    if (!value("--config", file) && !value("--database-url", url) && !value("--since", since) &&
        !value("--slice", slice) && !value("--owner-grace", grace) && !value("--deadline", deadline) &&
        !value("--anchors", anchors)) {
      std::cerr << "baton: verify: unexpected argument '" << a.substr(0, 64) << "'\n" << usage;
      return 2;
    }
  }
  if (file.empty() == url.empty()) {
    std::cerr << "baton: verify: give one of --config FILE and --database-url URL\n" << usage;
    return 2;
  }
  verify::CheckSettings check;
  check.continuation_margin_ms = node::NodeConfig{}.runtime.continuation_margin.count();
  check.owner_grace_ms = node::NodeConfig{}.verify.owner_grace.count();
  if (!file.empty()) {
    auto cfg = node::load_node_config(file);
    if (!cfg) {
      std::cerr << "baton: verify: invalid config:\n" << cfg.error().message << "\n";
      return 2;
    }
    url = cfg->database_url;
    check.continuation_margin_ms = cfg->runtime.continuation_margin.count();
    check.owner_grace_ms = cfg->verify.owner_grace.count();
  }
  if ((export_kept || !anchors.empty()) && !receipts) {
    std::cerr << "baton: verify: --anchors and --export-anchors are for --receipts\n";
    return 2;
  }
  if (receipts) {
    if (export_kept) {
      if (!anchors.empty() || as_json || !deadline.empty() || !since.empty() || !grace.empty() || slice != "2000") {
        std::cerr << "baton: verify: --export-anchors prints lines to keep: it takes no other option\n";
        return 2;
      }
      return export_anchors(url);
    }
    if (!since.empty() || !grace.empty() || slice != "2000") {
      std::cerr << "baton: verify: --receipts checks every chain whole: it takes no --since, --slice or "
                   "--owner-grace\n";
      return 2;
    }
    std::int64_t deadline_ms = store::pg::PgVerifyStore::default_receipts_deadline.count();
    if (!deadline.empty()) {
      auto ms = age_ms(deadline);
      if (!ms || *ms <= 0 || *ms > 7LL * 24 * 3600 * 1000) {
        std::cerr << "baton: verify: --deadline must be a duration from 1s to 7d (90s, 30m, 2h), got '"
                  << deadline.substr(0, 64) << "'\n";
        return 2;
      }
      deadline_ms = *ms;
    } else {
      deadline = std::to_string(deadline_ms / 60'000) + "m";  // the default's name in a message
    }
    return check_receipts(url, as_json, deadline_ms, deadline, anchors);
  }
  if (!deadline.empty()) {
    std::cerr << "baton: verify: --deadline is for --receipts (each slice of the runs' pass is a call of its own)\n";
    return 2;
  }
  if (!grace.empty()) {
    auto ms = age_ms(grace);
    if (!ms || *ms <= 0) {
      std::cerr << "baton: verify: --owner-grace must be a duration (60s, 5m), got '" << grace.substr(0, 64) << "'\n";
      return 2;
    }
    check.owner_grace_ms = *ms;
  }
  if (slice.find_first_not_of("0123456789") != std::string::npos || slice.empty() || slice.size() > 6 ||
      std::stoi(slice) < 1) {
    std::cerr << "baton: verify: --slice must be a number of runs from 1 to 999999, got '" << slice.substr(0, 64)
              << "'\n";
    return 2;
  }
  store::VerifyCursor from;
  if (!since.empty()) {
    std::string error;
    auto us = since_us(since, error);
    if (!us) {
      std::cerr << "baton: verify: " << error << "\n";
      return 2;
    }
    from.finished_us = *us;
  }
  store::pg::PgVerifyStore store(url, "baton-verify");
  auto tally = verify::verify_all(store, from, std::stoi(slice), check);
  if (!tally) {
    std::cerr << "baton: verify: database " << store::pg::describe_url(url) << ": " << tally.error().message << "\n";
    return 2;
  }
  std::cout << (as_json ? tally->json() : tally->text());
  return tally->ok() ? 0 : 1;
}

}  // namespace baton::verify_command
