// GET /readyz without a token from one source address, as fast as THREADS
// connections can ask, each sending DEPTH requests at a time (HTTP/1.1
// pipelining), until SIGTERM or SIGINT (bench/run's readyz phase;
// docs/security.md, "/readyz"). The node closes a connection it throttles,
// so past the budget nearly every request costs a new connection: the
// Python flooder (readyz_flood.py) topped out near 2,500 connections a
// second on two shared cores, this one does not spend its time in an
// interpreter. Prints, once stopped, the Python one's line:
// "readyz_flood: requests=N seconds=S rate=R 200=A 429=B 503=C other=D reconnects=E".
//
//     baton-readyz-flood HOST PORT THREADS [DEPTH]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> stop{false};

struct Counts {
  long ok = 0, throttled = 0, unavailable = 0, other = 0, reconnects = 0;
};

/// Counts the status lines in `buf` from `from`; returns how many, and
/// leaves in `buf` only what may hold the start of the next one.
int take_statuses(std::string& buf, Counts& c) {
  int found = 0;
  std::size_t at = 0, last_end = 0;
  while ((at = buf.find("HTTP/1.1 ", at)) != std::string::npos) {
    if (at + 12 > buf.size()) break;
    const int code = std::atoi(buf.substr(at + 9, 3).c_str());
    (code == 200 ? c.ok : code == 429 ? c.throttled : code == 503 ? c.unavailable : c.other)++;
    ++found;
    at += 12;
    last_end = at;
  }
  const std::size_t keep_from = std::max(last_end, buf.size() > 16 ? buf.size() - 16 : 0);
  buf.erase(0, keep_from);
  return found;
}

void ask(sockaddr_in addr, std::string request, int depth, Counts& c) {
  std::string batch;
  for (int i = 0; i < depth; ++i) batch += request;
  char chunk[65536];
  while (!stop.load(std::memory_order_relaxed)) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      // Ask DEPTH at a time on this connection until the node closes it.
      bool open = true;
      while (open && !stop.load(std::memory_order_relaxed)) {
        if (::send(fd, batch.data(), batch.size(), MSG_NOSIGNAL) < 0) break;
        std::string pending;
        int answered = 0;
        while (answered < depth) {
          const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
          if (n <= 0) {
            open = false;
            break;
          }
          pending.append(chunk, static_cast<std::size_t>(n));
          answered += take_statuses(pending, c);
        }
      }
    }
    ::close(fd);
    ++c.reconnects;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf("usage: baton-readyz-flood HOST PORT THREADS [DEPTH]\n");
    return 0;
  }
  if (argc < 4) {
    std::fprintf(stderr, "usage: baton-readyz-flood HOST PORT THREADS [DEPTH]\n");
    return 2;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(std::atoi(argv[2])));
  if (::inet_pton(AF_INET, argv[1], &addr.sin_addr) != 1) {
    std::fprintf(stderr, "baton-readyz-flood: '%s' is not an IPv4 address\n", argv[1]);
    return 2;
  }
  const int threads = std::max(1, std::atoi(argv[3]));
  const int depth = argc > 4 ? std::max(1, std::atoi(argv[4])) : 32;
  const std::string request = std::string("GET /readyz HTTP/1.1\r\nHost: ") + argv[1] + "\r\n\r\n";
  std::signal(SIGTERM, [](int) { stop = true; });
  std::signal(SIGINT, [](int) { stop = true; });
  const auto began = std::chrono::steady_clock::now();
  std::vector<Counts> counts(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back(ask, addr, request, depth, std::ref(counts[static_cast<std::size_t>(i)]));
  for (auto& t : pool) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  Counts all;
  for (const auto& c : counts) {
    all.ok += c.ok;
    all.throttled += c.throttled;
    all.unavailable += c.unavailable;
    all.other += c.other;
    all.reconnects += c.reconnects;
  }
  const long n = all.ok + all.throttled + all.unavailable + all.other;
  std::printf("readyz_flood: requests=%ld seconds=%.1f rate=%.0f 200=%ld 429=%ld 503=%ld other=%ld reconnects=%ld\n", n,
              seconds, n / seconds, all.ok, all.throttled, all.unavailable, all.other, all.reconnects);
  return 0;
}
