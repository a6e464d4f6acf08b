// docs/ctl.md lists every verb of `baton ctl`, and no other; every verb
// answers --help.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "baton/ctl/ctl.h"

namespace baton::ctl {
namespace {

TEST(CtlDocs, TheGuideListsEveryVerb) {
  std::ifstream in(std::string(BATON_SOURCE_DIR) + "/docs/ctl.md");
  std::set<std::string> documented;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0) inside = line == "## Verbs";
    if (!inside || line.rfind("| `", 0) != 0) continue;
    const std::string cell = line.substr(2, line.find(" | ") - 2);
    for (std::size_t at = cell.find('`'); at != std::string::npos; at = cell.find('`', cell.find('`', at + 1) + 1)) {
      std::istringstream words(cell.substr(at + 1, cell.find('`', at + 1) - at - 1));
      std::string verb;
      // The verb is the leading lower-case words; then come its arguments.
      for (std::string w; words >> w && std::islower(static_cast<unsigned char>(w[0]));)
        verb += (verb.empty() ? "" : " ") + w;
      documented.insert(verb);
    }
  }
  auto names = verb_names();
  EXPECT_EQ(documented, std::set<std::string>(names.begin(), names.end()));
  auto env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  for (const auto& v : names) {
    std::vector<std::string> args;
    std::istringstream words(v);
    for (std::string w; words >> w;) args.push_back(w);
    args.push_back("--help");
    std::ostringstream out, err;
    EXPECT_EQ(run_ctl(args, env, out, err), exit_ok) << v << ": " << err.str();
    EXPECT_NE(out.str().find("usage: baton ctl " + v), std::string::npos) << out.str();
  }
}

TEST(CtlDocs, UsageErrorsExitTwoWithoutCallingAnyone) {
  auto env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  std::ostringstream out, err;
  EXPECT_EQ(run_ctl({"frobnicate"}, env, out, err), exit_usage);
  EXPECT_EQ(run_ctl({"runs", "show"}, env, out, err), exit_usage) << "a missing argument";
  EXPECT_EQ(run_ctl({"runs", "list", "--limit"}, env, out, err), exit_usage) << "a flag without its value";
  EXPECT_EQ(run_ctl({"-o", "xml", "runs", "list"}, env, out, err), exit_usage);
  EXPECT_EQ(run_ctl({"--config", "/nonexistent/ctl.yaml", "runs", "list"}, env, out, err), exit_usage);
}

// An unknown verb is named with what was meant, in a line or two (issue
// 63: `runs logs` answered "unknown verb 'runs'" and every verb's line).
TEST(CtlDocs, AnUnknownSubVerbIsNamedWithTheVerbsItsWordTakes) {
  auto env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  std::ostringstream out, err;
  EXPECT_EQ(run_ctl({"runs", "logs", "42"}, env, out, err), exit_usage);
  EXPECT_EQ(err.str(),
            "baton ctl: unknown verb 'runs logs': runs takes list, watch, show, cancel, rerun (baton ctl runs VERB "
            "--help)\ndid you mean 'baton ctl logs'?\n");
  std::ostringstream out2, err2;
  EXPECT_EQ(run_ctl({"frobnicate"}, env, out2, err2), exit_usage);
  EXPECT_EQ(err2.str(), "baton ctl: unknown verb 'frobnicate' (baton ctl --help lists every verb)\n");
  EXPECT_TRUE(out.str().empty() && out2.str().empty());
}

}  // namespace
}  // namespace baton::ctl
