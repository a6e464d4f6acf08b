#pragma once
// A real child process for integration tests: stdout and stderr go to a log
// file the test can read; the destructor SIGKILLs and reaps it, so no test
// leaves a process behind.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <memory>

#include "baton/testing/throwaway_ca.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace baton::testing {

/// A TCP port on 127.0.0.1 that was free a moment ago, above the kernel's
/// ephemeral range when there is room: a port from that range can be taken
/// by any outgoing connection (or port-0 listener) before the server given
/// it binds (a chaos run lost a node that way: "Address already in use").
/// Falls back to the kernel's choice.
inline int free_loopback_port() {
  int lo = 32768, hi = 60999;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d %d", &lo, &hi) != 2) hi = 60999;
    std::fclose(f);
  }
  if (hi < 65000) {
    std::random_device seed;
    std::mt19937 rng(seed());
    for (int tries = 0; tries < 200; ++tries) {
      const int port = hi + 1 + static_cast<int>(rng() % static_cast<unsigned>(65535 - hi));
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<uint16_t>(port));
      const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      ::close(fd);
      if (bound) return port;
    }
  }
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

/// A blocking TCP connection to 127.0.0.1:port, or -1.
/// `source`: a loopback address to connect from ("127.0.0.7": all of
/// 127.0.0.0/8 is this host), to look like another client; "" the default.
inline int connect_loopback(int port, const std::string& source = "") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (!source.empty()) {
    sockaddr_in from{};
    from.sin_family = AF_INET;
    if (::inet_pton(AF_INET, source.c_str(), &from.sin_addr) != 1 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// What `cmd` (under /bin/sh) printed on stdout, trailing newlines cut: test
/// scaffolding for the scripts a test drives (scripts/pg-private).
inline std::string command_stdout(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
  std::string out;
  char buf[512];
  while (p && std::fgets(buf, sizeof buf, p.get())) out += buf;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

/// A minimal HTTP/1.1 client for tests (Connection: close). Returns the
/// status code and the body; status 0 if the connection failed (`error`
/// says why).
struct HttpReply {
  int status = 0;
  std::string body;
  std::string headers;
  std::string error;
};

/// One request to 127.0.0.1:port; over TLS when `ca_file` is not empty, the
/// node's certificate verified against it and against 127.0.0.1.
inline HttpReply http_exchange(int port, const std::string& ca_file, const std::string& method,
                               const std::string& target,
                               const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
                               std::chrono::milliseconds timeout, const std::string& source = "") {
  HttpReply reply;
  int fd = connect_loopback(port, source);
  if (fd < 0) {
    reply.error = "connect failed";
    return reply;
  }
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx(nullptr, SSL_CTX_free);
  std::unique_ptr<SSL, void (*)(SSL*)> ssl(nullptr, SSL_free);
  if (!ca_file.empty()) {
    ::signal(SIGPIPE, SIG_IGN);  // OpenSSL writes without MSG_NOSIGNAL; a closed peer is an error here
    ctx.reset(SSL_CTX_new(TLS_client_method()));
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
    if (SSL_CTX_load_verify_locations(ctx.get(), ca_file.c_str(), nullptr) != 1) {
      ::close(fd);
      reply.error = "cannot load " + ca_file;
      return reply;
    }
    ssl.reset(SSL_new(ctx.get()));
    SSL_set_fd(ssl.get(), fd);
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), "127.0.0.1");
    if (SSL_connect(ssl.get()) != 1) {
      const long verify = SSL_get_verify_result(ssl.get());
      reply.error = verify != X509_V_OK
                        ? std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify)
                        : "tls handshake failed";
      ::close(fd);
      return reply;
    }
  }
  auto put = [&](const char* p, std::size_t n) -> long {
    return ssl ? SSL_write(ssl.get(), p, static_cast<int>(n)) : ::send(fd, p, n, MSG_NOSIGNAL);
  };
  auto get = [&](char* p, std::size_t n) -> long {
    return ssl ? SSL_read(ssl.get(), p, static_cast<int>(n)) : ::recv(fd, p, n, 0);
  };
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  for (std::size_t sent = 0; sent < req.size();) {
    long n = put(req.data() + sent, req.size() - sent);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  std::string raw;
  char buf[4096];
  for (long n; (n = get(buf, sizeof buf)) > 0;) raw.append(buf, static_cast<std::size_t>(n));
  if (ssl) SSL_shutdown(ssl.get());
  ::close(fd);
  auto sp = raw.find(' ');
  if (sp == std::string::npos) {
    reply.error = "no answer";
    return reply;
  }
  reply.status = std::atoi(raw.c_str() + sp + 1);
  auto split = raw.find("\r\n\r\n");
  reply.headers = raw.substr(0, split);
  if (split != std::string::npos) reply.body = raw.substr(split + 4);
  return reply;
}

/// A request to a node started by a test: HTTPS, trusting the shared
/// throwaway CA (every test node serves its certificate).
inline HttpReply http_request(int port, const std::string& method, const std::string& target,
                              const std::vector<std::pair<std::string, std::string>>& headers = {},
                              const std::string& body = "",
                              std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  return http_exchange(port, ThrowawayCa::shared().ca(), method, target, headers, body, timeout);
}

/// The same in plaintext (a node with `insecure: true`, or to see what a
/// TLS port answers to plaintext).
inline HttpReply http_request_plain(int port, const std::string& method, const std::string& target,
                                    const std::vector<std::pair<std::string, std::string>>& headers = {},
                                    const std::string& body = "",
                                    std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  return http_exchange(port, "", method, target, headers, body, timeout);
}

class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, std::string log_path) : log_path_(std::move(log_path)) {
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        ::close(fd);
      }
      // Nothing but stdio crosses into the child: an inherited socket (the
      // chaos proxy's, a test's) would keep a connection alive after its
      // owner closed it.
      ::close_range(3, ~0U, 0);
      // A test ignores SIGPIPE (TLS writes to a closed connection); an
      // ignored signal would stay ignored across exec, in the child and its
      // tasks.
      ::signal(SIGPIPE, SIG_DFL);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (running()) {
      ::kill(pid_, SIGCONT);
      ::kill(pid_, SIGKILL);
      int st = 0;
      ::waitpid(pid_, &st, 0);
    }
  }

  pid_t pid() const { return pid_; }
  void signal(int sig) const { ::kill(pid_, sig); }
  bool running() {
    if (exited_) return false;
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) record(st);
    return !exited_;
  }
  /// Exit code (128 + signal for a signal death), or nullopt on timeout.
  std::optional<int> wait_for_exit(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running()) {
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return exit_code_;
  }
  std::string log() const {
    std::ifstream in(log_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  const std::string& log_path() const { return log_path_; }

 private:
  void record(int st) {
    exited_ = true;
    exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  std::string log_path_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
};

}  // namespace baton::testing
