#include "baton/base/shell_script.h"

#include <gtest/gtest.h>

namespace baton {
namespace {

std::optional<std::size_t> script_of(std::vector<std::string> argv) { return shell_script_index(argv); }

TEST(ShellScript, FindsTheScriptOfAShellStartedWithC) {
  EXPECT_EQ(script_of({"sh", "-c", "echo hi"}), 2u);
  EXPECT_EQ(script_of({"/bin/bash", "-euc", "echo hi", "name", "arg"}), 2u);
  EXPECT_EQ(script_of({"bash", "-o", "pipefail", "-c", "echo hi"}), 4u);
  EXPECT_EQ(script_of({"/usr/bin/env", "-i", "A=1", "dash", "-c", "echo"}), 5u);
  EXPECT_EQ(script_of({"busybox", "sh", "-c", "echo"}), 3u);
  EXPECT_EQ(script_of({"zsh", "-x", "-c", "--", "echo"}), 4u);
  // Behind a wrapper, and su's command.
  EXPECT_EQ(script_of({"sudo", "-u", "app", "bash", "-c", "echo"}), 5u);
  EXPECT_EQ(script_of({"timeout", "10", "/bin/sh", "-c", "echo"}), 4u);
  EXPECT_EQ(script_of({"nice", "-n", "5", "env", "A=1", "sh", "-ec", "echo"}), 7u);
  EXPECT_EQ(script_of({"su", "app", "-c", "echo"}), 3u);
  EXPECT_EQ(script_of({"/sbin/runuser", "-u", "app", "--command", "echo"}), 4u);
}

TEST(ShellScript, NoScriptWithoutAShellOrWithoutC) {
  EXPECT_EQ(script_of({"/bin/echo", "-c", "x"}), std::nullopt);
  EXPECT_EQ(script_of({"sh", "script.sh", "-c"}), std::nullopt);  // -c after the operand is the script's argument
  EXPECT_EQ(script_of({"bash", "-e", "script.sh"}), std::nullopt);
  EXPECT_EQ(script_of({"sh", "-c"}), std::nullopt);
  EXPECT_EQ(script_of({}), std::nullopt);
  EXPECT_EQ(script_of({"shell", "-c", "x"}), std::nullopt);
  EXPECT_EQ(script_of({"su", "app"}), std::nullopt);
}

std::string quoted(const std::string& script) {
  auto r = quote_parameters_in_shell_script(script);
  if (auto* e = std::get_if<ShellScriptError>(&r)) return "error: " + e->message;
  return std::get<std::string>(r);
}

TEST(ShellScript, AParameterBecomesItsQuotedVariable) {
  const std::string x = "${BATON_PARAM_X?names a parameter the run does not have}";
  EXPECT_EQ(quoted("echo {{param.x}}"), "echo \"" + x + "\"");
  // Inside double quotes the expansion is already quoted.
  EXPECT_EQ(quoted("echo \"a {{param.x}} b\""), "echo \"a " + x + " b\"");
  // After a closed single-quoted part, and after an escaped quote.
  EXPECT_EQ(quoted("echo 'a' {{param.x}}"), "echo 'a' \"" + x + "\"");
  EXPECT_EQ(quoted("echo \\' {{param.x}}"), "echo \\' \"" + x + "\"");
  EXPECT_EQ(quoted("echo {{param.a-b}}"), "echo \"${BATON_PARAM_A_B?names a parameter the run does not have}\"");
  EXPECT_EQ(quoted("no parameters"), "no parameters");
}

TEST(ShellScript, InsideSingleQuotesOrUnterminatedIsRefused) {
  EXPECT_EQ(quoted("echo '{{param.x}}'"),
            "error: {{param.x}} at offset 6 is inside single quotes, where the shell expands nothing: move it "
            "outside them");
  EXPECT_EQ(quoted("echo {{param.x"), "error: unterminated \"{{param.\" at offset 5 (write {{param.NAME}})");
}

}  // namespace
}  // namespace baton
