#include "baton/tls/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <boost/asio/ip/address.hpp>

namespace baton::tls {

const char* to_string(WorkerCertificates w) {
  switch (w) {
    case WorkerCertificates::off: return "off";
    case WorkerCertificates::optional: return "optional";
    case WorkerCertificates::required: return "required";
  }
  return "?";
}

namespace {

/// The last OpenSSL error, in words, and the queue cleared.
std::string openssl_reason() {
  unsigned long e = ERR_get_error();
  std::string out;
  for (unsigned long next = e; next != 0; next = ERR_get_error())
    if (out.empty()) {
      char buf[256];
      ERR_error_string_n(next, buf, sizeof buf);
      out = buf;
    }
  return out.empty() ? "unknown error" : out;
}

bool readable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Error file_error(const std::string& key, const std::string& path, const std::string& what,
                 const std::string& reason = "") {
  return make_error(Errc::bad_config,
                    key + ": " + what + " '" + path + "'" + (reason.empty() ? "" : " (" + reason + ")"));
}

/// An encrypted key is refused, never prompted for: OpenSSL's default would
/// read a passphrase from the terminal and block a service.
int no_passphrase(char*, int, int, void*) { return 0; }

/// TLS 1.2's suites: forward secrecy (ECDHE) and authenticated encryption
/// (AES-GCM, ChaCha20-Poly1305) only. TLS 1.3's are all of that kind and
/// stay OpenSSL's; 1.3 is chosen whenever both ends speak it.
constexpr const char* tls12_ciphers = "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL";

void set_floor(Context& ctx) {
  ctx.set_options(Context::default_workarounds | Context::no_sslv2 | Context::no_sslv3 | Context::no_tlsv1 |
                  Context::no_tlsv1_1 | Context::single_dh_use);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  // No renegotiation (a TLS 1.2 client could otherwise make the node redo
  // handshakes on one connection, each a private-key operation).
  SSL_CTX_set_options(ctx.native_handle(), SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_cipher_list(ctx.native_handle(), tls12_ciphers);
  SSL_CTX_set_default_passwd_cb(ctx.native_handle(), no_passphrase);
}

/// Loads a chain and its key into ctx; errors name the keys `prefix`cert_file/key_file.
Result<void> load_identity(Context& ctx, const std::string& prefix, const std::string& cert, const std::string& key) {
  if (!readable(cert)) return file_error(prefix + "cert_file", cert, "cannot read");
  if (!readable(key)) return file_error(prefix + "key_file", key, "cannot read");
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx.native_handle(), cert.c_str()) != 1)
    return file_error(prefix + "cert_file", cert, "no PEM certificate chain in", openssl_reason());
  const auto mismatch = [&] {
    return make_error(Errc::bad_config,
                      prefix + "key_file: '" + key + "' is not the key of " + prefix + "cert_file '" + cert + "'");
  };
  if (SSL_CTX_use_PrivateKey_file(ctx.native_handle(), key.c_str(), SSL_FILETYPE_PEM) != 1) {
    const std::string reason = openssl_reason();
    if (reason.find("key values mismatch") != std::string::npos) return mismatch();
    if (reason.find("bad decrypt") != std::string::npos || reason.find("bad password") != std::string::npos ||
        reason.find("processing error") != std::string::npos)
      return file_error(prefix + "key_file", key,
                        "holds an encrypted key (give it without a passphrase, mode 0600):", reason);
    return file_error(prefix + "key_file", key, "no PEM private key in", reason);
  }
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1) return mismatch();
  return {};
}

Result<void> load_ca(Context& ctx, const std::string& key, const std::string& ca) {
  if (!readable(ca)) return file_error(key, ca, "cannot read");
  ERR_clear_error();
  if (SSL_CTX_load_verify_locations(ctx.native_handle(), ca.c_str(), nullptr) != 1)
    return file_error(key, ca, "no PEM CA certificate in", openssl_reason());
  return {};
}

}  // namespace

