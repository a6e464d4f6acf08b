#pragma once
// OpenSSL contexts for the node's port and for its clients (Asio's
// ssl::context), and the checks around a handshake that Asio leaves to us:
// which name the peer's certificate must carry, why a handshake failed, which
// worker a client certificate names. Every Beast translation unit that speaks
// TLS builds on this; nothing here does I/O beyond reading the files.
#include <openssl/ssl.h>

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "baton/base/result.h"
#include "baton/tls/tls_files.h"

namespace baton::tls {

using Context = boost::asio::ssl::context;

/// A server context: TLS 1.2 or later, the node's chain and key (checked to
/// match), and when worker certificates are not off, a request for a client
/// certificate verified against client_ca_file (one that does not verify
/// fails the handshake; none at all is allowed here and judged per hello).
/// Errors name the config key and the file.
Result<std::shared_ptr<Context>> make_server_context(const ServerFiles& files);

/// A client context: TLS 1.2 or later, the peer verified against ca_file,
/// cert_file/key_file presented when given. Pair every connection with
/// expect_peer_name.
Result<std::shared_ptr<Context>> make_client_context(const ClientFiles& files);

/// Before a client's handshake: the name (SNI) and the name or IP address
/// the node's certificate must carry, so a certificate of the right CA for
/// another host is refused too. False when no check could be set (an empty
/// or malformed host): the caller must not connect then.
[[nodiscard]] bool expect_peer_name(SSL* ssl, const std::string& host);

/// Why a handshake failed, for a log line or an error an operator can act
/// on: the certificate verification error when there was one ("certificate
/// verify failed: unable to get local issuer certificate"), else the error.
std::string handshake_failure(const boost::system::error_code& ec, SSL* ssl);

/// Whether the peer presented a certificate at all (verified or not).
bool has_peer_certificate(SSL* ssl);
/// Whether the peer's certificate is one for client authentication: an
/// extendedKeyUsage extension that lists clientAuth. A certificate made for
/// a server (or with no stated use) does not identify a worker
/// (docs/security.md, "TLS": a dedicated worker CA).
bool peer_certificate_for_clients(SSL* ssl);

/// Whether the peer's certificate verified and names `worker_id` exactly,
/// byte for byte: one of its DNS subjectAltNames or, lacking any, its common
/// name (worker ids are case-sensitive and are not host names: no case
/// folding, no wildcards, no subdomain matching).
bool peer_certificate_names(SSL* ssl, const std::string& worker_id);

/// The same test on a certificate file (`baton doctor`).
bool certificate_file_names_worker(const std::string& file, const std::string& worker_id);

/// The server context of a node's port, reloaded when its files change: a
/// renewed certificate is served to new connections without a restart;
/// connections already open keep the one they started with. A file that
/// cannot be loaded leaves the previous context in use (the outcome says
/// why). Thread-safe.
class ServerContextSource {
 public:
  static Result<std::unique_ptr<ServerContextSource>> open(const ServerFiles& files);

  std::shared_ptr<Context> current() const;
  const ServerFiles& files() const { return files_; }

  struct ReloadOutcome {
    enum Kind { unchanged, reloaded, failed } kind = unchanged;
    std::string error;  ///< for failed
  };
  /// Compares the files with what was last loaded (size, change time,
  /// inode) and reloads if any differs. A failure is reported once per
  /// change, then `unchanged` until the files change again.
  ReloadOutcome reload_if_changed();

 private:
  explicit ServerContextSource(ServerFiles files) : files_(std::move(files)) {}
  std::vector<std::string> stamps() const;

  const ServerFiles files_;
  mutable std::mutex mutex_;
  std::shared_ptr<Context> current_;
  std::vector<std::string> loaded_stamps_;  ///< what current_ (or the last failure) was made from
};

}  // namespace baton::tls
