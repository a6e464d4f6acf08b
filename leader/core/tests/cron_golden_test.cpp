// Cron next-fire times against a golden table from another implementation:
// leader/core/tests/data/cron_golden.tsv holds, for each expression and start
// instant, the next five fire times as computed once by croniter (Debian's
// python3-croniter 1.3.5, by scripts/cron-golden; the suite never runs it).
// UTC only: time zones and daylight-saving time are tested in
// cron_zone_test.cpp. The expressions croniter reads differently from Baton
// are left out of the table; scripts/cron-golden lists them.
#include "baton/leader_core/cron.h"

#include "cron_test_time.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

using namespace baton::leader_core;
using namespace std::chrono;

namespace {

using test::show;

constexpr std::size_t kFiresPerRow = 5;

// One line of the table: an expression, a start instant and the fire times
// that follow it, each strictly after the one before.
struct GoldenRow {
  int line = 0;
  std::string expr;
  sys_seconds start;
  std::vector<sys_seconds> fires;
};

// "EXPR<TAB>START<TAB>F1 F2 F3 F4 F5", times in Unix seconds; lines starting
// with '#' are comments. A malformed line fails the test, naming it.
std::vector<GoldenRow> read_golden(const std::string& path) {
  std::vector<GoldenRow> rows;
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot open " << path;
    return rows;
  }
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    if (text.empty() || text[0] == '#') continue;
    const std::size_t tab1 = text.find('\t');
    const std::size_t tab2 = tab1 == std::string::npos ? std::string::npos : text.find('\t', tab1 + 1);
    if (tab2 == std::string::npos) {
      ADD_FAILURE() << path << ":" << n << ": expected EXPR<TAB>START<TAB>F1 .. F5, got \"" << text << "\"";
      continue;
    }
    GoldenRow row;
    row.line = n;
    row.expr = text.substr(0, tab1);
    std::istringstream start(text.substr(tab1 + 1, tab2 - tab1 - 1));
    std::int64_t v = 0;
    if (!(start >> v)) {
      ADD_FAILURE() << path << ":" << n << ": START is not a number in \"" << text << "\"";
      continue;
    }
    row.start = sys_seconds{seconds{v}};
    std::istringstream fires(text.substr(tab2 + 1));
    while (fires >> v) row.fires.push_back(sys_seconds{seconds{v}});
    if (!fires.eof() || row.fires.size() != kFiresPerRow) {
      ADD_FAILURE() << path << ":" << n << ": expected " << kFiresPerRow << " fire times in \"" << text << "\"";
      continue;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

TEST(CronNextFire, AgreesWithCroniterOnAGoldenTable) {
  const std::string path = BATON_SOURCE_DIR "/leader/core/tests/data/cron_golden.tsv";
  const std::vector<GoldenRow> rows = read_golden(path);
  std::set<std::string> exprs;
  for (const GoldenRow& row : rows) {
    exprs.insert(row.expr);
    auto parsed = parse_cron(row.expr);
    if (const auto* e = std::get_if<CronParseError>(&parsed)) {
      ADD_FAILURE() << "\"" << row.expr << "\" (line " << row.line << ") failed to parse at " << e->position << ": "
                    << e->message;
      continue;
    }
    const CronSchedule& s = std::get<CronSchedule>(parsed);
    // Each fire is computed from the table's previous one, so one mismatch
    // does not hide or cause the others.
    sys_seconds after = row.start;
    for (std::size_t i = 0; i < row.fires.size(); ++i) {
      const std::optional<sys_seconds> got = next_fire(s, after);
      EXPECT_EQ(show(got), show(row.fires[i]))
          << "\"" << row.expr << "\" from " << show(row.start) << " (" << row.start.time_since_epoch().count()
          << "), fire " << i + 1 << " of " << row.fires.size() << ", after " << show(after) << " (line " << row.line
          << ")";
      after = row.fires[i];
    }
  }
  // An emptied or truncated table must not pass.
  EXPECT_GE(exprs.size(), 60u) << path;
  EXPECT_GE(rows.size(), 300u) << path;
}

}  // namespace
