// TLS on the node's port, at the process level (docs/security.md, "TLS"):
// workers verify the node and every redirect before they send a token,
// plaintext is refused with a hint, certificates are renewed without a
// restart, mutual TLS binds a worker certificate to its worker id, and
// plaintext runs only when both sides say `insecure: true`.
#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <poll.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "cluster.h"

using namespace baton::testing;
namespace fs = std::filesystem;

namespace {

const char* jobs = R"(jobs:
  - name: tick
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
)";

/// Another CA than the one the cluster's nodes and clients use.
ThrowawayCa& other_ca() {
  static ThrowawayCa ca;
  return ca;
}

int attached_workers(Cluster& c, const std::string& node) {
  auto r = c.http(c.port(node), "GET", "/status");
  auto at = r.body.find("\"attached_workers\":");
  return at == std::string::npos ? -1 : std::atoi(r.body.c_str() + at + 19);
}

bool log_has(ChildProcess& p, const std::string& needle) { return p.log().find(needle) != std::string::npos; }

/// A TLS server on loopback with another CA's certificate for 127.0.0.1:
/// what a worker meets when something else answers at a leader's address.
/// Counts connections and handshakes completed, and keeps what it was sent.
class Impostor {
 public:
  Impostor() : port_(free_loopback_port()) {
    ctx_.reset(SSL_CTX_new(TLS_server_method()));
    SSL_CTX_use_certificate_chain_file(ctx_.get(), other_ca().node_cert().c_str());
    SSL_CTX_use_PrivateKey_file(ctx_.get(), other_ca().node_key().c_str(), SSL_FILETYPE_PEM);
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port_));
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0)
      throw std::runtime_error("impostor cannot listen");
    thread_ = std::thread([this] { serve(); });
  }
  ~Impostor() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int connections() const { return connections_; }
  int handshakes() const { return handshakes_; }
  std::string received() {
    std::lock_guard lock(mutex_);
    return received_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      ++connections_;
      timeval tv{2, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      std::unique_ptr<SSL, void (*)(SSL*)> ssl(SSL_new(ctx_.get()), SSL_free);
      SSL_set_fd(ssl.get(), c);
      if (SSL_accept(ssl.get()) == 1) {
        // Under TLS 1.3 the server's side may complete before the client
        // has judged the certificate: count a handshake only once the
        // client sends something.
        char buf[4096];
        int n = SSL_read(ssl.get(), buf, sizeof buf);
        if (n > 0) {
          ++handshakes_;
          std::lock_guard lock(mutex_);
          received_.append(buf, static_cast<std::size_t>(n));
        }
      }
      ::close(c);
    }
  }

  int port_;
  int fd_ = -1;
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx_{nullptr, SSL_CTX_free};
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0}, handshakes_{0};
  std::mutex mutex_;
  std::string received_;
  std::thread thread_;
};

}  // namespace

TEST(Tls, APlaintextClientIsToldToUseTlsAndCtlVerifiesTheNode) {
  Cluster c("tls_plain", jobs);
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  const int port = c.port("n1");
  EXPECT_EQ(http_request(port, "GET", "/healthz").status, 200);

  auto plain = http_request_plain(port, "GET", "/healthz");
  EXPECT_EQ(plain.status, 400);
  EXPECT_NE(plain.body.find("\"code\":\"tls_required\""), std::string::npos) << plain.body;
  EXPECT_NE(plain.body.find("use https://"), std::string::npos) << plain.body;

  // A client trusting another CA learns why it cannot go on, and sends nothing.
  auto wrong = http_exchange(port, other_ca().ca(), "GET", "/healthz", {}, "", std::chrono::seconds(5));
  EXPECT_EQ(wrong.status, 0);
  EXPECT_EQ(wrong.error, "certificate verify failed: unable to get local issuer certificate");

  const std::string addr = "127.0.0.1:" + std::to_string(port);
  ChildProcess bad_ca({BATON_BINARY, "ctl", "--addr", addr, "--ca", other_ca().ca(), "--token", admin_token, "status"},
                      c.dir() + "/ctl-bad-ca.log");
  EXPECT_NE(bad_ca.wait_for_exit(20s), 0);
  EXPECT_TRUE(log_has(bad_ca, "tls: certificate verify failed: unable to get local issuer certificate"))
      << bad_ca.log();
  ChildProcess insecure({BATON_BINARY, "ctl", "--addr", addr, "--insecure", "--token", admin_token, "status"},
                        c.dir() + "/ctl-insecure.log");
  EXPECT_NE(insecure.wait_for_exit(20s), 0);
  EXPECT_TRUE(log_has(insecure, "tls_required: this port speaks TLS")) << insecure.log();
  // A port that accepts connections and then says nothing: --timeout holds
  // through the handshake.
  {
    const int silent = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(silent, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(silent, 4), 0);
    ::getsockname(silent, reinterpret_cast<sockaddr*>(&a), &len);
    const auto t0 = std::chrono::steady_clock::now();
    ChildProcess stalled({BATON_BINARY, "ctl", "--addr", "127.0.0.1:" + std::to_string(ntohs(a.sin_port)), "--timeout",
                          "1s", "--token", admin_token, "status"},
                         c.dir() + "/ctl-stalled.log");
    EXPECT_NE(stalled.wait_for_exit(20s).value_or(0), 0);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_TRUE(log_has(stalled, "tls: no answer within --timeout")) << stalled.log();
    ::close(silent);
  }
  ChildProcess good(
      {BATON_BINARY, "ctl", "--addr", addr, "--ca", ThrowawayCa::shared().ca(), "--token", admin_token, "status"},
      c.dir() + "/ctl-good.log");
  EXPECT_EQ(good.wait_for_exit(20s), 0) << good.log();
}

