// TLS contexts against certificates made by scripts/throwaway-ca, over real
// loopback handshakes.
#include "baton/tls/tls_context.h"

#include "baton/tls/certificate_facts.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

namespace baton::tls {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
namespace fs = std::filesystem;

/// Two throwaway CAs (a node and workers w1, w2 under each), made once.
class TlsFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/baton-tls-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    for (const char* ca : {"ca1", "ca2"}) {
      std::string cmd = std::string(BATON_SOURCE_DIR) + "/scripts/throwaway-ca " + dir_ + "/" + ca + " worker w1 w2";
      ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string f(const std::string& ca, const std::string& name) { return dir_ + "/" + ca + "/" + name; }
  static ServerFiles node_of(const std::string& ca) { return {f(ca, "node.crt"), f(ca, "node.key"), "", {}}; }
  static inline std::string dir_;
};

/// What one loopback handshake did on each side.
struct Handshake {
  std::string client_error;  ///< "" = the client's handshake succeeded
  bool server_ok = false;
  bool peer_has_certificate = false;
  bool peer_is_w1 = false, peer_is_w2 = false;
};

Handshake handshake(Context& server_ctx, Context& client_ctx, const std::string& expected_name = "127.0.0.1") {
  asio::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  Handshake out;
  std::thread server([&] {
    asio::io_context sioc;
    asio::ssl::stream<tcp::socket> s(sioc, server_ctx);
    boost::system::error_code ec;
    acceptor.accept(s.next_layer(), ec);
    if (ec) return;
    s.handshake(asio::ssl::stream_base::server, ec);
    out.server_ok = !ec;
    if (!ec) {
      out.peer_has_certificate = has_peer_certificate(s.native_handle());
      out.peer_is_w1 = peer_certificate_names(s.native_handle(), "w1");
      out.peer_is_w2 = peer_certificate_names(s.native_handle(), "w2");
      s.shutdown(ec);
    }
  });
  asio::ssl::stream<tcp::socket> c(ioc, client_ctx);
  boost::system::error_code ec;
  c.next_layer().connect(acceptor.local_endpoint(), ec);
  EXPECT_TRUE(expect_peer_name(c.native_handle(), expected_name));
  if (!ec) c.handshake(asio::ssl::stream_base::client, ec);
  if (ec) out.client_error = handshake_failure(ec, c.native_handle());
  c.next_layer().close(ec);
  server.join();
  return out;
}

TEST_F(TlsFiles, AClientVerifiesTheNodeByItsCaAndTheAddressItDialed) {
  auto server = make_server_context(node_of("ca1"));
  ASSERT_TRUE(server) << server.error();
  auto client = make_client_context({f("ca1", "ca.crt"), "", ""});
  ASSERT_TRUE(client) << client.error();
  auto ok = handshake(**server, **client);
  EXPECT_EQ(ok.client_error, "");
  EXPECT_TRUE(ok.server_ok);
  EXPECT_FALSE(ok.peer_has_certificate);

  // The right CA but another name: the node's certificate is for 127.0.0.1.
  auto wrong_name = handshake(**server, **client, "10.9.8.7");
  EXPECT_EQ(wrong_name.client_error, "certificate verify failed: IP address mismatch");
  auto wrong_host = handshake(**server, **client, "node.example");
  EXPECT_EQ(wrong_host.client_error, "certificate verify failed: hostname mismatch");
  EXPECT_EQ(handshake(**server, **client, "localhost").client_error, "");

  // Another CA: refused before anything is sent.
  auto other = make_client_context({f("ca2", "ca.crt"), "", ""});
  ASSERT_TRUE(other);
  auto refused = handshake(**server, **other);
  EXPECT_EQ(refused.client_error, "certificate verify failed: unable to get local issuer certificate");
  EXPECT_FALSE(refused.server_ok);
}

// docs/security.md, "TLS": on TLS 1.2 only suites with forward secrecy
// and authenticated encryption; no renegotiation; the server's order.
TEST_F(TlsFiles, TlsTwelveOffersOnlyEcdheWithAeadAndNoRenegotiation) {
  auto server = make_server_context(node_of("ca1"));
  ASSERT_TRUE(server) << server.error();
  SSL_CTX* s = (*server)->native_handle();
  EXPECT_TRUE(SSL_CTX_get_options(s) & SSL_OP_NO_RENEGOTIATION);
  EXPECT_TRUE(SSL_CTX_get_options(s) & SSL_OP_CIPHER_SERVER_PREFERENCE);
  int tls12 = 0;
  STACK_OF(SSL_CIPHER)* ciphers = SSL_CTX_get_ciphers(s);
  for (int i = 0; i < sk_SSL_CIPHER_num(ciphers); ++i) {
    const SSL_CIPHER* c = sk_SSL_CIPHER_value(ciphers, i);
    if (SSL_CIPHER_get_kx_nid(c) == NID_kx_any) continue;  // TLS 1.3's own suites
    ++tls12;
    EXPECT_EQ(SSL_CIPHER_get_kx_nid(c), NID_kx_ecdhe) << SSL_CIPHER_get_name(c);
    EXPECT_TRUE(SSL_CIPHER_is_aead(c)) << SSL_CIPHER_get_name(c);
  }
  EXPECT_GT(tls12, 0);

  // A TLS 1.2 client that offers only CBC suites (with ECDHE, which the
  // node's EC key could serve) is refused; one that offers ECDHE with
  // AES-GCM is served.
  auto offering = [&](const char* suites) {
    auto client = make_client_context({f("ca1", "ca.crt"), "", ""});
    EXPECT_TRUE(client);
    SSL_CTX_set_max_proto_version((*client)->native_handle(), TLS1_2_VERSION);
    EXPECT_EQ(SSL_CTX_set_cipher_list((*client)->native_handle(), suites), 1) << suites;
    return handshake(**server, **client);
  };
  EXPECT_NE(offering("ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA").client_error, "");
  EXPECT_FALSE(offering("ECDHE-ECDSA-AES128-SHA").server_ok);
  EXPECT_EQ(offering("ECDHE-ECDSA-AES256-GCM-SHA384").client_error, "");
}

TEST_F(TlsFiles, BadFilesAreErrorsNamingTheKeyAndTheFile) {
  auto missing = make_server_context({dir_ + "/nope.crt", f("ca1", "node.key"), "", {}});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "tls.cert_file: cannot read '" + dir_ + "/nope.crt'");
  auto mismatched = make_server_context({f("ca1", "node.crt"), f("ca1", "w1.key"), "", {}});
  ASSERT_FALSE(mismatched);
  EXPECT_EQ(mismatched.error().message, "tls.key_file: '" + f("ca1", "w1.key") + "' is not the key of tls.cert_file '" +
                                            f("ca1", "node.crt") + "'");
  auto not_pem = make_client_context({f("ca1", "node.key"), "", ""});
  ASSERT_FALSE(not_pem);
  EXPECT_NE(not_pem.error().message.find("tls.ca_file: no PEM CA certificate in '" + f("ca1", "node.key") + "' ("),
            std::string::npos)
      << not_pem.error().message;
  auto half = make_client_context({f("ca1", "ca.crt"), f("ca1", "w1.crt"), ""});
  ASSERT_FALSE(half);
  EXPECT_EQ(half.error().message, "tls.cert_file and tls.key_file: give both or neither");
  // No CA file: the system's roots, which do not include a throwaway CA.
  auto system_roots = make_client_context({"", "", ""});
  ASSERT_TRUE(system_roots) << system_roots.error();
  auto server = make_server_context(node_of("ca1"));
  ASSERT_TRUE(server);
  EXPECT_EQ(handshake(**server, **system_roots).client_error,
            "certificate verify failed: unable to get local issuer certificate");
  auto no_client_ca =
      make_server_context({f("ca1", "node.crt"), f("ca1", "node.key"), "", WorkerCertificates::required});
  ASSERT_FALSE(no_client_ca);
  EXPECT_EQ(no_client_ca.error().message, "tls.client_ca_file: cannot read ''");
}

