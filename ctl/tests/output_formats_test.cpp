// `baton ctl -o table|wide|json|jsonl|yaml` and `--no-headers` (docs/ctl.md,
// "Connecting"): the same answer in each format a person or a tool reads.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <boost/json.hpp>
#include <sstream>

#include "../src/ctl_verbs.h"
#include "../src/render.h"

namespace baton::ctl {
namespace {

namespace json = boost::json;

const char* page =
    R"({"items":[{"id":1,"job":"etl","state":"FAILED"},{"id":2,"job":"true","state":"SUCCEEDED"}],"next_cursor":null})";

TEST(OutputFormats, JsonlPrintsAListsItemsOneObjectPerLine) {
  std::ostringstream out;
  print_as(out, std::string(page) + "\n" + R"({"run_id":7})" + "\n", "jsonl");
  std::istringstream lines(out.str());
  std::vector<json::value> docs;
  for (std::string line; std::getline(lines, line);) docs.push_back(json::parse(line));
  ASSERT_EQ(docs.size(), 3u) << out.str();
  EXPECT_EQ(docs[0].at("job").as_string(), "etl");
  EXPECT_EQ(docs[1].at("id").as_int64(), 2);
  EXPECT_EQ(docs[2].at("run_id").as_int64(), 7) << "a single answer on one line";
}

TEST(OutputFormats, YamlReadsBackAsTheSameDataWithStringsKeptStrings) {
  std::ostringstream out;
  print_as(out, std::string(page) + "\n" + R"({"run_id":7})" + "\n", "yaml");
  auto docs = YAML::LoadAll(out.str());
  ASSERT_EQ(docs.size(), 2u) << out.str();
  EXPECT_EQ(docs[0]["items"][0]["job"].as<std::string>(), "etl");
  EXPECT_EQ(docs[0]["items"][1]["job"].Tag(), "!") << "the job named true stays a string: " << out.str();
  EXPECT_TRUE(docs[0]["next_cursor"].IsNull());
  EXPECT_EQ(docs[1]["run_id"].as<int>(), 7);
  std::ostringstream passed;
  print_as(passed, "not json\n", "yaml");
  EXPECT_EQ(passed.str(), "not json\n") << "a line that is not JSON is passed on";
}

TEST(OutputFormats, NoHeadersAndWideShapeTheTable) {
  const std::vector<Column> columns{{"ID", [](const json::object& o) { return field(o, "id"); }},
                                    {"JOB", [](const json::object& o) { return field(o, "job"); }}};
  json::array items{json::object{{"id", 1}, {"job", std::string(80, 'x')}}};
  std::ostringstream table, bare, wide;
  set_table_style(true, false);
  print_table(table, columns, items);
  EXPECT_EQ(table.str().rfind("ID", 0), 0u);
  EXPECT_NE(table.str().find(std::string(57, 'x') + "..."), std::string::npos);
  set_table_style(false, false);
  print_table(bare, columns, items);
  EXPECT_EQ(bare.str().find("ID"), std::string::npos) << bare.str();
  EXPECT_EQ(bare.str().rfind("1", 0), 0u);
  set_table_style(true, true);
  print_table(wide, columns, items);
  EXPECT_NE(wide.str().find(std::string(80, 'x')), std::string::npos) << "wide cuts nothing";
  set_table_style(true, false);
}

}  // namespace
}  // namespace baton::ctl

namespace baton::ctl {
namespace {

TEST(TimeFilters, UnixSecondsADurationBackOrRfc3339) {
  const std::int64_t now = 1795923612;  // 2026-11-29T03:40:12Z
  EXPECT_EQ(time_filter("1700000000", now), 1700000000);
  EXPECT_EQ(time_filter("2h", now), now - 7200);
  EXPECT_EQ(time_filter("90s", now), now - 90);
  EXPECT_EQ(time_filter("7d", now), now - 7 * 86400);
  EXPECT_EQ(time_filter("2026-11-29T03:40:12Z", now), now);
  EXPECT_EQ(time_filter("2026-11-29T04:40:12.5+01:00", now), now);
  EXPECT_EQ(time_filter("2026-11-28T22:40:12-05:00", now), now);
  EXPECT_FALSE(time_filter("2026-11-29T03:40:12", now)) << "no zone: ambiguous";
  EXPECT_FALSE(time_filter("yesterday", now));
  EXPECT_FALSE(time_filter("2026-13-01T00:00:00Z", now));
}

}  // namespace
}  // namespace baton::ctl

