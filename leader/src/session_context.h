// What the node server's sessions share: the Beast names, the server's
// bounds and the context a session is made with. Included only by
// node_server.cpp and the session headers, so Beast stays in one
// translation unit.
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <functional>
#include <memory>

#include "auth_gate.h"
#include "baton/leader/node_server.h"
#include "baton/tls/tls_context.h"
#include "connection_budget.h"

namespace baton::leader::serving {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

/// Each worker link's id, server-wide.
inline std::atomic<std::uint64_t> next_link_id{1};

/// How long a worker refused for its credential or version is asked to wait
/// before it connects again (protocol version 2).
constexpr std::int64_t refusal_retry_after_ms = 30000;
/// Hellos judged at once, server-wide (each may be a database lookup on the
/// admin pool): a reconnecting fleet of thousands queues far fewer, and a
/// flood of made-up hellos cannot crowd out the API.
constexpr int admissions_max = 64;

/// A time of the node's monotonic clock (RealClock: the steady clock) as
/// the timers' time point.
inline std::chrono::steady_clock::time_point timer_time(MonoTime t) {
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(t.since_start));
}

/// Whether a request's path is one that authenticates its caller (the API
/// and the metrics): those a throttled source is refused.
inline bool takes_credential(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  return path.rfind("/api/", 0) == 0 || path == "/metrics";
}

/// Routes answered from memory on the I/O thread, never queued for the
/// admin threads (admin::Readiness): liveness and readiness. /readyz, which
/// answers without a credential, draws on a budget per source of its own
/// (SessionContext::readyz_gate: one request each, counted whatever the
/// answer), so that a prober never spends an application's budget of
/// failed authentications on the same host (security review N2).
inline bool answered_from_memory(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  return path == "/healthz" || path == "/readyz";
}
inline bool counted_per_source(std::string_view target) { return target.substr(0, target.find('?')) == "/readyz"; }

/// The server's set of open worker sessions (to close them all).
using Registry = std::function<void(std::shared_ptr<WorkerLink>, bool)>;

/// What a session needs of its server (the server outlives every session's
/// use of it: stop() joins the I/O thread first).
struct SessionContext {
  ServerHandlers& handlers;
  asio::thread_pool& admin;        ///< the API's requests
  asio::thread_pool& hellos;       ///< worker hellos: the API cannot occupy it
  std::atomic<int>& admin_queued;  ///< requests waiting for or in `admin`, server-wide
  AuthGate& gate;
  AuthGate& readyz_gate;         ///< GET /readyz's own budget per source
  std::atomic<int>& admissions;  ///< hellos waiting for or in admit_worker, server-wide
  Registry registry;
  /// Records the credential a link was admitted with (for revocation).
  std::function<void(std::uint64_t link, std::int64_t credential)> bind_credential;
  const ServerLimits& limits;
  tls::WorkerCertificates worker_certificates;
};

/// Why a hello is refused for its TLS client certificate, or "" (mutual
/// TLS, docs/security.md): the certificate binds the worker id.
inline std::string certificate_refusal(SSL* ssl, tls::WorkerCertificates policy, const std::string& worker_id) {
  if (policy == tls::WorkerCertificates::off) return {};
  const bool has = tls::has_peer_certificate(ssl);
  if (!has && policy == tls::WorkerCertificates::optional) return {};
  // A certificate presented is judged in either mode: one that names another
  // worker, or (were a handshake ever to let it through) did not verify, is
  // refused.
  if (!has) return "a client certificate naming worker '" + worker_id + "' is required";
  if (!tls::peer_certificate_for_clients(ssl))
    return "the client certificate is not for client authentication (its extendedKeyUsage must list clientAuth)";
  if (!tls::peer_certificate_names(ssl, worker_id))
    return "the client certificate does not name worker '" + worker_id + "'";
  return {};
}

}  // namespace baton::leader::serving