TEST_F(TlsFiles, WorkerCertificatesAreVerifiedAndNameTheirWorker) {
  ServerFiles files = node_of("ca1");
  files.client_ca_file = f("ca1", "ca.crt");
  files.worker_certificates = WorkerCertificates::required;
  auto server = make_server_context(files);
  ASSERT_TRUE(server) << server.error();

  auto w1 = make_client_context({f("ca1", "ca.crt"), f("ca1", "w1.crt"), f("ca1", "w1.key")});
  ASSERT_TRUE(w1) << w1.error();
  auto as_w1 = handshake(**server, **w1);
  EXPECT_EQ(as_w1.client_error, "");
  EXPECT_TRUE(as_w1.peer_has_certificate);
  EXPECT_TRUE(as_w1.peer_is_w1);
  EXPECT_FALSE(as_w1.peer_is_w2);  // a certificate names one worker

  // No certificate: the handshake is allowed (a browser, ctl); the hello is judged.
  auto anonymous = make_client_context({f("ca1", "ca.crt"), "", ""});
  auto none = handshake(**server, **anonymous);
  EXPECT_TRUE(none.server_ok);
  EXPECT_FALSE(none.peer_has_certificate);
  EXPECT_FALSE(none.peer_is_w1);

  // A worker certificate of another CA never completes a handshake.
  auto foreign = make_client_context({f("ca1", "ca.crt"), f("ca2", "w1.crt"), f("ca2", "w1.key")});
  ASSERT_TRUE(foreign);
  auto refused = handshake(**server, **foreign);
  EXPECT_FALSE(refused.server_ok);  // (under TLS 1.3 the client learns it at its first read)
}