TEST(Timestamps, ShownWithTheirZoneAndAgedAsKubectlDoes) {
  EXPECT_EQ(baton::ctl::timestamp_text("2026-11-23T20:14:00.123456+00:00"), "2026-11-23T20:14:00Z");
  EXPECT_EQ(baton::ctl::timestamp_text("2026-11-23T21:14:00+01:00"), "2026-11-23T21:14:00+01:00");
  EXPECT_EQ(baton::ctl::unix_of_timestamp("1970-01-01T00:01:00Z"), 60);
  EXPECT_EQ(baton::ctl::unix_of_timestamp("1970-01-01T01:01:00.5+01:00"), 60);
  EXPECT_EQ(baton::ctl::unix_of_timestamp("1970-01-01T00:00:00-00:30"), 1800);
  EXPECT_FALSE(baton::ctl::unix_of_timestamp("yesterday"));
  EXPECT_EQ(baton::ctl::age_text(45), "45s");
  EXPECT_EQ(baton::ctl::age_text(12 * 60), "12m");
  EXPECT_EQ(baton::ctl::age_text(3 * 3600), "3h");
  EXPECT_EQ(baton::ctl::age_text(5 * 86400), "5d");
  // A run's AGE from its creation, beside CREATED with its zone.
  std::ostringstream out;
  const auto minute_ago = std::chrono::system_clock::now() - std::chrono::seconds(61);
  std::time_t t = std::chrono::system_clock::to_time_t(minute_ago);
  char created[40];
  std::strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%S.000+00:00", std::gmtime(&t));
  auto items = boost::json::parse(std::string(R"([{"id": 1, "job": "j", "state": "PENDING", "created_at": ")") +
                                  created + "\"}]")
                   .as_array();
  baton::ctl::print_table(out, baton::ctl::run_columns(), items);
  EXPECT_NE(out.str().find("AGE"), std::string::npos) << out.str();
  EXPECT_TRUE(out.str().find(" 61s ") != std::string::npos || out.str().find(" 62s ") != std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find(std::string(created).substr(0, 19) + "Z"), std::string::npos) << out.str();
}

namespace baton::ctl {
namespace {

// Numbers read as numbers (issue 63: tables showed 4.7E0): the shortest
// text of the same double, in a table's cell and in YAML alike.
TEST(OutputFormats, ADecimalNumberIsPrintedAsAPersonWritesIt) {
  const auto item = boost::json::parse(R"({"p50_ms": 4.7, "share": 0.25, "big": 1e21, "n": 3})").as_object();
  EXPECT_EQ(field(item, "p50_ms"), "4.7");
  EXPECT_EQ(field(item, "share"), "0.25");
  EXPECT_EQ(field(item, "big"), "1e+21");
  EXPECT_EQ(field(item, "n"), "3");
  std::ostringstream out;
  print_as(out, "{\"p50_ms\": 4.7, \"oldest_s\": 0.0}\n", "yaml");
  EXPECT_EQ(out.str().find("E0"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("p50_ms: 4.7"), std::string::npos) << out.str();
  EXPECT_DOUBLE_EQ(YAML::Load(out.str())["p50_ms"].as<double>(), 4.7);
}

// `show` verbs and YAML in one order whatever the API's jsonb chose (issue
// 63: `jobs show` began with `live:`, `workers show` with `runs:`): what
// names the thing, its plain fields alphabetically, its lists and maps
// last; an empty list or map on its key's line. Checked failing with the
// object's own order.
TEST(OutputFormats, ShowAndYamlKeysInAFixedOrder) {
  const auto job =
      boost::json::parse(R"({"live": true, "runs": [{"id": 2}], "tasks": [], "paused": false, "name": "greet",)"
                         R"( "state": "x", "on_events": [], "version": 3, "rate_limit": {}})")
          .as_object();
  EXPECT_EQ(ordered_keys(job), (std::vector<std::string>{"name", "state", "live", "paused", "version", "on_events",
                                                         "rate_limit", "runs", "tasks"}));
  std::ostringstream shown;
  print_object(shown, job);
  EXPECT_EQ(shown.str().substr(0, shown.str().find('\n')), "name:       greet") << shown.str();
  std::ostringstream yaml;
  print_as(yaml, boost::json::serialize(job) + "\n", "yaml");
  EXPECT_EQ(yaml.str().substr(0, yaml.str().find('\n')), "name: \"greet\"") << yaml.str();
  EXPECT_NE(yaml.str().find("\non_events: []\n"), std::string::npos) << yaml.str();
  EXPECT_NE(yaml.str().find("\nrate_limit: {}\n"), std::string::npos) << yaml.str();
  EXPECT_LT(yaml.str().find("\nversion:"), yaml.str().find("\non_events:")) << yaml.str();
  EXPECT_EQ(YAML::Load(yaml.str())["runs"][0]["id"].as<int>(), 2);
}

}  // namespace
}  // namespace baton::ctl
