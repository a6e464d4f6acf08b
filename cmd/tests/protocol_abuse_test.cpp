// Protocol abuse against a running leader: random bytes, invalid JSON, wrong
// types, huge frames, missing or wrong tokens, and `start` for someone else's
// run. Each gets an error (and a close); the node keeps serving; no run state
// changes. The client here is Boost.Beast over TLS (this test's one Beast
// TU), as a worker's is.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <random>

#include "baton/tls/tls_context.h"

#include "cluster.h"

using namespace baton::testing;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

const char* jobs = R"(jobs:
  - name: long
    tasks:
      - {kind: PROGRAM, command: [/bin/sleep, '30']}
)";

const std::string worker_token = "suite-worker-token-not-for-production";

std::string hello(const std::string& id, const std::string& token) {
  return R"({"type":"hello","version":1,"worker_id":")" + id + R"(","token":")" + token +
         R"(","capacity":0,"labels":{},"running":[]})";
}

struct Exchange {
  std::vector<std::string> received;  // text frames received before the close
  bool closed = false;
};

/// Upgrades to /ws, sends `frames` (text, or binary when `binary`), and
/// reads until the server closes or 3 s pass.
template <class Ws>
Exchange converse(asio::io_context& ioc, Ws& ws, const std::vector<std::string>& frames, bool binary) {
  Exchange out;
  ws.handshake("127.0.0.1", "/ws");
  ws.write_buffer_bytes(1 << 16);
  beast::error_code ec;
  for (const auto& f : frames) {
    ws.binary(binary);
    ws.write(asio::buffer(f), ec);
    if (ec) break;
  }
  // Reads run asynchronously within 3 s in all (a synchronous read would
  // ignore the deadline and could wait forever on a silent server).
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (int i = 0; i < 10; ++i) {
    beast::flat_buffer buf;
    bool done = false;
    ws.async_read(buf, [&](beast::error_code e, std::size_t) {
      ec = e;
      done = true;
    });
    ioc.restart();
    ioc.run_until(end);
    if (!done) {  // our patience ran out, the server did not close
      beast::get_lowest_layer(ws).close();
      ioc.restart();
      ioc.run();
      break;
    }
    if (ec) {
      out.closed = true;
      break;
    }
    out.received.push_back(beast::buffers_to_string(buf.data()));
  }
  return out;
}

tcp::endpoint loopback(int port) {
  return tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
}

/// converse() over TLS, the node verified as a worker verifies it.
Exchange talk(int port, const std::vector<std::string>& frames, bool binary = false) {
  asio::io_context ioc;
  auto ctx = baton::tls::make_client_context({ThrowawayCa::shared().ca(), "", ""});
  websocket::stream<beast::ssl_stream<beast::tcp_stream>> ws(ioc, **ctx);
  beast::get_lowest_layer(ws).connect(loopback(port));
  EXPECT_TRUE(baton::tls::expect_peer_name(ws.next_layer().native_handle(), "127.0.0.1"));
  ws.next_layer().handshake(asio::ssl::stream_base::client);
  return converse(ioc, ws, frames, binary);
}

/// converse() in plaintext (a node with `insecure: true`).
Exchange talk_plain(int port, const std::vector<std::string>& frames, bool binary = false) {
  asio::io_context ioc;
  websocket::stream<beast::tcp_stream> ws(ioc);
  beast::get_lowest_layer(ws).connect(loopback(port));
  return converse(ioc, ws, frames, binary);
}

std::string start_frame(std::int64_t run, int attempt, const std::string& token) {
  return R"({"type":"start","version":1,"run_id":)" + std::to_string(run) + R"(,"attempt":)" + std::to_string(attempt) +
         R"(,"lease_token":")" + token + R"("})";
}

/// One node, worker w1, and a run of `long` that w1 is RUNNING.
std::int64_t running_run(Cluster& c) {
  c.start_node("n1");
  EXPECT_EQ(c.wait_for_leader(), "n1");
  c.start_worker("w1");
  EXPECT_TRUE(c.wait_for_workers("n1", 1));
  auto run = c.trigger("n1", "long");
  EXPECT_TRUE(c.wait_for_state(run, "RUNNING", 5s));
  return run;
}

