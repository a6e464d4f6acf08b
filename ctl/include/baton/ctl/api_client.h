#pragma once
// The admin API from the command line's side: one HTTP/1.1 request per
// call, a bearer token, and a follower's 307 to the leader followed (at most
// three hops, the same method and body). HTTPS, the node's certificate
// verified against a CA and the address given; plain HTTP only when told.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "baton/tls/tls_files.h"

namespace baton::ctl {

struct ApiReply {
  int status = 0;           ///< 0: no answer (see `error`)
  std::string body;         ///< JSON for every /api/v1 answer
  std::string error;        ///< why there was no answer (connect, timeout, bad redirect)
  std::string answered_by;  ///< HOST:PORT that answered (after redirects)
  bool sent = false;        ///< the request left for a node (another node must not be asked it again)
};

/// The addresses of a comma list ("a:1, b:2"), spaces trimmed, empty ones dropped.
std::vector<std::string> address_list(const std::string& addrs);

/// `s` as one percent-encoded path segment ("a b" -> "a%20b").
std::string path_segment(const std::string& s);

/// Why a redirect to `location` is not followed with the token, or "" when
/// it is: another scheme than the client speaks never; with TLS verified
/// by the system's roots (no ca_file), which any public certificate
/// satisfies, only to the address the client was given (`configured`); a
/// cluster's own CA (ca_file) pins where the token may go (security review
/// N-L5, as the Python client does). `configured` may be a comma list: each
/// of its addresses was given.
std::string redirect_refusal(const std::string& configured, const std::string& location,
                             const std::optional<tls::ClientFiles>& tls);

class ApiClient {
 public:
  /// `addr`: HOST:PORT, or several as a comma list (BATON_ADDR, as the
  /// Python client takes it): asked in order until one answers; the next is
  /// asked only when the request never left for the one before (a refused
  /// or timed-out connection, a failed TLS handshake), so no request is
  /// made twice. `tls`: how to verify the nodes (ca_file "" = the system's
  /// roots); nullopt = plaintext HTTP (a node with `insecure: true`). A
  /// redirect is followed only to the same scheme.
  ApiClient(std::string addr, std::string token, std::chrono::milliseconds timeout = std::chrono::seconds(10),
            std::optional<tls::ClientFiles> tls = tls::ClientFiles{});
  ApiReply call(const std::string& method, const std::string& target, const std::string& body = "",
                const std::string& idempotency_key = "") const;
  const std::string& addr() const { return addr_; }

 private:
  std::string addr_;
  std::string token_;
  std::chrono::milliseconds timeout_;
  std::optional<tls::ClientFiles> tls_;
};

}  // namespace baton::ctl
