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
  // What `--context <TAB>` offers (the completion scripts ask this).
  EXPECT_EQ(std::get<1>(ctl({"__complete", "contexts"})), "prod\nstaging\n");
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

// Security review N-L4: a context's credential is its own. The top
// level's is never sent to a context's address, a context's token_file is
// not beaten by the top level's token, one level naming both is refused,
// and a config file holding a token that others can read is warned of.
TEST(CtlContexts, AContextNeverSendsTheTopLevelsCredential) {
  const std::string dir = ::testing::TempDir() + "/ctl-credentials-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/ctl.yaml";
  auto ctl = [&](const std::string& yaml, std::vector<std::string> args, int mode = 0600) {
    std::ofstream(file, std::ios::trunc) << yaml;
    ::chmod(file.c_str(), mode);
    args.insert(args.begin(), {"--config", file});
    std::ostringstream out, err;
    const int code = run_ctl(
        args, [](const std::string&) { return std::optional<std::string>{}; }, out, err);
    return std::make_pair(code, err.str());
  };
  // The top level's token file is unreadable: a call that used it would
  // stop there; the context's call goes on to its own address.
  const std::string top =
      "token_file: " + dir + "/top.token\ncontexts:\n  staging: {addr: '127.0.0.1:2', insecure: true}\n";
  auto [c1, e1] = ctl(top, {"--context", "staging", "status"});
  EXPECT_EQ(c1, exit_unavailable) << e1;
  EXPECT_EQ(e1.find("top.token"), std::string::npos) << e1;
  EXPECT_NE(e1.find("note: context 'staging' names no token or token_file; the top level's is not sent"),
            std::string::npos)
      << e1;
  auto [c2, e2] = ctl(top + "  prod: {addr: '127.0.0.1:1', insecure: true}\n", {"status"});
  EXPECT_EQ(c2, exit_usage) << "no context chosen: the top level's own credential";
  EXPECT_NE(e2.find("cannot read token file " + dir + "/top.token"), std::string::npos) << e2;
  // A context's token_file, under a top-level token: the context's.
  auto [c3, e3] =
      ctl("token: top-secret-token\ncontexts:\n  staging: {addr: '127.0.0.1:2', insecure: true, token_file: " + dir +
              "/staging.token}\n",
          {"--context", "staging", "status"});
  EXPECT_EQ(c3, exit_usage);
  EXPECT_NE(e3.find("cannot read token file " + dir + "/staging.token"), std::string::npos) << e3;
  // One level naming both.
  auto [c4, e4] = ctl("token: a\ntoken_file: /x\n", {"status"});
  EXPECT_EQ(c4, exit_usage);
  EXPECT_NE(e4.find(file + ": token and token_file are one setting: give one of them"), std::string::npos) << e4;
  // A token in a file others can read (L10).
  auto [c5, e5] = ctl("addr: '127.0.0.1:1'\ninsecure: true\ntoken: a-token-of-sixteen\n", {"status"}, 0644);
  EXPECT_NE(e5.find("warning: " + file + " holds a token and is readable by others (mode 644): chmod 600"),
            std::string::npos)
      << e5;
  auto [c6, e6] = ctl("addr: '127.0.0.1:1'\ninsecure: true\ntoken: a-token-of-sixteen\n", {"status"}, 0600);
  EXPECT_EQ(e6.find("readable by others"), std::string::npos) << e6;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace baton::ctl