bool has(const Exchange& e, const std::string& needle) {
  for (const auto& r : e.received)
    if (r.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(ProtocolAbuse, BadFramesGetAnErrorAndACloseAndChangeNothing) {
  Cluster c("abuse", jobs);
  auto run = running_run(c);
  ASSERT_FALSE(::testing::Test::HasFailure());
  auto before = c.db().run(run);
  const int port = c.port("n1");

  struct Case {
    const char* name;
    std::vector<std::string> frames;
    std::string expected;
  };
  std::vector<Case> cases = {
      {"invalid json", {"{not json"}, "\"code\":\"bad_frame\""},
      {"not an object", {"[1,2,3]"}, "must be a JSON object"},
      {"wrong version", {R"({"type":"hello","version":9})"}, "\"code\":\"bad_version\""},
      {"wrong types",
       {R"({"type":"hello","version":1,"worker_id":7,"token":"x","capacity":"lots"})"},
       "must be a string"},
      {"missing token", {R"({"type":"hello","version":1,"worker_id":"evil","capacity":1})"}, "token: is required"},
      {"wrong token", {hello("evil", "not-the-token-at-all")}, "\"code\":\"unauthenticated\""},
      {"start before hello",
       {R"({"type":"start","version":1,"run_id":)" + std::to_string(run) + R"(,"attempt":1,"lease_token":"x"})"},
       "the first message must be hello"},
      {"huge frame after hello", {hello("big", worker_token), std::string(1500 * 1024, 'x')}, "\"code\":\"too_large\""},
      {"second hello",
       {hello("intruder", worker_token), hello("intruder", worker_token)},
       "hello was already received"},
  };
  for (const auto& tc : cases) {
    auto e = talk(port, tc.frames);
    EXPECT_TRUE(has(e, tc.expected)) << tc.name << ": got " << (e.received.empty() ? "(nothing)" : e.received.back());
    EXPECT_TRUE(e.closed) << tc.name << ": the node should close the connection";
  }
  // Binary frames, frames far beyond the limit, and before the hello any
  // frame over limits.pre_hello_frame_bytes (64 KiB) are refused at the
  // WebSocket level (security review M1: it was 512 KiB, no key).
  EXPECT_TRUE(talk(port, {"\x01\x02\x03"}, true).closed);
  {
    auto e = talk(port, {std::string(65 * 1024, 'x')});
    EXPECT_TRUE(e.closed);
    EXPECT_TRUE(e.received.empty()) << "not even parsed: " << e.received.back();
  }
  EXPECT_TRUE(talk(port, {std::string(3 * 1024 * 1024, 'y')}).closed);

  // Random bytes on the raw TCP port (not even HTTP): the connection ends.
  {
    std::mt19937 rng(99);
    for (int i = 0; i < 20; ++i) {
      std::string junk(1 + rng() % 3000, '\0');
      for (char& ch : junk) ch = static_cast<char>(rng());
      auto r = http_request(port, "GET", "/" + junk.substr(0, 10));
      (void)r;
    }
  }

  // An authenticated intruder asking to start someone else's run is denied.
  auto tok = c.db().run(run);
  auto e = talk(port, {hello("intruder", worker_token), start_frame(run, 1, "00000000-0000-4000-8000-000000000000")});
  EXPECT_TRUE(has(e, "\"type\":\"welcome\""));
  EXPECT_TRUE(has(e, "\"type\":\"start_denied\"")) << (e.received.empty() ? "" : e.received.back());

  // A heartbeat listing far more attempts than a worker of its capacity can
  // hold is refused whole: no frame makes the leader chase thousands of refs.
  std::string refs;
  for (int i = 0; i < 100; ++i)
    refs += std::string(i ? "," : "") + R"({"run_id":)" + std::to_string(900000 + i) +
            R"(,"attempt":1,"lease_token":"00000000-0000-4000-8000-000000000000"})";
  auto flood =
      talk(port, {hello("flooder", worker_token), R"({"type":"heartbeat","version":1,"running":[)" + refs + "]}"});
  EXPECT_TRUE(has(flood, "may list at most")) << (flood.received.empty() ? "" : flood.received.back());
  EXPECT_FALSE(has(flood, "\"type\":\"cancel\""));

  // The node still serves, and nothing about the run changed.
  EXPECT_EQ(http_request(port, "GET", "/healthz").status, 200);
  auto after = c.db().run(run);
  EXPECT_EQ(after->state, before->state);
  EXPECT_EQ(after->attempt, before->attempt);
  EXPECT_EQ(after->worker_id, "w1");
  // Every write is in the history (heartbeats too); the state changes are
  // created, assigned, running: nothing more.
  const auto history = c.db().transitions(run);
  const auto state_changes = std::count_if(history.begin(), history.end(), [](const std::string& t) {
    const auto arrow = t.find("->"), at = t.find('@');
    return t.substr(0, arrow) != t.substr(arrow + 2, at - arrow - 2);
  });
  EXPECT_EQ(state_changes, 3) << "created, assigned, running: nothing more";
  EXPECT_TRUE(c.proc("n1").running());
  auto metrics = http_request(port, "GET", "/metrics");
  EXPECT_NE(metrics.body.find("baton_protocol_errors_total"), std::string::npos);

  // Bad HTTP: unknown routes and bad ids are JSON errors with a stable code.
  const std::vector<std::pair<std::string, std::string>> auth{{"Authorization", "Bearer " + admin_token}};
  auto bad_id = http_request(port, "GET", "/api/v1/runs/abc", auth);
  EXPECT_EQ(bad_id.status, 400);
  EXPECT_NE(bad_id.body.find("\"code\":\"bad_request\""), std::string::npos);
  EXPECT_EQ(http_request(port, "GET", "/nope").status, 404);
  EXPECT_EQ(http_request(port, "GET", "/api/v1/runs/999999", auth).status, 404);
  EXPECT_EQ(http_request(port, "GET", "/api/v1/runs/999999").status, 401) << "reads need a token too";
}

// A start whose grant never reached the worker (its connection, or the leader
// that sent it, died right after the start was written) must be granted
// again when the worker asks again: the database already holds that
// attempt's start right. Denying it left the run RUNNING with no worker
// running it (found by bench/run's failover trials).
TEST(ProtocolAbuse, ARepeatedStartOfAnAttemptAlreadyStartedIsGrantedAgain) {
  Cluster c("regrant", jobs);
  auto run = running_run(c);
  ASSERT_FALSE(::testing::Test::HasFailure());
  const std::string token = c.db().run(run)->lease_token;
  ASSERT_EQ(token.size(), 36u);
  const std::string start = start_frame(run, 1, token);
  // The real w1 is paused so that it cannot reconnect and replace the
  // connections below (the newest connection of a worker id wins).
  c.proc("w1").signal(SIGSTOP);
  // The same worker id, asking again for the attempt it holds.
  auto e = talk(c.port("n1"), {hello("w1", worker_token), start});
  EXPECT_TRUE(has(e, "\"type\":\"start_granted\"")) << (e.received.empty() ? "(nothing)" : e.received.back());
  EXPECT_FALSE(has(e, "\"type\":\"start_denied\""));
  // Another attempt number or token is still denied.
  auto wrong = talk(c.port("n1"), {hello("w1", worker_token), start_frame(run, 2, token)});
  EXPECT_TRUE(has(wrong, "\"type\":\"start_denied\""));
  auto after = c.db().run(run);
  EXPECT_EQ(after->state, "RUNNING");
  EXPECT_EQ(after->attempt, 1);
  c.proc("w1").signal(SIGCONT);
}

namespace {

const char* tick_jobs = R"(jobs:
  - name: tick
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
)";

/// A plain TCP connection to the node that says nothing (or what it is told).
int open_socket(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// True once the server has closed `fd` (a read returns end of stream or
/// an error), waiting at most `max`.
bool closed_by_server(int fd, std::chrono::milliseconds max) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(max.count())) <= 0) return false;
  char buf[512];
  return ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0;
}

