// LookupLanes: lookups on different lanes run at once; one lane serialises.
#include "baton/admin/lookup_lanes.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <thread>

using namespace baton::admin;
using namespace std::chrono_literals;

namespace {

/// Lookups that hold their lane until released, recording the most that
/// were inside at once.
struct HeldLookups {
  std::mutex m;
  std::condition_variable cv;
  int inside = 0;
  int most_inside = 0;
  bool released = false;

  std::function<int(const std::string&)> lookup() {
    return [this](const std::string& key) {
      std::unique_lock lock(m);
      ++inside;
      most_inside = std::max(most_inside, inside);
      cv.notify_all();
      cv.wait(lock, [&] { return released; });
      --inside;
      return static_cast<int>(key.size());
    };
  }
  /// Waits (bounded, not timed as a speed) for `n` lookups to be inside at
  /// once; false if they never were.
  bool reaches(int n, std::chrono::milliseconds bound) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, bound, [&] { return inside >= n; });
  }
  void release() {
    std::lock_guard lock(m);
    released = true;
    cv.notify_all();
  }
};

int concurrent_lookups(int lanes) {
  HeldLookups held;
  std::vector<LookupLanes<int>::Lookup> lookups;
  for (int i = 0; i < lanes; ++i) lookups.push_back(held.lookup());
  LookupLanes<int> pool(std::move(lookups));
  int a = 0, b = 0;
  std::thread t1([&] { a = pool("abc"); });
  std::thread t2([&] { b = pool("abcd"); });
  // Two lanes: both are inside within the bound. One lane: the second
  // never is, so the bound only ends the wait.
  held.reaches(2, lanes >= 2 ? std::chrono::milliseconds(5s) : std::chrono::milliseconds(500ms));
  held.release();
  t1.join();
  t2.join();
  EXPECT_EQ(a, 3);
  EXPECT_EQ(b, 4);
  return held.most_inside;
}

}  // namespace

TEST(LookupLanes, TwoLookupsOnTwoLanesRunAtOnce) { EXPECT_EQ(concurrent_lookups(2), 2); }

TEST(LookupLanes, OneLaneMakesTheSecondLookupWait) {
  // What the node had before: one connection behind one mutex.
  EXPECT_EQ(concurrent_lookups(1), 1);
}

TEST(LookupLanes, MoreCallersThanLanesAllGetAnAnswer) {
  std::vector<LookupLanes<int>::Lookup> lookups(2, [](const std::string& k) { return static_cast<int>(k.size()); });
  LookupLanes<int> pool(std::move(lookups));
  std::vector<std::thread> callers;
  std::atomic<int> total{0};
  for (int i = 0; i < 8; ++i)
    callers.emplace_back([&] {
      for (int j = 0; j < 1000; ++j) total += pool("xy");
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 8 * 1000 * 2);
}
