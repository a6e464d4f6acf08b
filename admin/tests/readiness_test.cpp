// GET /readyz from memory (admin/include/baton/admin/readiness.h): what the
// node's last check of its database recorded, judged at the request's time;
// the answer never carries the database's address or the driver's words.
#include "baton/admin/readiness.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

using namespace baton;
using namespace baton::admin;
using namespace std::chrono_literals;

namespace {

boost::json::object body(const HttpResponse& r) { return boost::json::parse(r.body).as_object(); }
std::string check(const HttpResponse& r, const char* name) {
  return std::string(body(r).at("checks").at(name).as_string());
}

const NodeStatus leader{"n1", "n1-i1", "leader", 7, "n1", "n1:8080", 0};
const NodeStatus follower{"n2", "n2-i1", "follower", 7, "n1", "n1:8080", 0};
const NodeStatus lost{"n3", "n3-i1", "follower", 0, "", "", 0};

TEST(Readiness, NeverCheckedIsNotReady) {
  Readiness r;
  auto a = r.answer(leader, MonoTime{10s});
  EXPECT_EQ(a.status, 503);
  EXPECT_EQ(check(a, "database"), "unavailable");
}

TEST(Readiness, ReadyWhileTheLastAnswerIsFreshAndALeaderIsKnown) {
  Readiness r;
  r.checked(true, MonoTime{10s});
  auto a = r.answer(leader, MonoTime{10s} + Readiness::fresh_for);
  EXPECT_EQ(a.status, 200) << a.body;
  EXPECT_TRUE(body(a).at("ready").as_bool());
  EXPECT_EQ(check(a, "database"), "ok");
  EXPECT_EQ(check(a, "leader"), "this node");
  EXPECT_EQ(body(a).at("epoch").as_int64(), 7);
  EXPECT_EQ(check(r.answer(follower, MonoTime{11s}), "leader"), "n1");
  auto none = r.answer(lost, MonoTime{11s});
  EXPECT_EQ(none.status, 503);
  EXPECT_EQ(check(none, "leader"), "none known");
  EXPECT_EQ(check(none, "database"), "ok");
}

// A check that stopped (its thread or its connection stuck) is not taken
// for an answering database for ever.
TEST(Readiness, AnAnswerGoesStale) {
  Readiness r;
  r.checked(true, MonoTime{10s});
  auto a = r.answer(leader, MonoTime{10s} + Readiness::fresh_for + 1ms);
  EXPECT_EQ(a.status, 503);
  EXPECT_EQ(check(a, "database"), "unavailable");
}

TEST(Readiness, AFailedCheckIsUnavailableAtOnceAndSaysNoMore) {
  Readiness r;
  r.checked(true, MonoTime{10s});
  r.checked(false, MonoTime{11s});
  auto a = r.answer(leader, MonoTime{11s});
  EXPECT_EQ(a.status, 503);
  EXPECT_EQ(check(a, "database"), "unavailable");
  r.checked(true, MonoTime{12s});
  EXPECT_EQ(r.answer(leader, MonoTime{12s}).status, 200);
}

}  // namespace
