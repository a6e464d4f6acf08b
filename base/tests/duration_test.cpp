#include "baton/base/duration.h"

#include <gtest/gtest.h>

using namespace baton;
using namespace std::chrono_literals;

TEST(Duration, ParsesEveryUnit) {
  EXPECT_EQ(parse_duration("500ms"), Millis{500});
  EXPECT_EQ(parse_duration("3s"), Millis{3000});
  EXPECT_EQ(parse_duration("2m"), Millis{120000});
  EXPECT_EQ(parse_duration("1h"), Millis{3600000});
  EXPECT_EQ(parse_duration("0s"), Millis{0});
}

TEST(Duration, RejectsWithAReason) {
  struct Case {
    const char* text;
    const char* reason_part;
  };
  for (auto c : {Case{"", "empty"}, Case{"3", "no unit"}, Case{"3sec", "unknown unit"}, Case{"-1s", "number"},
                 Case{"s", "number"}, Case{"1.5s", "unknown unit"}, Case{"99999999999999999999ms", "range"},
                 Case{"9999999999999999h", "range"}}) {
    std::string why;
    EXPECT_FALSE(parse_duration(c.text, &why).has_value()) << c.text;
    EXPECT_NE(why.find(c.reason_part), std::string::npos) << c.text << " -> " << why;
  }
}

TEST(Duration, FormatsRoundTrip) {
  for (auto d : {Millis{1}, Millis{1500}, Millis{3000}, Millis{120000}, Millis{7200000}}) {
    EXPECT_EQ(parse_duration(format_duration(d)), d);
  }
}