/// Runs of `tick` completed per second: `n` triggers through the API, then
/// until every one has SUCCEEDED.
double tick_throughput(Cluster& c, int port, int n) {
  const std::vector<std::pair<std::string, std::string>> auth{{"Authorization", "Bearer " + admin_token}};
  const auto before = c.db().runs_of_job("tick").size();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i)
    EXPECT_EQ(http_request_plain(port, "POST", "/api/v1/jobs/tick/trigger", auth).status, 201);
  EXPECT_TRUE(wait_until(
      [&] {
        std::size_t done = 0;
        for (const auto& r : c.db().runs_of_job("tick")) done += r.state == "SUCCEEDED";
        return done >= before + static_cast<std::size_t>(n);
      },
      30s));
  return n / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// docs/security.md, "Denial of service": 2,000 idle sockets, slow-loris
// clients trickling headers, WebSockets that never say hello and oversized
// frames before a hello: each is cut off by its bound, and a real workload
// (API triggers run by a worker) keeps its pace meanwhile.
TEST(DenialOfService, IdleSlowAndOversizedClientsAreCutOffWhileTheWorkloadKeepsItsPace) {
  ClusterOptions o;
  // The attack is on connections; the API's rate limits would only slow the
  // measuring workload down.
  o.node_extra =
      "limits: {request_deadline: 3s, hello_deadline: 2s, max_connections_per_address: 4096, trigger_rate: 0}\n";
  // Plaintext: over TLS this machine's measure swung 83-105% (each trigger,
  // or the accept bursts of the attack, competing with handshakes on the
  // node's one I/O thread, on two cores shared with the attackers), so the
  // pace is compared where it is steady; the bounds themselves are the same
  // code with TLS on (docs/security.md).
  o.tls = false;
  Cluster c("dos", tick_jobs, o);
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  c.start_worker("w1", 8);
  ASSERT_TRUE(c.wait_for_workers("n1", 1));
  const int port = c.port("n1");
  tick_throughput(c, port, 100);  // warm up
  // Each measure takes a second or two: long enough that the attack is
  // going on throughout, not a blip at its start.
  // 2,000 idle sockets while `attacking`, kept at 2,000: each one the server
  // closes is opened again. Of the first 2,000, each must be closed by the
  // server within request_deadline (3 s) and some slack. Calm and attacked
  // measures alternate, so the machine's drift is the same for both.
  std::atomic<bool> stop{false}, attacking{false}, opened{false};
  std::atomic<int> first_closed_in_time{0}, first_opened{0};
  std::thread idle_attacker([&] {
    std::vector<int> fds(2000, -1);
    std::vector<bool> first(2000, true);
    std::chrono::steady_clock::time_point opened_at{};
    std::vector<pollfd> p(fds.size());
    while (!stop) {
      if (!attacking) {
        for (std::size_t i = 0; i < fds.size(); ++i) {
          if (fds[i] >= 0) ::close(fds[i]);
          fds[i] = -1;
          first[i] = false;
        }
        std::this_thread::sleep_for(20ms);
        continue;
      }
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (fds[i] >= 0) continue;
        fds[i] = open_socket(port);
        if (!opened) first_opened += fds[i] >= 0;
      }
      if (!opened) {
        opened_at = std::chrono::steady_clock::now();
        opened = true;
      }
      for (std::size_t i = 0; i < fds.size(); ++i) p[i] = {fds[i], POLLIN, 0};
      ::poll(p.data(), p.size(), 100);
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[64];
        if (::recv(fds[i], buf, sizeof buf, MSG_DONTWAIT) > 0) continue;
        ::close(fds[i]);
        fds[i] = -1;
        if (first[i] && std::chrono::steady_clock::now() - opened_at <= 6s) ++first_closed_in_time;
        first[i] = false;
      }
    }
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  });
  // Each mode's pace is its runs over its time summed across many short
  // alternating measures: a mean over the same stretch of the machine's
  // life, where the best of a few long measures let one lucky calm window
  // decide (it swung 85-102% on the 2-core test machine).
  double calm_runs = 0, calm_seconds = 0, attacked_runs = 0, attacked_seconds = 0;
  constexpr int per_measure = 300;
  auto measure = [&](bool under_attack) {
    attacking = under_attack;
    std::this_thread::sleep_for(300ms);  // the attacker has (re)opened its sockets, or closed them
    const double tp = tick_throughput(c, port, per_measure);
    (under_attack ? attacked_runs : calm_runs) += per_measure;
    (under_attack ? attacked_seconds : calm_seconds) += per_measure / tp;
  };
  attacking = true;
  while (!opened) std::this_thread::sleep_for(10ms);
  const auto attack_began = std::chrono::steady_clock::now();
  std::vector<int> slow;
  for (int i = 0; i < 50; ++i) {
    int fd = open_socket(port);
    ASSERT_GE(fd, 0);
    ::send(fd, "GET /status HTTP/1.1\r\nHost: x\r\n", 31, MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  std::thread loris([&] {
    for (int round = 0; !stop && round < 120; ++round) {  // until the measures end (at most 60 s)
      for (int fd : slow) ::send(fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(500ms);
    }
  });
  std::atomic<int> refused_frames{0}, silent_closed{0};
  std::thread oversized([&] {
    for (int i = 0; i < 10; ++i) {
      const auto e = talk_plain(port, {std::string(600 * 1024, 'x')});
      refused_frames += e.closed && e.received.empty();  // closed unread, not answered
      silent_closed += talk_plain(port, {}).closed;      // no hello at all: closed after hello_deadline
    }
  });
  int slow_closed = 0;
  for (int fd : slow) slow_closed += closed_by_server(fd, 4000ms);
  // The first idle sockets have had their deadline and some slack.
  std::this_thread::sleep_until(attack_began + 6500ms);
  const int first_closed = first_closed_in_time.load();
  // The attack comes in bursts (2,000 sockets reach their deadline, are
  // closed and opened again together, every few seconds), and a measure
  // lasts about a second: which measures a burst lands in is luck. Twelve
  // pairs, not eight, so that luck averages out (eight measured 85% once in
  // a clean CI run, 94-103% in five runs alone).
  for (int round = 0; round < 12; ++round) {
    measure(round % 2 == 0 ? false : true);
    measure(round % 2 == 0 ? true : false);
  }
  const double calm = calm_runs / calm_seconds, attacked = attacked_runs / attacked_seconds;
  stop = true;
  oversized.join();
  loris.join();
  idle_attacker.join();
  for (int fd : slow) ::close(fd);
  EXPECT_EQ(first_opened.load(), 2000);
  EXPECT_EQ(first_closed, 2000) << "every idle socket closed within request_deadline + 3 s";
  EXPECT_EQ(slow_closed, 50) << "trickling headers does not keep a connection";
  EXPECT_EQ(refused_frames.load(), 10);
  EXPECT_EQ(silent_closed.load(), 10);
  std::printf("dos: %.0f runs/s calm, %.0f runs/s under attack (%.0f%%)\n", calm, attacked, 100 * attacked / calm);
  // A floor against starvation (the attack holding the node's I/O thread,
  // or its accepts crowding out the workload's: the pace then falls to a
  // fraction), not the pace to a percent: that is a time, and on two cores
  // shared with 2,000 attacking sockets it measured 85% and 89.9% in clean
  // CI runs, 94-103% alone. The pace itself is the benchmark's to measure
  // (bench/run's flood phase; docs/security.md).
  EXPECT_GE(attacked, 0.7 * calm) << "calm " << calm << " runs/s, under attack " << attacked;
  EXPECT_TRUE(c.proc("n1").running());
}
TEST(DenialOfService, ConnectionCapsAndRateLimitsRefuseTheExcess) {
  ClusterOptions o;
  o.node_extra = "limits: {max_connections: 64, max_connections_per_address: 40, trigger_rate: 5, trigger_burst: 5}\n";
  Cluster c("dos_caps", tick_jobs, o);
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  const int port = c.port("n1");
  std::vector<int> fds;
  for (int i = 0; i < 60; ++i)
    if (int fd = open_socket(port); fd >= 0) fds.push_back(fd);
  int refused = 0;
  for (int fd : fds) refused += closed_by_server(fd, 300ms);
  for (int fd : fds) ::close(fd);
  EXPECT_EQ(refused, 20) << "40 from one address, the rest closed at accept";
  // The node frees the 40 slots as it reads each close: give it that moment
  // before the next connections are counted.
  std::this_thread::sleep_for(500ms);

  const std::vector<std::pair<std::string, std::string>> auth{{"Authorization", "Bearer " + admin_token}};
  int created = 0, limited = 0;
  for (int i = 0; i < 12; ++i) {
    auto r = http_request(port, "POST", "/api/v1/jobs/tick/trigger", auth);
    if (r.status == 201) ++created;
    if (r.status == 429) {
      ++limited;
      EXPECT_NE(r.body.find("\"code\":\"rate_limited\""), std::string::npos) << r.body;
      EXPECT_NE(r.headers.find("Retry-After: 1"), std::string::npos) << r.headers;
    }
  }
  EXPECT_GE(created, 5);
  EXPECT_LE(created, 7) << "a burst of 5 and 5 a second";
  EXPECT_EQ(created + limited, 12);
  const auto metrics = http_request(port, "GET", "/metrics").body;
  EXPECT_NE(metrics.find("baton_connections_refused_total 20"), std::string::npos);
  EXPECT_NE(metrics.find("baton_requests_rate_limited_total " + std::to_string(limited)), std::string::npos);
  // A webhook's ping queues a delivery ahead of alerts: it spends the same
  // budget (security review N-L1), spent above.
  int pings_limited = 0;
  for (int i = 0; i < 12; ++i)
    pings_limited += http_request(port, "POST", "/api/v1/webhooks/nope/ping", auth).status == 429;
  EXPECT_GE(pings_limited, 8) << "the trigger budget is spent; at most a refill of it pings";
}

// The same bounds with TLS on (the node's default): sockets that never
// start a handshake, clients that finish the handshake and then trickle a
// request's headers, WebSockets over TLS that never say hello, and
// oversized frames before a hello are each cut off by their bound, and a
// valid call is answered meanwhile. The pace under this attack is the
// plaintext test's (above) and the benchmark's to measure.
TEST(DenialOfService, OverTlsIdleSlowAndSilentClientsAreCutOffByTheirBounds) {
  ClusterOptions o;
  o.node_extra =
      "limits: {request_deadline: 3s, hello_deadline: 2s, max_connections_per_address: 4096, trigger_rate: 0}\n";
  Cluster c("dos_tls", tick_jobs, o);
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  const int port = c.port("n1");
  const auto began = std::chrono::steady_clock::now();
  std::vector<int> idle;  // connected, no ClientHello
  for (int i = 0; i < 500; ++i)
    if (int fd = open_socket(port); fd >= 0) idle.push_back(fd);
  ASSERT_EQ(idle.size(), 500u);

  auto ctx = baton::tls::make_client_context({ThrowawayCa::shared().ca(), "", ""});
  ASSERT_TRUE(ctx);
  asio::io_context ioc;
  constexpr int slow_clients = 20;
  std::vector<std::unique_ptr<asio::ssl::stream<tcp::socket>>> slow;
  for (int i = 0; i < slow_clients; ++i) {
    auto s = std::make_unique<asio::ssl::stream<tcp::socket>>(ioc, **ctx);
    s->next_layer().connect(loopback(port));
    s->handshake(asio::ssl::stream_base::client);
    asio::write(*s, asio::buffer(std::string("GET /status HTTP/1.1\r\nHost: x\r\n")));
    // From here on no read may block: a TLS 1.3 session ticket makes the
    // socket readable with no request data behind it.
    s->next_layer().non_blocking(true);
    slow.push_back(std::move(s));
  }
  std::atomic<int> refused_frames{0}, silent_closed{0};
  std::thread silent_and_oversized([&] {
    for (int i = 0; i < 5; ++i) {
      const auto e = talk(port, {std::string(600 * 1024, 'x')});
      refused_frames += e.closed && e.received.empty();  // closed unread, not answered
      silent_closed += talk(port, {}).closed;            // no hello at all: closed after hello_deadline
    }
  });
  // One thread trickles a header line to each slow client every 500 ms and
  // notices when the node has closed it (a TLS stream is not read and
  // written from two threads).
  std::vector<bool> slow_closed(slow_clients, false);
  const auto trickle_until = began + 8s;
  while (std::chrono::steady_clock::now() < trickle_until &&
         std::count(slow_closed.begin(), slow_closed.end(), true) < slow_clients) {
    for (int i = 0; i < slow_clients; ++i) {
      if (slow_closed[i]) continue;
      auto& s = *slow[static_cast<std::size_t>(i)];
      boost::system::error_code ec;
      pollfd p{s.next_layer().native_handle(), POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) {
        char buf[512];
        s.read_some(asio::buffer(buf), ec);  // what the node sent before closing, or the close itself
        if (ec && ec != asio::error::would_block && ec != asio::error::try_again) slow_closed[i] = true;
        if (ec || slow_closed[i]) continue;
      }
      asio::write(s, asio::buffer(std::string("X-Slow: 1\r\n")), ec);
      if (ec && ec != asio::error::would_block && ec != asio::error::try_again) slow_closed[i] = true;
    }
    std::this_thread::sleep_for(500ms);
  }
  int idle_closed = 0;
  for (int fd : idle) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(began + 7s - std::chrono::steady_clock::now());
    idle_closed += closed_by_server(fd, std::max(left, 1ms));
    ::close(fd);
  }
  silent_and_oversized.join();
  EXPECT_EQ(idle_closed, 500) << "a connection that never starts its handshake is closed by request_deadline";
  EXPECT_EQ(std::count(slow_closed.begin(), slow_closed.end(), true), slow_clients)
      << "trickling headers over TLS does not keep a connection";
  EXPECT_EQ(refused_frames.load(), 5);
  EXPECT_EQ(silent_closed.load(), 5);
  const std::vector<std::pair<std::string, std::string>> auth{{"Authorization", "Bearer " + admin_token}};
  EXPECT_EQ(http_request(port, "POST", "/api/v1/jobs/tick/trigger", auth).status, 201);
  EXPECT_TRUE(c.proc("n1").running());
}
