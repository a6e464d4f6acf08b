// The incident journal against simulated histories: every book the
// simulator's nodes ran (the production RunBook, through crashes, pauses,
// partitions, lost replies and fenced writes) replays from its journal to
// the same effects, batch by batch; and a journal changed after the fact is
// caught at the batch the change makes different.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <boost/json.hpp>

#include <cstdlib>
#include <sstream>
#include <string>

#include "baton/journal/replay.h"
#include "baton/sim/simulation.h"

namespace baton::sim {
namespace {

journal::ReplayReport replay_lines(const std::vector<std::string>& lines, std::string* shown = nullptr) {
  std::stringstream in, out;
  for (const auto& l : lines) in << l << "\n";
  auto r = journal::replay(in, {}, false, out);
  if (shown) *shown = out.str();
  return r;
}

TEST(JournalReplay, EveryBookOfASimulatedHistoryReplaysToTheSameEffects) {
  spdlog::set_level(spdlog::level::off);
  const char* env = std::getenv("BATON_SIM_JOURNAL_SEEDS");
  const std::uint64_t seeds = env && *env ? std::strtoull(env, nullptr, 10) : 40;
  std::int64_t books = 0, batches = 0, effects = 0, inputs = 0;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    Journals journals;
    simulate(seed, nullptr, &journals);
    for (std::size_t b = 0; b < journals.size(); ++b) {
      const auto r = replay_lines(journals[b]);
      ASSERT_EQ(r.divergence, "") << "seed " << seed << " book " << b + 1 << " line " << r.line << " (baton-sim --seed "
                                  << seed << " --journals DIR; baton-sim --replay DIR/book-" << b + 1 << ".jsonl)";
      EXPECT_EQ(r.books, 1);
      books++;
      batches += r.batches;
      effects += r.effects;
      inputs += r.inputs;
    }
  }
  std::printf("journal replay: %llu seeds, %lld books, %lld inputs, %lld batches, %lld effects, all identical\n",
              static_cast<unsigned long long>(seeds), static_cast<long long>(books), static_cast<long long>(inputs),
              static_cast<long long>(batches), static_cast<long long>(effects));
  EXPECT_GE(books, static_cast<std::int64_t>(seeds));
  EXPECT_GT(batches, books * 10);
}

TEST(JournalReplay, AResultChangedAfterTheFactIsCaughtAtTheBatchItChanges) {
  spdlog::set_level(spdlog::level::off);
  Journals journals;
  simulate(3, nullptr, &journals);
  ASSERT_FALSE(journals.empty());
  auto& lines = journals.front();
  // The first read of due runs that found some, made to find none: the
  // runs it would have assigned are not, and the batch after it differs.
  std::size_t changed = 0;
  for (std::size_t i = 0; i < lines.size() && !changed; ++i) {
    auto line = boost::json::parse(lines[i]).as_object();
    if (line.at("k") != "result" || line.at("type") != "due" || !line.contains("ok") ||
        line.at("ok").as_array().empty())
      continue;
    line["ok"] = boost::json::array{};
    lines[i] = boost::json::serialize(line);
    changed = i + 1;
  }
  ASSERT_NE(changed, 0u) << "no read of due runs found any";
  const auto r = replay_lines(lines);
  EXPECT_NE(r.divergence, "");
  EXPECT_GT(r.line, static_cast<std::int64_t>(changed)) << r.divergence;
  EXPECT_NE(r.divergence.find("effects differ"), std::string::npos) << r.divergence;
}

TEST(JournalReplay, AJournalThatBeginsInsideABookIsRefusedAndNamed) {
  spdlog::set_level(spdlog::level::off);
  Journals journals;
  simulate(3, nullptr, &journals);
  ASSERT_FALSE(journals.empty());
  std::vector<std::string> tail(journals.front().begin() + 5, journals.front().end());
  const auto r = replay_lines(tail);
  EXPECT_NE(r.divergence.find("begins inside a book"), std::string::npos) << r.divergence;
  EXPECT_EQ(r.line, 1);
  const auto garbage = replay_lines({journals.front().front(), "{not json"});
  EXPECT_NE(garbage.divergence.find("does not parse"), std::string::npos) << garbage.divergence;
  EXPECT_EQ(garbage.line, 2);
}

TEST(JournalReplay, TheAccountShowsTheBooksLogLinesAsTheNodeLoggedThem) {
  spdlog::set_level(spdlog::level::off);
  Journals journals;
  std::vector<std::string> trace;
  simulate(3, &trace, &journals);
  ASSERT_FALSE(journals.empty());
  std::string shown;
  const auto r = replay_lines(journals.front(), &shown);
  ASSERT_EQ(r.divergence, "");
  EXPECT_NE(shown.find(" level=info process=n"), std::string::npos) << shown.substr(0, 500);
  EXPECT_NE(shown.find(" event=control_loop_start node=n"), std::string::npos) << shown.substr(0, 500);
  EXPECT_GT(r.shown, 0);
}

}  // namespace
}  // namespace baton::sim