TEST(Tls, AWorkerRefusesANodeItCannotVerifyBeforeSendingItsToken) {
  Cluster c("tls_wrong_ca", jobs);
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  c.worker_tls_override["w1"] = "tls: {ca_file: " + other_ca().ca() + "}\n";
  auto& w1 = c.start_worker("w1", 2);
  ASSERT_TRUE(wait_until([&] { return log_has(w1, "certificate verify failed"); }, 10s)) << w1.log();
  EXPECT_TRUE(log_has(w1, "error=\"tls: certificate verify failed: unable to get local issuer certificate\""))
      << w1.log();
  EXPECT_FALSE(log_has(w1, "worker_attached"));
  EXPECT_EQ(attached_workers(c, "n1"), 0);
  // The node saw a handshake abandoned, never a hello (not even a bad one).
  EXPECT_FALSE(log_has(c.proc("n1"), "worker_frame_rejected")) << c.proc("n1").log();
}

TEST(Tls, AWorkerFollowsARedirectOnlyToAnEndpointThatVerifies) {
  Impostor impostor;
  Cluster c("tls_redirect", jobs);
  // The leader's lease names the impostor's address: a follower redirects
  // workers there.
  c.start_node("n1", "advertise: 127.0.0.1:" + std::to_string(impostor.port()) + "\n");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  c.start_node("n2");
  auto& w1 = c.start_worker("w1", 2, {"n2"});
  ASSERT_TRUE(wait_until([&] { return impostor.connections() >= 2; }, 15s)) << w1.log();
  EXPECT_TRUE(log_has(w1, "worker_redirected")) << w1.log();
  EXPECT_TRUE(log_has(w1, "endpoint=127.0.0.1:" + std::to_string(impostor.port()) +
                              " error=\"tls: certificate verify failed: unable to get local issuer certificate\""))
      << w1.log();
  EXPECT_EQ(impostor.handshakes(), 0);
  EXPECT_EQ(impostor.received(), "") << "the worker sent something to an endpoint it could not verify";
  EXPECT_FALSE(log_has(w1, "worker_attached"));
}

TEST(Tls, ARenewedCertificateIsServedWithoutARestartAndOpenConnectionsStay) {
  Cluster c("tls_reload", jobs);
  const std::string live = c.dir() + "/live-tls";
  fs::create_directories(live);
  auto put = [&](const ThrowawayCa& ca) {
    // As a renewal tool does: new files renamed over the old ones.
    fs::copy_file(ca.node_key(), live + "/node.key.new", fs::copy_options::overwrite_existing);
    fs::copy_file(ca.node_cert(), live + "/node.crt.new", fs::copy_options::overwrite_existing);
    fs::rename(live + "/node.key.new", live + "/node.key");
    fs::rename(live + "/node.crt.new", live + "/node.crt");
  };
  put(ThrowawayCa::shared());
  c.start_node("n1", "", "tls: {cert_file: " + live + "/node.crt, key_file: " + live + "/node.key}\n");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  c.start_worker("w1", 2);
  ASSERT_TRUE(c.wait_for_workers("n1", 1));
  const int port = c.port("n1");

  put(other_ca());
  ASSERT_TRUE(wait_until(
      [&] { return http_exchange(port, other_ca().ca(), "GET", "/healthz", {}, "", 2s).status == 200; }, 10s))
      << c.proc("n1").log();
  EXPECT_TRUE(log_has(c.proc("n1"), "tls_reloaded"));
  EXPECT_EQ(http_request(port, "GET", "/healthz").error,
            "certificate verify failed: unable to get local issuer certificate");
  // The worker's connection began under the old certificate and goes on:
  // it still runs what it is given.
  auto status = http_exchange(port, other_ca().ca(), "GET", "/status", {}, "", 2s);
  EXPECT_NE(status.body.find("\"attached_workers\":1"), std::string::npos) << status.body;
  auto r = http_exchange(port, other_ca().ca(), "POST", "/api/v1/jobs/tick/trigger",
                         {{"Authorization", "Bearer " + admin_token}}, "", 5s);
  ASSERT_EQ(r.status, 201) << r.body;
  auto at = r.body.find("\"run_id\":");
  ASSERT_NE(at, std::string::npos);
  EXPECT_TRUE(c.wait_for_state(std::atoll(r.body.c_str() + at + 9), "SUCCEEDED", 10s));

  // A file that does not load leaves the last good certificate in use.
  std::ofstream(live + "/node.crt") << "not a certificate\n";
  ASSERT_TRUE(wait_until([&] { return log_has(c.proc("n1"), "tls_reload_failed"); }, 10s)) << c.proc("n1").log();
  EXPECT_EQ(http_exchange(port, other_ca().ca(), "GET", "/healthz", {}, "", 2s).status, 200);
}

