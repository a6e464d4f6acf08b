// The service manager's notifications, received as systemd receives them: a
// datagram socket named by NOTIFY_SOCKET, read back by the test.
#include "baton/service/service_manager.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

using namespace baton;
using baton::service::ServiceManager;

namespace {

class ServiceManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() / ("baton-notify-" + std::to_string(::getpid()))).string();
    ::unlink(path_.c_str());
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    ASSERT_GE(fd_, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    path_.copy(a.sun_path, sizeof a.sun_path - 1);
    ASSERT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ::setenv("NOTIFY_SOCKET", path_.c_str(), 1);
    ::unsetenv("WATCHDOG_USEC");
    ::unsetenv("WATCHDOG_PID");
  }
  void TearDown() override {
    ::close(fd_);
    ::unlink(path_.c_str());
    ::unsetenv("NOTIFY_SOCKET");
    ::unsetenv("WATCHDOG_USEC");
    ::unsetenv("WATCHDOG_PID");
  }
  /// The next datagram, or "" if none is waiting.
  std::string received() {
    char buf[1024];
    const auto n = ::recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  }
  static MonoTime at(int ms) { return MonoTime{std::chrono::milliseconds(ms)}; }

  std::string path_;
  int fd_ = -1;
};

TEST_F(ServiceManagerTest, ReadyIsSentOnceWithItsStatusAndLaterCallsOnlyUpdateTheStatus) {
  auto m = ServiceManager::from_environment();
  EXPECT_TRUE(m.managed());
  m.ready("serving on 127.0.0.1:7001");
  EXPECT_EQ(received(), "READY=1\nSTATUS=serving on 127.0.0.1:7001");
  m.ready("leader, epoch 7");
  EXPECT_EQ(received(), "STATUS=leader, epoch 7");
  m.status("a line\nWATCHDOG=1 smuggled in");
  EXPECT_EQ(received(), "STATUS=a line WATCHDOG=1 smuggled in") << "one line: no key of its own";
  m.stopping("releasing the lease");
  EXPECT_EQ(received(), "STOPPING=1\nSTATUS=releasing the lease");
}

TEST_F(ServiceManagerTest, TheWatchdogIsPingedAtHalfItsTimeout) {
  ::setenv("WATCHDOG_USEC", "2000000", 1);
  ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
  auto m = ServiceManager::from_environment();
  ASSERT_TRUE(m.watchdog_every());
  EXPECT_EQ(*m.watchdog_every(), Millis{1000});
  m.watchdog(at(0));
  EXPECT_EQ(received(), "WATCHDOG=1");
  m.watchdog(at(999));
  EXPECT_EQ(received(), "") << "not due yet";
  m.watchdog(at(1000));
  EXPECT_EQ(received(), "WATCHDOG=1");
}

TEST_F(ServiceManagerTest, AWatchdogMeantForAnotherProcessIsNotOurs) {
  ::setenv("WATCHDOG_USEC", "2000000", 1);
  ::setenv("WATCHDOG_PID", std::to_string(::getpid() + 1).c_str(), 1);
  auto m = ServiceManager::from_environment();
  EXPECT_FALSE(m.watchdog_every());
  m.watchdog(at(0));
  EXPECT_EQ(received(), "");
}

TEST_F(ServiceManagerTest, OutsideAServiceManagerNothingIsSent) {
  ::unsetenv("NOTIFY_SOCKET");
  ::setenv("WATCHDOG_USEC", "2000000", 1);
  auto m = ServiceManager::from_environment();
  EXPECT_FALSE(m.managed());
  EXPECT_FALSE(m.watchdog_every());
  m.ready("serving");
  m.watchdog(at(0));
  EXPECT_EQ(received(), "");
}

}  // namespace
