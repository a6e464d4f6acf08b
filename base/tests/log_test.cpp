// Log lines a shipper can read (base/log.h): logfmt text with the event as a
// key, JSON lines with the fields named, UTC timestamps with their zone,
// journald priorities under systemd.
#include "baton/base/log.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace baton {
namespace {

namespace json = boost::json;

const auto logged_at = std::chrono::system_clock::time_point(std::chrono::microseconds(1795923612123456));

TEST(LogLine, TextIsLogfmtWithTheEventAsAKeyAndAZonedTimestamp) {
  EXPECT_EQ(format_log_line(LogFormat::text, "n1", spdlog::level::info, logged_at, "role_change node=n1 epoch=7"),
            "ts=2026-11-29T03:40:12.123456Z level=info process=n1 event=role_change node=n1 epoch=7");
  EXPECT_EQ(format_log_line(LogFormat::text, "w 1", spdlog::level::warn, logged_at, "k=v"),
            "ts=2026-11-29T03:40:12.123456Z level=warning process=\"w 1\" k=v");
  // Strict logfmt (issue 63): the free text is a msg field, not words a
  // parser would read as keys.
  EXPECT_EQ(format_log_line(LogFormat::text, "n1", spdlog::level::err, logged_at,
                            R"(tls_reload_failed error="no \"file\"" (the previous certificate stays in use))"),
            R"(ts=2026-11-29T03:40:12.123456Z level=error process=n1 event=tls_reload_failed error="no \"file\"")"
            R"( msg="the previous certificate stays in use")");
  EXPECT_EQ(format_log_line(LogFormat::text, "n1", spdlog::level::info, logged_at, "(only \"text\")"),
            R"(ts=2026-11-29T03:40:12.123456Z level=info process=n1 msg="only \"text\"")");
  EXPECT_EQ(format_log_line(LogFormat::text, "n1", spdlog::level::info, logged_at, "a=\"unterminated b=2"),
            "ts=2026-11-29T03:40:12.123456Z level=info process=n1 a=\"unterminated b=2");
}

TEST(LogLine, JsonNamesTheEventAndEveryFieldAndKeepsQuotedValuesWhole) {
  const std::string line =
      format_log_line(LogFormat::json, "n1", spdlog::level::err, logged_at,
                      R"(webhook_delivery webhook="pager \"a\"" attempt=2 error="HTTP 503" (the rest, in words))");
  auto v = json::parse(line).as_object();
  EXPECT_EQ(v.at("ts").as_string(), "2026-11-29T03:40:12.123456Z");
  EXPECT_EQ(v.at("level").as_string(), "error");
  EXPECT_EQ(v.at("process").as_string(), "n1");
  EXPECT_EQ(v.at("event").as_string(), "webhook_delivery");
  EXPECT_EQ(v.at("webhook").as_string(), "pager \"a\"");
  EXPECT_EQ(v.at("attempt").as_int64(), 2) << "numbers typed (issue 63: every value was a string)";
  EXPECT_EQ(v.at("error").as_string(), "HTTP 503");
  EXPECT_EQ(v.at("msg").as_string(), "the rest, in words");
  // Typed where the text is a number or a boolean, and only there; a line
  // without free text has its event as its msg.
  auto typed = json::parse(format_log_line(LogFormat::json, "n1", spdlog::level::info, logged_at,
                                           R"(run_finished run=465 epoch=3 started=false ratio=0.25 neg=-7)"
                                           R"( id=0042 big=12345678901234567 worker="17" v=1.2.3 t=true)"))
                   .as_object();
  EXPECT_EQ(typed.at("run").as_int64(), 465);
  EXPECT_EQ(typed.at("epoch").as_int64(), 3);
  EXPECT_EQ(typed.at("started").as_bool(), false);
  EXPECT_DOUBLE_EQ(typed.at("ratio").as_double(), 0.25);
  EXPECT_EQ(typed.at("neg").as_int64(), -7);
  EXPECT_EQ(typed.at("id").as_string(), "0042") << "a leading zero is text";
  EXPECT_EQ(typed.at("big").as_string(), "12345678901234567") << "past a double's exact integers";
  EXPECT_EQ(typed.at("worker").as_string(), "17") << "quoted stays a string";
  EXPECT_EQ(typed.at("v").as_string(), "1.2.3");
  EXPECT_EQ(typed.at("t").as_bool(), true);
  EXPECT_EQ(typed.at("msg").as_string(), "run_finished");
  // Whatever a message holds, the line is JSON.
  for (const char* m : {"", "=", "a=\"unterminated", "x=\x01\x02 y", "(only text)", "\"quoted\" first", "k=v=w"})
    EXPECT_NO_THROW(json::parse(format_log_line(LogFormat::json, "n1", spdlog::level::info, logged_at, m))) << m;
}

TEST(LogLine, UnderSystemdEachLineStartsWithItsSyslogPriority) {
  EXPECT_EQ(format_log_line(LogFormat::text, "n1", spdlog::level::err, logged_at, "x", true).substr(0, 3), "<3>");
  EXPECT_EQ(format_log_line(LogFormat::json, "n1", spdlog::level::warn, logged_at, "x", true).substr(0, 4), "<4>{");
  EXPECT_EQ(format_log_line(LogFormat::text, "n1", spdlog::level::info, logged_at, "x", true).substr(0, 3), "<6>");
  EXPECT_EQ(format_log_line(LogFormat::text, "n1", spdlog::level::debug, logged_at, "x", true).substr(0, 3), "<7>");
}

TEST(LogLine, TheFormatIsTextOrJson) {
  EXPECT_EQ(parse_log_format("text"), LogFormat::text);
  EXPECT_EQ(parse_log_format("json"), LogFormat::json);
  EXPECT_FALSE(parse_log_format("JSON"));
}

}  // namespace
}  // namespace baton
