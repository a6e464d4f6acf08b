#pragma once
// Which files a TLS endpoint is made of, as the configuration names them.
// No OpenSSL here: config readers include this, the Beast translation units
// include tls_context.h.
#include <string>

namespace baton::tls {

/// Whether a node asks the clients of its port for certificates (mutual TLS)
/// and what a worker's certificate must be.
enum class WorkerCertificates {
  off,       ///< no client certificates asked for; workers authenticate by token alone
  optional,  ///< asked for; a worker that presents one must be the worker id it names
  required,  ///< a worker's hello is refused unless its certificate names its worker id
};

/// A node's port: its certificate chain and key, reloaded when they change,
/// and the CA that signs worker certificates (mutual TLS).
struct ServerFiles {
  std::string cert_file;       ///< PEM chain, the node's certificate first
  std::string key_file;        ///< PEM private key of that certificate
  std::string client_ca_file;  ///< PEM CA(s) of worker certificates; "" unless worker_certificates != off
  WorkerCertificates worker_certificates = WorkerCertificates::off;
};

/// A worker's or a client's side: the CA a node's certificate must chain
/// to, and optionally the certificate this side presents.
struct ClientFiles {
  std::string ca_file;    ///< PEM CA(s) of the cluster's nodes; "" = the system's trusted roots
  std::string cert_file;  ///< PEM client certificate (mutual TLS); "" = none
  std::string key_file;   ///< its key; set exactly when cert_file is
};

const char* to_string(WorkerCertificates w);

}  // namespace baton::tls
