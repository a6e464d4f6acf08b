// Named contexts in ctl's config file: listed, shown, chosen (only the
// current_context line rewritten, the file's mode kept), and the settings
// of the chosen one used for the call.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "baton/ctl/ctl.h"

namespace baton::ctl {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(CtlContexts, ListedShownChosenAndUsedForTheCall) {
  const std::string dir = ::testing::TempDir() + "/ctl-contexts-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir + "/.config/baton");
  const std::string file = dir + "/.config/baton/ctl.yaml";
  std::ofstream(file) << "# my clusters\noutput: json\ncurrent_context: prod\ncontexts:\n"
                         "  prod: {addr: '127.0.0.1:1', insecure: true}   # the real one\n"
                         "  staging: {addr: '127.0.0.1:2', insecure: true}\n";
  ::chmod(file.c_str(), 0600);
  std::map<std::string, std::string> vars{{"HOME", dir}};
  auto env = [&](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    return it == vars.end() ? std::nullopt : std::optional(it->second);
  };
  auto ctl = [&](std::vector<std::string> args) {
    std::ostringstream out, err;
    const int code = run_ctl(args, env, out, err);
    return std::make_tuple(code, out.str(), err.str());
  };
  auto [code, out, err] = ctl({"config", "get-contexts", "-o", "table"});
  EXPECT_EQ(code, exit_ok) << err;
  EXPECT_EQ(out, "* prod\n  staging\n");
  EXPECT_EQ(std::get<1>(ctl({"config", "current-context"})), "prod\n");
  // The chosen context's address is the one called (nothing listens on
  // port 1 or 2: the error names it).
  auto [c1, o1, e1] = ctl({"status"});
  EXPECT_EQ(c1, exit_unavailable);
  EXPECT_NE(e1.find("127.0.0.1:1"), std::string::npos) << e1;
  auto [c2, o2, e2] = ctl({"--context", "staging", "status"});
  EXPECT_NE(e2.find("127.0.0.1:2"), std::string::npos) << e2;
  vars["BATON_CONTEXT"] = "staging";
  EXPECT_EQ(std::get<1>(ctl({"config", "current-context"})), "staging\n");
  vars.erase("BATON_CONTEXT");
  // Chosen: the one line changes, the comments stay, the mode too.
  auto [c3, o3, e3] = ctl({"config", "use-context", "staging"});
  EXPECT_EQ(c3, exit_ok) << e3;
  EXPECT_EQ(read(file),
            "# my clusters\noutput: json\ncurrent_context: staging\ncontexts:\n"
            "  prod: {addr: '127.0.0.1:1', insecure: true}   # the real one\n"
            "  staging: {addr: '127.0.0.1:2', insecure: true}\n");
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(std::get<1>(ctl({"config", "current-context"})), "staging\n");
  // Unknown names are refused, naming the ones there are.
  auto [c4, o4, e4] = ctl({"config", "use-context", "qa"});
  EXPECT_EQ(c4, exit_not_found);
  EXPECT_NE(e4.find("no context 'qa' (contexts: prod, staging)"), std::string::npos) << e4;
  auto [c5, o5, e5] = ctl({"--context", "qa", "status"});
  EXPECT_EQ(c5, exit_usage);
  EXPECT_NE(e5.find("no context 'qa'"), std::string::npos) << e5;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace baton::ctl
