#include "baton/leader/frame_handoff.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "baton/leader/node_server.h"

using namespace baton::leader;

TEST(FrameHandoff, TheFirstFrameOfABurstWakesTheConnectionAndTheBurstIsTakenInOrder) {
  FrameHandoff h(8);
  EXPECT_EQ(h.put("a"), FrameHandoff::Put::first);
  EXPECT_EQ(h.put("b"), FrameHandoff::Put::more);
  EXPECT_EQ(h.put("c"), FrameHandoff::Put::more);
  EXPECT_EQ(h.take(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(h.take().empty());
  // Taken: the next frame begins a new burst.
  EXPECT_EQ(h.put("d"), FrameHandoff::Put::first);
}

TEST(FrameHandoff, ASessionsHandOffRefusesPastTheSendQueueBound) {
  // The bound a worker session uses: a connection whose thread takes
  // nothing holds at most this many frames, and the next one is refused
  // (the session then closes the connection), not held.
  FrameHandoff h(session_send_queue_max);
  for (std::size_t i = 0; i < session_send_queue_max; ++i)
    ASSERT_NE(h.put("frame " + std::to_string(i)), FrameHandoff::Put::full) << i;
  EXPECT_EQ(h.put("one too many"), FrameHandoff::Put::full);
  const auto taken = h.take();
  ASSERT_EQ(taken.size(), session_send_queue_max);
  EXPECT_EQ(taken.front(), "frame 0");
  EXPECT_EQ(taken.back(), "frame " + std::to_string(session_send_queue_max - 1));
  EXPECT_EQ(h.put("after"), FrameHandoff::Put::first);
}

TEST(FrameHandoff, FramesHandedFromAnotherThreadAreAllTakenOnce) {
  FrameHandoff h(100000);
  constexpr int n = 20000;
  std::thread loop([&] {
    for (int i = 0; i < n; ++i) ASSERT_NE(h.put(std::to_string(i)), FrameHandoff::Put::full);
  });
  std::vector<std::string> got;
  while (got.size() < static_cast<std::size_t>(n)) {
    for (auto& f : h.take()) got.push_back(std::move(f));
    if (got.size() < static_cast<std::size_t>(n)) std::this_thread::yield();
  }
  loop.join();
  ASSERT_EQ(got.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], std::to_string(i));
}