TEST(Tls, MutualTlsBindsAWorkerCertificateToItsWorkerId) {
  ClusterOptions o;
  o.worker_certificates = "required";
  Cluster c("tls_mutual", jobs, o);
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  c.start_worker("w1", 2);
  ASSERT_TRUE(c.wait_for_workers("n1", 1)) << c.proc("w1").log();
  auto run = c.trigger("n1", "tick");
  ASSERT_NE(run, 0);
  EXPECT_TRUE(c.wait_for_state(run, "SUCCEEDED", 10s));

  const auto& ca = ThrowawayCa::shared();
  // w2 presenting w1's certificate (the right CA, another worker id).
  c.worker_tls_override["w2"] =
      "tls: {ca_file: " + ca.ca() + ", cert_file: " + ca.cert("w1") + ", key_file: " + ca.key("w1") + "}\n";
  auto& w2 = c.start_worker("w2", 2);
  // A second process claiming to be w1, with the token but no certificate.
  c.worker_tls_override["w1-impostor"] = "tls: {ca_file: " + ca.ca() + "}\n";
  auto& fake_w1 = c.start_worker("w1", 2, {}, "w1-impostor");
  ASSERT_TRUE(wait_until([&] { return log_has(w2, "the client certificate does not name worker 'w2'"); }, 10s))
      << w2.log();
  ASSERT_TRUE(wait_until([&] { return log_has(fake_w1, "a client certificate naming worker 'w1' is required"); }, 10s))
      << fake_w1.log();
  EXPECT_FALSE(log_has(w2, "worker_attached"));
  EXPECT_FALSE(log_has(fake_w1, "worker_attached"));
  // Certificates of the right CA naming their worker id, but not made for
  // a client: one for a server fails its handshake (OpenSSL checks the
  // stated use), one stating no use at all is refused at the hello
  // (checked failing without peer_certificate_for_clients: it attached).
  auto start_with = [&](const std::string& usage, const std::string& id) -> ChildProcess& {
    ThrowawayCa::shared().add_non_client_certificate(usage, id);
    c.worker_tls_override[id] =
        "tls: {ca_file: " + ca.ca() + ", cert_file: " + ca.cert(id) + ", key_file: " + ca.key(id) + "}\n";
    return c.start_worker(id, 2);
  };
  auto& w3 = start_with("server-usage", "w3-server-usage");
  auto& w4 = start_with("no-usage", "w4-no-usage");
  ASSERT_TRUE(wait_until([&] { return log_has(w3, "unsupported certificate"); }, 10s)) << w3.log();
  ASSERT_TRUE(wait_until([&] { return log_has(w4, "not for client authentication"); }, 10s)) << w4.log();
  EXPECT_FALSE(log_has(w3, "worker_attached"));
  EXPECT_FALSE(log_has(w4, "worker_attached"));
  // The real w1 is still the one attached, and still runs work.
  EXPECT_EQ(attached_workers(c, "n1"), 1);
  auto again = c.trigger("n1", "tick");
  EXPECT_TRUE(c.wait_for_state(again, "SUCCEEDED", 10s));
  EXPECT_EQ(c.db().run(again)->worker_id, "w1");
}

TEST(Tls, PlaintextRunsOnlyWhenBothSidesSayInsecure) {
  ClusterOptions o;
  o.tls = false;
  Cluster c("tls_insecure", jobs, o);
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  EXPECT_TRUE(log_has(c.proc("n1"), "insecure_plaintext")) << c.proc("n1").log();
  c.start_worker("w1", 2);
  ASSERT_TRUE(c.wait_for_workers("n1", 1));
  EXPECT_TRUE(log_has(c.proc("w1"), "insecure_plaintext"));
  auto run = c.trigger("n1", "tick");
  EXPECT_TRUE(c.wait_for_state(run, "SUCCEEDED", 10s));
  // A worker that expects TLS does not fall back to plaintext.
  c.worker_tls_override["w2"] = "tls: {ca_file: " + ThrowawayCa::shared().ca() + "}\n";
  auto& w2 = c.start_worker("w2", 2);
  ASSERT_TRUE(wait_until([&] { return log_has(w2, "worker_connect_failed"); }, 10s)) << w2.log();
  EXPECT_TRUE(log_has(w2, "error=\"tls: ")) << w2.log();
  EXPECT_EQ(attached_workers(c, "n1"), 1);
}
