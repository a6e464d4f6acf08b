// What a task printed, shown by `ctl logs` on a terminal: escape sequences
// are shown as text, not obeyed (docs/security.md, "TLS"; docs/ctl.md).
#include <gtest/gtest.h>

#include <sstream>

#include "../src/render.h"

namespace baton::ctl {
namespace {

TEST(TerminalSafe, EscapeSequencesAndControlsAreShownNotObeyed) {
  // A colour, a cursor move, a window title (OSC ... BEL), a bell.
  EXPECT_EQ(terminal_safe("\x1b[31mred\x1b[0m"), "^[[31mred^[[0m");
  EXPECT_EQ(terminal_safe("\x1b[2J\x1b[H"), "^[[2J^[[H");
  EXPECT_EQ(terminal_safe("\x1b]0;owned\x07"), "^[]0;owned^G");
  EXPECT_EQ(terminal_safe("a\rb\bc\x7f"), "a^Mb^Hc^?");
  // The C1 controls, UTF-8 encoded (CSI is U+009B).
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "31m"),
            "\\u009b31m");
  // Lines, tabs and text in any script are left alone.
  EXPECT_EQ(terminal_safe("line 1\n\tline 2 é ü 日本\n"), "line 1\n\tline 2 é ü 日本\n");
  EXPECT_EQ(terminal_safe("\xc2\xa0nbsp"), "\xc2\xa0nbsp");
}

// A run's fields come from workers and tasks (an error message, a worker
// id): `ctl runs show`, the tables and `key: value` lines show them as text
// too. Checked failing with field() returning the raw string.
TEST(TerminalSafe, RunsShowTablesAndObjectsShowFieldsAsText) {
  const std::string evil = "\x1b]0;owned\x07\x1b[2Jgone";
  boost::json::object run{{"id", 7}, {"state", "FAILED"}, {"error_msg", evil}, {"assigned_worker_id", evil}};
  run["attempts"] = boost::json::array{boost::json::object{{"attempt", 1}, {"worker_id", evil}}};
  run["transitions"] = boost::json::array{};
  std::ostringstream shown;
  print_run(shown, run, false);
  print_object(shown, run);
  print_table(shown, worker_columns(), boost::json::array{boost::json::object{{"worker_id", evil}}});
  EXPECT_EQ(shown.str().find('\x1b'), std::string::npos) << shown.str();
  EXPECT_EQ(shown.str().find('\x07'), std::string::npos) << shown.str();
  EXPECT_NE(shown.str().find("error_msg: ^[]0;owned^G^[[2Jgone"), std::string::npos) << shown.str();
}

// What a run was given comes from whoever triggered it: its parameters'
// names and values are escaped as any field is, the rest of its payload and
// its result are JSON (whose control characters are \u escapes). Checked failing with print_given writing the raw
// values.
TEST(TerminalSafe, ARunsParametersPayloadAndResultAreShownAsText) {
  const std::string evil = "\x1b[2Jgone";
  boost::json::object run{{"id", 8}, {"state", "SUCCEEDED"}, {"duration_ms", 4250}};
  run["payload"] = boost::json::object{{"parameters", boost::json::object{{"region", evil}, {evil, 3}}},
                                       {"event", boost::json::object{{"kind", evil}}}};
  run["result"] = boost::json::object{{"rows", evil}};
  run["attempts"] = boost::json::array{};
  run["transitions"] = boost::json::array{};
  std::ostringstream shown;
  print_run(shown, run, false);
  EXPECT_EQ(shown.str().find('\x1b'), std::string::npos) << shown.str();
  EXPECT_NE(shown.str().find("\nPARAMETERS\nregion: ^[[2Jgone\n^[[2Jgone: 3\n"), std::string::npos) << shown.str();
  EXPECT_NE(shown.str().find("payload: {\"event\":{\"kind\":\"\\u001b[2Jgone\"}}\n"), std::string::npos) << shown.str();
  EXPECT_NE(shown.str().find("result: {\"rows\":\"\\u001b[2Jgone\"}\n"), std::string::npos) << shown.str();
  EXPECT_NE(shown.str().find("duration: 4.2s\n"), std::string::npos) << shown.str();

  boost::json::object none{{"id", 9}, {"payload", boost::json::object{}}};
  std::ostringstream plain;
  print_given(plain, none);
  EXPECT_EQ(plain.str(), "\nPARAMETERS\n(none given: the job's defaults)\n");
}

TEST(DurationText, AsAPersonReadsIt) {
  EXPECT_EQ(duration_text(0), "0ms");
  EXPECT_EQ(duration_text(350), "350ms");
  EXPECT_EQ(duration_text(4250), "4.2s");
  EXPECT_EQ(duration_text(59999), "59.9s");
  EXPECT_EQ(duration_text(187000), "3m7s");
  EXPECT_EQ(duration_text(5 * 3600 * 1000LL), "5h");
  EXPECT_EQ(duration_text(-5), "0ms");
  EXPECT_EQ(duration_of(boost::json::object{{"duration_ms", nullptr}}), "-");
}

}  // namespace
}  // namespace baton::ctl
