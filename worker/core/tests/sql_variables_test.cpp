#include "baton/worker_core/sql_variables.h"

#include <gtest/gtest.h>

using namespace baton::worker_core;

namespace {
std::string ok(const std::string& sql, const Parameters& p) {
  auto r = interpolate_sql_variables(sql, p);
  if (auto* e = std::get_if<SqlVariableError>(&r)) return "error: " + e->message;
  return std::get<std::string>(r);
}
}  // namespace

TEST(SqlVariables, LiteralsAndIdentifiersAreQuotedNeverSpliced) {
  const Parameters p{{"name", "O'Brien'); DROP TABLE runs; --"}, {"table", "My \"Table\""}, {"n", "3"}};
  EXPECT_EQ(ok("SELECT :'name'", p), "SELECT 'O''Brien''); DROP TABLE runs; --'");
  EXPECT_EQ(ok("SELECT * FROM :\"table\" LIMIT :'n'::int", p), "SELECT * FROM \"My \"\"Table\"\"\" LIMIT '3'::int");
}

// E:'x' makes an escape string, in which a backslash escapes what follows:
// `\'` would end the literal early and splice the rest (security review
// L7). Backslashes are doubled there too; a plain :'x' keeps them as they
// are (standard_conforming_strings is on).
TEST(SqlVariables, AnEscapeStringsBackslashesAreDoubledToo) {
  const Parameters p{{"v", "a\\'; DROP TABLE runs; --"}};
  EXPECT_EQ(ok("SELECT E:'v'", p), "SELECT E'a\\\\''; DROP TABLE runs; --'");
  EXPECT_EQ(ok("SELECT e:'v'", p), "SELECT e'a\\\\''; DROP TABLE runs; --'");
  EXPECT_EQ(ok("SELECT :'v'", p), "SELECT 'a\\''; DROP TABLE runs; --'");
  EXPECT_EQ(ok("SELECT CASE WHEN false THEN '' ELSE:'v' END", p),
            "SELECT CASE WHEN false THEN '' ELSE'a\\''; DROP TABLE runs; --' END")
      << "an E that ends a word is not an escape string's";
}

TEST(SqlVariables, NothingIsReplacedInsideStringsIdentifiersCommentsOrDollarQuotes) {
  const Parameters p{{"x", "X"}};
  EXPECT_EQ(ok("SELECT ':''x''', \":'x'\", E'\\':''x''', 1 -- :'x'\n, :'x'", p),
            "SELECT ':''x''', \":'x'\", E'\\':''x''', 1 -- :'x'\n, 'X'");
  EXPECT_EQ(ok("SELECT 1 /* :'x' /* nested :'x' */ still :'x' */, :'x'", p),
            "SELECT 1 /* :'x' /* nested :'x' */ still :'x' */, 'X'");
  EXPECT_EQ(ok("DO $body$ BEGIN PERFORM :'x'; END $body$; SELECT $$:'x'$$, :'x', $1", p),
            "DO $body$ BEGIN PERFORM :'x'; END $body$; SELECT $$:'x'$$, 'X', $1");
  EXPECT_EQ(ok("SELECT now()::date, a[1:2], x::text", p), "SELECT now()::date, a[1:2], x::text");
}

TEST(SqlVariables, ARawOrUnknownReferenceIsAnErrorNamingIt) {
  const Parameters p{{"x", "1; DROP TABLE t"}};
  EXPECT_EQ(
      ok("SELECT :x", p),
      "error: :x at offset 7 would splice the raw value into the SQL: write :'x' (a quoted literal) or :\"x\" (an "
      "identifier)");
  EXPECT_EQ(ok("SELECT :'y'", p), "error: :'y' at offset 7 names a parameter the run does not have");
  EXPECT_EQ(ok("SELECT :y, x:y", p), "SELECT :y, x:y") << "not parameters: left for the server to judge";
}
