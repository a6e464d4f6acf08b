// Parameters into tasks: the environment names, {{param.NAME}} substitution
// (and its errors), psql variable names.
#include "baton/worker_core/task_parameters.h"

#include <gtest/gtest.h>

using namespace baton::worker_core;

TEST(TaskParameters, EnvironmentNames) {
  EXPECT_EQ(parameter_env_name("region"), "BATON_PARAM_REGION");
  EXPECT_EQ(parameter_env_name("upstream_run_id"), "BATON_PARAM_UPSTREAM_RUN_ID");
  EXPECT_EQ(parameter_env_name("a-b.c d"), "BATON_PARAM_A_B_C_D");
}

TEST(TaskParameters, SubstitutionReplacesEveryReferenceAndNothingElse) {
  const Parameters p{{"region", "eu"}, {"n", "3"}, {"evil", "x; rm -rf / $(id)"}};
  EXPECT_EQ(std::get<std::string>(substitute_parameters("--region={{param.region}}", p)), "--region=eu");
  EXPECT_EQ(std::get<std::string>(substitute_parameters("{{param.n}}{{param.n}}", p)), "33");
  EXPECT_EQ(std::get<std::string>(substitute_parameters("{{param.evil}}", p)), "x; rm -rf / $(id)")
      << "a value stays one argument: there is no shell to parse it";
  EXPECT_EQ(std::get<std::string>(substitute_parameters("{{other}} {not}", p)), "{{other}} {not}");
  EXPECT_EQ(std::get<std::string>(substitute_parameters("", p)), "");
}

TEST(TaskParameters, SubstitutionErrorsNameTheProblem) {
  const Parameters p{{"region", "eu"}};
  auto unknown = substitute_parameters("x {{param.zone}}", p);
  ASSERT_TRUE(std::holds_alternative<SubstitutionError>(unknown));
  EXPECT_NE(std::get<SubstitutionError>(unknown).message.find("{{param.zone}} names a parameter the run does not have"),
            std::string::npos);
  auto open = substitute_parameters("x {{param.region", p);
  ASSERT_TRUE(std::holds_alternative<SubstitutionError>(open));
  EXPECT_NE(std::get<SubstitutionError>(open).message.find("unterminated"), std::string::npos);
}

TEST(TaskParameters, PsqlVariableNames) {
  EXPECT_TRUE(is_psql_variable_name("region"));
  EXPECT_TRUE(is_psql_variable_name("_x1"));
  EXPECT_FALSE(is_psql_variable_name("1x"));
  EXPECT_FALSE(is_psql_variable_name("a-b"));
  EXPECT_FALSE(is_psql_variable_name(""));
}
