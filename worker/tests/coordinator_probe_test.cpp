// One HTTP exchange with a coordinator (enrollment, doctor's probe): the
// answer is read by Beast's HTTP/1.1 parser, so a chunked body is joined, a
// reply that is not HTTP or is cut short is an error that says so, and a
// body past its bound is refused. A loopback server answers with canned
// bytes (plaintext: `insecure`; the TLS path is the process tests').
#include "baton/worker/coordinator_probe.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

using namespace baton;
using namespace baton::worker;

namespace {

/// Accepts one connection on 127.0.0.1, reads the request's head, answers
/// `reply` and closes; `request` holds what it read.
class CannedServer {
 public:
  explicit CannedServer(std::string reply) : reply_(std::move(reply)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 1);
    thread_ = std::thread([this] {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        auto n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        request.append(buf, static_cast<std::size_t>(n));
      }
      for (std::size_t at = 0; at < reply_.size();) {
        auto n = ::send(c, reply_.data() + at, reply_.size() - at, MSG_NOSIGNAL);
        if (n <= 0) break;
        at += static_cast<std::size_t>(n);
      }
      // Everything the client sent is read before the close (unread bytes
      // would make it a reset, which may lose the answer on its way).
      ::shutdown(c, SHUT_WR);
      for (ssize_t n = 1; n > 0;) {
        n = ::read(c, buf, sizeof buf);
        if (n > 0) request.append(buf, static_cast<std::size_t>(n));
      }
      ::close(c);
    });
  }
  ~CannedServer() { finish(); }
  /// Waits for the connection to end (or stops waiting for one).
  void finish() {
    if (!thread_.joinable()) return;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string request;  ///< read it after finish()

 private:
  std::string reply_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

Result<CoordinatorReply> ask(const std::string& reply) {
  CannedServer server(reply);
  WorkerConfig cfg;
  cfg.insecure = true;
  return ask_coordinator(cfg, server.endpoint(), "POST", "/api/v1/enroll", {{"Authorization", "Bearer t"}},
                         R"({"worker_id":"w1"})", Millis{5000});
}

TEST(CoordinatorProbe, AnswersAreReadByAnHttpParser) {
  auto plain = ask("HTTP/1.1 201 Created\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}");
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->status, 201);
  EXPECT_EQ(plain->body, R"({"ok":true})");

  // A chunked body is joined (read by hand, the chunk sizes were the body).
  auto chunked = ask("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n3\r\n 1}\r\n0\r\n\r\n");
  ASSERT_TRUE(chunked) << chunked.error().message;
  EXPECT_EQ(chunked->body, R"({"a": 1})");

  auto garbage = ask("SSH-2.0-OpenSSH_9.2\r\n\r\n");
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.error().message.find("a malformed or cut HTTP answer to POST /api/v1/enroll"), std::string::npos)
      << garbage.error().message;

  auto cut = ask("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"partial\"");
  ASSERT_FALSE(cut) << "a body shorter than its Content-Length is not an answer";
  EXPECT_NE(cut.error().message.find("cut"), std::string::npos) << cut.error().message;

  auto none = ask("");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no answer to POST /api/v1/enroll"), std::string::npos) << none.error().message;

  auto huge = ask("HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n" + std::string(300000, 'x'));
  ASSERT_FALSE(huge) << "past the 256 KiB bound";
  EXPECT_NE(huge.error().message.find("body limit"), std::string::npos) << huge.error().message;
}

TEST(CoordinatorProbe, TheRequestIsWellFormed) {
  CannedServer server("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
  WorkerConfig cfg;
  cfg.insecure = true;
  auto r = ask_coordinator(cfg, server.endpoint(), "POST", "/api/v1/enroll", {{"Authorization", "Bearer t"}},
                           R"({"worker_id":"w1"})", Millis{5000});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "");
  server.finish();
  EXPECT_EQ(server.request.rfind("POST /api/v1/enroll HTTP/1.1\r\n", 0), 0u) << server.request;
  EXPECT_NE(server.request.find("Host: 127.0.0.1\r\n"), std::string::npos) << server.request;
  EXPECT_NE(server.request.find("Authorization: Bearer t\r\n"), std::string::npos) << server.request;
  EXPECT_NE(server.request.find("Content-Length: 18\r\n"), std::string::npos) << server.request;
  EXPECT_NE(server.request.find("Content-Type: application/json\r\n"), std::string::npos) << server.request;
  auto bad = ask_coordinator(cfg, server.endpoint(), "FETCH", "/", {}, "", Millis{1000});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "unknown HTTP method 'FETCH'");
}

}  // namespace
