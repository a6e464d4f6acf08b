#include "baton/base/redact.h"

#include <gtest/gtest.h>

using baton::redact_url;

TEST(Redact, PasswordsLeaveAndTheRestStays) {
  EXPECT_EQ(redact_url("postgresql://baton:s3cr3t@db1:5432/baton"), "postgresql://baton:***@db1:5432/baton");
  EXPECT_EQ(redact_url("postgres:/baton:s3cr3t@db1/baton"), "postgres:/baton:***@db1/baton") << "malformed";
  EXPECT_EQ(redact_url("baton:s3cr3t@db1"), "baton:***@db1");
  EXPECT_EQ(redact_url("postgresql://db1/baton?user=u&password=s3cr3t&sslmode=require"),
            "postgresql://db1/baton?user=u&password=***&sslmode=require");
  EXPECT_EQ(redact_url("host=db1 user=u PASSWORD=s3cr3t dbname=baton"), "host=db1 user=u PASSWORD=*** dbname=baton");
  EXPECT_EQ(redact_url("postgresql://baton@db1/baton"), "postgresql://baton@db1/baton");
  EXPECT_EQ(redact_url("postgresql://db1/x@y"), "postgresql://db1/x@y");
}