Result<std::shared_ptr<Context>> make_server_context(const ServerFiles& files) {
  auto ctx = std::make_shared<Context>(Context::tls_server);
  set_floor(*ctx);
  // The server's order of suites decides, not the client's.
  SSL_CTX_set_options(ctx->native_handle(), SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Without it, a client resuming a session with a server that asks for
  // client certificates fails its handshake (SESSION_ID_CONTEXT_UNINITIALIZED).
  static const unsigned char session_context[] = "baton";
  SSL_CTX_set_session_id_context(ctx->native_handle(), session_context, sizeof session_context - 1);
  if (auto r = load_identity(*ctx, "tls.", files.cert_file, files.key_file); !r) return r.error();
  if (files.worker_certificates != WorkerCertificates::off) {
    if (auto r = load_ca(*ctx, "tls.client_ca_file", files.client_ca_file); !r) return r.error();
    // The CA names sent in the certificate request: a client picks a
    // certificate of that CA.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca_file.c_str()))
      SSL_CTX_set_client_CA_list(ctx->native_handle(), names);
    // Asked for, verified if given; whether a connection must have one is
    // decided at the hello (only workers are asked to; browsers are not).
    ctx->set_verify_mode(boost::asio::ssl::verify_peer);
  }
  return ctx;
}

Result<std::shared_ptr<Context>> make_client_context(const ClientFiles& files) {
  auto ctx = std::make_shared<Context>(Context::tls_client);
  set_floor(*ctx);
  if (files.ca_file.empty()) {
    // The system's trusted roots (a node certificate from a public or an
    // organization-wide CA installed on this host).
    ERR_clear_error();
    if (SSL_CTX_set_default_verify_paths(ctx->native_handle()) != 1)
      return make_error(Errc::bad_config, "tls.ca_file: none given and the system's CA store cannot be loaded (" +
                                              openssl_reason() + ")");
  } else if (auto r = load_ca(*ctx, "tls.ca_file", files.ca_file); !r) {
    return r.error();
  }
  if (files.cert_file.empty() != files.key_file.empty())
    return make_error(Errc::bad_config, "tls.cert_file and tls.key_file: give both or neither");
  if (!files.cert_file.empty())
    if (auto r = load_identity(*ctx, "tls.", files.cert_file, files.key_file); !r) return r.error();
  ctx->set_verify_mode(boost::asio::ssl::verify_peer);
  return ctx;
}

bool expect_peer_name(SSL* ssl, const std::string& host) {
  if (host.empty()) return false;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  if (!ec) return X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1;
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 &&
         X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size()) == 1;
}

std::string handshake_failure(const boost::system::error_code& ec, SSL* ssl) {
  const long verify = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
  if (verify != X509_V_OK) return std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
  return ec.message();
}

bool has_peer_certificate(SSL* ssl) { return SSL_get0_peer_certificate(ssl) != nullptr; }

bool peer_certificate_for_clients(SSL* ssl) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (!cert) return false;
  // Without the extension OpenSSL takes a certificate as good for every
  // use; a worker's must say it is for clients.
  return (X509_get_extension_flags(cert) & EXFLAG_XKUSAGE) != 0 &&
         (X509_get_extended_key_usage(cert) & XKU_SSL_CLIENT) != 0;
}

namespace {

/// Exact names only: DNS subjectAltNames if there are any, else the CN.
bool names_worker(X509* cert, const std::string& worker_id) {
  if (!cert || worker_id.empty()) return false;
  bool any_dns = false;
  if (auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr))) {
    bool found = false;
    for (int i = 0; i < sk_GENERAL_NAME_num(sans); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
      if (g->type != GEN_DNS) continue;
      any_dns = true;
      const auto* data = reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.dNSName));
      found = found || std::string(data, static_cast<std::size_t>(ASN1_STRING_length(g->d.dNSName))) == worker_id;
    }
    GENERAL_NAMES_free(sans);
    if (any_dns) return found;
  }
  X509_NAME* subject = X509_get_subject_name(cert);
  const int at = subject ? X509_NAME_get_index_by_NID(subject, NID_commonName, -1) : -1;
  if (at < 0) return false;
  const ASN1_STRING* cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, at));
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(cn)),
                     static_cast<std::size_t>(ASN1_STRING_length(cn))) == worker_id;
}

}  // namespace

bool peer_certificate_names(SSL* ssl, const std::string& worker_id) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  return cert && SSL_get_verify_result(ssl) == X509_V_OK && names_worker(cert, worker_id);
}

bool certificate_file_names_worker(const std::string& file, const std::string& worker_id) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(file.c_str(), "r"), std::fclose);
  if (!f) return false;
  std::unique_ptr<X509, void (*)(X509*)> cert(PEM_read_X509(f.get(), nullptr, nullptr, nullptr), X509_free);
  return names_worker(cert.get(), worker_id);
}

Result<std::unique_ptr<ServerContextSource>> ServerContextSource::open(const ServerFiles& files) {
  std::unique_ptr<ServerContextSource> s(new ServerContextSource(files));
  s->loaded_stamps_ = s->stamps();
  auto ctx = make_server_context(files);
  if (!ctx) return ctx.error();
  s->current_ = *ctx;
  return s;
}

std::shared_ptr<Context> ServerContextSource::current() const {
  std::lock_guard lock(mutex_);
  return current_;
}

std::vector<std::string> ServerContextSource::stamps() const {
  std::vector<std::string> out;
  for (const auto* path : {&files_.cert_file, &files_.key_file, &files_.client_ca_file}) {
    struct stat st {};
    if (path->empty() || ::stat(path->c_str(), &st) != 0) {
      out.emplace_back("-");
      continue;
    }
    out.push_back(std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
                  std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec) + ":" +
                  std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec));
  }
  return out;
}

ServerContextSource::ReloadOutcome ServerContextSource::reload_if_changed() {
  auto now = stamps();
  {
    std::lock_guard lock(mutex_);
    if (now == loaded_stamps_) return {};
    loaded_stamps_ = now;
  }
  auto ctx = make_server_context(files_);
  if (!ctx) return {ReloadOutcome::failed, ctx.error().message};
  std::lock_guard lock(mutex_);
  current_ = *ctx;
  return {ReloadOutcome::reloaded, {}};
}

}  // namespace baton::tls
