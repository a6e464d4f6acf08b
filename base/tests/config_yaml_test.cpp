#include "baton/base/config_yaml.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace baton;

TEST(ConfigYaml, UnknownKeysAndBadValuesNameKeyAndFile) {
  ConfigErrors errors("node.yaml");
  ConfigMap top(YAML::Load("a: 1\nsub: {d: 3x, e: true}\ntypo: 2\n"), "", errors);
  EXPECT_EQ(top.integer("a", 0, 10), 1);
  ConfigMap sub = top.map("sub");
  EXPECT_FALSE(sub.duration("d").has_value());
  EXPECT_EQ(sub.boolean("e"), true);
  sub.reject_unknown_keys();
  top.reject_unknown_keys();
  ASSERT_EQ(errors.messages().size(), 2u) << errors.joined();
  EXPECT_NE(errors.joined().find("node.yaml: sub.d: '3x' has unknown unit"), std::string::npos) << errors.joined();
  EXPECT_NE(errors.joined().find("node.yaml: typo: unknown key"), std::string::npos) << errors.joined();
}

TEST(ConfigYaml, RequiredAndRangeChecks) {
  ConfigErrors errors("w.yaml");
  ConfigMap top(YAML::Load("n: 99\nflag: maybe\n"), "", errors);
  EXPECT_FALSE(top.string("needed", true).has_value());
  EXPECT_FALSE(top.integer("n", 0, 10).has_value());
  EXPECT_FALSE(top.boolean("flag").has_value());
  EXPECT_EQ(errors.messages().size(), 3u) << errors.joined();
  EXPECT_NE(errors.joined().find("w.yaml: needed: is required"), std::string::npos);
}

TEST(ConfigYaml, SyntaxErrorNamesFileAndLine) {
  auto r = load_yaml_file("/nonexistent/file.yaml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("/nonexistent/file.yaml: cannot open"), std::string::npos);
}

TEST(ConfigPath, RelativePathsAreTheFilesAndCredentialsComeFromSystemd) {
  EXPECT_EQ(baton::resolve_config_path("/etc/baton/node.yaml", "admin.token"), "/etc/baton/admin.token");
  EXPECT_EQ(baton::resolve_config_path("/etc/baton/node.yaml", "/srv/a.token"), "/srv/a.token");
  ::unsetenv("CREDENTIALS_DIRECTORY");
  EXPECT_EQ(baton::resolve_config_path("/etc/baton/node.yaml", "${CREDENTIALS_DIRECTORY}/admin-token"),
            "${CREDENTIALS_DIRECTORY}/admin-token");
  ::setenv("CREDENTIALS_DIRECTORY", "/run/credentials/baton-node.service", 1);
  EXPECT_EQ(baton::resolve_config_path("/etc/baton/node.yaml", "${CREDENTIALS_DIRECTORY}/admin-token"),
            "/run/credentials/baton-node.service/admin-token");
  ::unsetenv("CREDENTIALS_DIRECTORY");
}