TEST_F(TlsFiles, ARenewedCertificateIsServedWithoutARestartAndABrokenOneIsNot) {
  const std::string live = dir_ + "/live";
  fs::create_directories(live);
  fs::copy_file(f("ca1", "node.crt"), live + "/node.crt", fs::copy_options::overwrite_existing);
  fs::copy_file(f("ca1", "node.key"), live + "/node.key", fs::copy_options::overwrite_existing);
  auto source = ServerContextSource::open({live + "/node.crt", live + "/node.key", "", {}});
  ASSERT_TRUE(source) << source.error();
  auto& s = **source;
  auto trusts_ca1 = make_client_context({f("ca1", "ca.crt"), "", ""});
  auto trusts_ca2 = make_client_context({f("ca2", "ca.crt"), "", ""});
  EXPECT_EQ(handshake(*s.current(), **trusts_ca1).client_error, "");
  EXPECT_EQ(s.reload_if_changed().kind, ServerContextSource::ReloadOutcome::unchanged);

  // Renewed by another CA: new connections get the new certificate.
  auto first = s.current();
  fs::copy_file(f("ca2", "node.crt"), live + "/node.crt", fs::copy_options::overwrite_existing);
  fs::copy_file(f("ca2", "node.key"), live + "/node.key", fs::copy_options::overwrite_existing);
  EXPECT_EQ(s.reload_if_changed().kind, ServerContextSource::ReloadOutcome::reloaded);
  EXPECT_EQ(handshake(*s.current(), **trusts_ca2).client_error, "");
  EXPECT_NE(handshake(*s.current(), **trusts_ca1).client_error, "");
  EXPECT_EQ(handshake(*first, **trusts_ca1).client_error, "");  // what an open connection holds is unchanged

  // Half-written (the certificate replaced, its key not yet): the last good
  // context stays, the failure is reported once.
  fs::copy_file(f("ca1", "node.crt"), live + "/node.crt", fs::copy_options::overwrite_existing);
  auto broken = s.reload_if_changed();
  EXPECT_EQ(broken.kind, ServerContextSource::ReloadOutcome::failed);
  EXPECT_NE(broken.error.find("is not the key of tls.cert_file"), std::string::npos) << broken.error;
  EXPECT_EQ(s.reload_if_changed().kind, ServerContextSource::ReloadOutcome::unchanged);
  EXPECT_EQ(handshake(*s.current(), **trusts_ca2).client_error, "");
  fs::copy_file(f("ca1", "node.key"), live + "/node.key", fs::copy_options::overwrite_existing);
  EXPECT_EQ(s.reload_if_changed().kind, ServerContextSource::ReloadOutcome::reloaded);
  EXPECT_EQ(handshake(*s.current(), **trusts_ca1).client_error, "");
}

}  // namespace
}  // namespace baton::tls

namespace baton::tls {
namespace {

TEST_F(TlsFiles, ACertificatesNamesAndValidityAreRead) {
  auto facts = read_certificate(f("ca1", "node.crt"));
  ASSERT_TRUE(facts) << facts.error();
  EXPECT_EQ(facts->subject, "CN = baton node");
  EXPECT_EQ(facts->names, (std::vector<std::string>{"IP:127.0.0.1", "IP:::1", "DNS:localhost"}));
  const double days_left = (facts->not_after_unix - static_cast<double>(std::time(nullptr))) / 86400;
  EXPECT_GT(days_left, 29);  // scripts/throwaway-ca: 30 days
  EXPECT_LT(days_left, 31);
  EXPECT_FALSE(facts->self_signed);
  EXPECT_TRUE(read_certificate(f("ca1", "ca.crt"))->self_signed);
  EXPECT_TRUE(certificate_names_host(f("ca1", "node.crt"), "127.0.0.1"));
  EXPECT_TRUE(certificate_names_host(f("ca1", "node.crt"), "localhost"));
  EXPECT_FALSE(certificate_names_host(f("ca1", "node.crt"), "10.0.0.7"));
  EXPECT_FALSE(certificate_names_host(f("ca1", "node.crt"), "node7.example"));
  EXPECT_TRUE(certificate_names_host(f("ca1", "w1.crt"), "w1"));
  // A worker id is matched exactly, not as a host name.
  EXPECT_TRUE(certificate_file_names_worker(f("ca1", "w1.crt"), "w1"));
  EXPECT_FALSE(certificate_file_names_worker(f("ca1", "w1.crt"), "W1"));
  EXPECT_FALSE(certificate_file_names_worker(f("ca1", "w1.crt"), "w1."));
  EXPECT_FALSE(certificate_file_names_worker(f("ca1", "w1.crt"), ".w1"));
  EXPECT_FALSE(certificate_file_names_worker(f("ca1", "w1.crt"), "w2"));
  auto missing = read_certificate(dir_ + "/none.crt");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "no PEM certificate in '" + dir_ + "/none.crt'");
}

}  // namespace
}  // namespace baton::tls
