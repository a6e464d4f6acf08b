#pragma once
// The node's one listening port: HTTP admin requests and the worker
// WebSocket endpoint (path /ws), on Boost.Beast. This header has no Beast in
// it; node_server.cpp is the only translation unit of the node that includes
// Beast (it takes ~20 s to compile).
//
// With TLS (Beast's advanced_server_flex example): the first bytes of a
// connection tell a TLS handshake from plaintext; plaintext is answered with
// a 400 that says to use https/wss and closed. Sessions are templates over
// the stream (TLS or, with `insecure`, plain TCP).
//
// Discipline (Beast's examples): one strand per session, at most one write in
// flight, a bounded send queue (a worker that cannot keep up is closed), every
// handler checks its error_code first and a failure ends that session only.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "baton/base/clock.h"
#include "baton/base/http_message.h"
#include "baton/base/result.h"
#include "baton/leader/worker_auth.h"
#include "baton/leader/worker_link.h"
#include "baton/protocol/messages.h"
#include "baton/tls/tls_files.h"

namespace baton::leader {

/// Frames a worker's connection holds unsent, at most: past it the
/// connection is closed (the worker reattaches and its heartbeats list what
/// it holds), both where the control loop hands frames over and where the
/// connection's thread queues them for writing.
inline constexpr std::size_t session_send_queue_max = 4096;
/// Threads that serve the admin API; each has a token-lookup connection of
/// its own (node.cpp, lookup_lanes.h).
inline constexpr int admin_threads = 2;
inline constexpr std::size_t http_body_bytes_max = 1 << 20;
/// A request's start line and headers, at most.
inline constexpr std::size_t http_header_bytes_max = 16 * 1024;
static_assert(session_send_queue_max > 0);

/// Bounds on what an unauthenticated client can hold (docs/security.md,
/// "Denial of service"): connections, time to say something, frame size.
struct ServerLimits {
  int max_connections = 10000;             ///< open connections, all clients
  int max_connections_per_address = 2048;  ///< open connections from one IP address
  Millis request_deadline{15000};          ///< an HTTP request (headers and body) arrives within this
  Millis hello_deadline{5000};             ///< a WebSocket sends an authenticated hello within this
  /// Frames before the hello is accepted (limits.pre_hello_frame_bytes): a
  /// hello is a few hundred bytes, and 10,000 connections each holding a
  /// frame of this size is memory before any credential (security review M1).
  std::size_t pre_auth_frame_bytes_max = 64 * 1024;
  /// A request body larger than this is read only once the credential in
  /// its headers has been found valid (without one it is refused unread).
  std::size_t pre_auth_body_bytes_max = 64 * 1024;
  /// API requests waiting for or in the admin threads; beyond it a request
  /// is answered 503 with Retry-After at once.
  int admin_queue_max = 256;
  /// Failed authentications (API and worker hellos) per source, an IPv4
  /// address or an IPv6 /64: on average per second, and at once. Beyond,
  /// the source's credentials are refused unread (429 / unavailable) until
  /// its budget refills. A rate of 0: no limit.
  double auth_failure_rate = 2;
  double auth_failure_burst = 30;
  /// A throttled request's 429 is sent after this long (at most the
  /// source's wait): a client that waits for its answers is slowed to one
  /// request per hold and connection instead of costing the node a refusal
  /// at the rate it can send. 0: answered at once.
  Millis auth_throttle_hold{1000};
};

/// What the server asks of the node. Worker callbacks run on the server's
/// I/O thread and must not block; handle_http runs on an admin thread.
class ServerHandlers {
 public:
  virtual ~ServerHandlers() = default;
  virtual HttpResponse handle_http(const HttpRequest& request) = 0;
  /// Whether a hello (its token, id, labels, capacity) may attach. Runs on
  /// an admin thread and may block on the database; the connection reads
  /// nothing more until it returns.
  virtual WorkerAdmission admit_worker(const protocol::Hello& hello) = 0;
  /// An authenticated hello. The node attaches the worker or answers
  /// `redirect` (and closes) if it does not lead.
  virtual void on_worker_hello(const std::shared_ptr<WorkerLink>& link, const protocol::Hello& hello) = 0;
  virtual void on_worker_message(std::uint64_t link_id, const std::string& worker_id, protocol::Message m) = 0;
  virtual void on_worker_closed(std::uint64_t link_id, const std::string& worker_id) = 0;
  virtual void on_protocol_error() = 0;
  /// A connection refused at accept (a connection cap reached).
  virtual void on_connection_refused() {}
  /// A request or hello refused: its source failed to authenticate too often.
  virtual void on_auth_throttled() {}
  /// A request answered 503 at once: the admin queue was full.
  virtual void on_request_shed() {}
  /// A request whose body is read only with a credential came without one
  /// (counted as a failed authentication, reason `missing`).
  virtual void on_credential_missing() {}
  /// Whether an Authorization header value is a valid API credential. Runs
  /// on an admin thread, asked before a body larger than
  /// ServerLimits::pre_auth_body_bytes_max is read.
  virtual bool credential_valid(const std::string& authorization) {
    (void)authorization;
    return false;
  }
};

class NodeServer {
 public:
  /// A worker's hello is judged by `handlers.admit_worker`. `tls`: the port's certificate files (TLS only; a
  /// plaintext client gets a 400 naming the scheme to use), reloaded within
  /// a second of a change; nullopt = plaintext only (the `insecure` setting).
  NodeServer(std::string listen, ServerHandlers& handlers, ServerLimits limits = {},
             std::optional<tls::ServerFiles> tls = std::nullopt);
  ~NodeServer();
  NodeServer(const NodeServer&) = delete;
  NodeServer& operator=(const NodeServer&) = delete;

  /// Loads the certificate files and binds, then serves on a background
  /// thread. Errors name the config key and the file or address.
  Result<void> start();
  void stop();
  /// Closes every worker session (the node stepped down).
  void close_all_workers(const std::string& reason);
  /// Closes the sessions that attached with one of these worker credentials
  /// (revoked or replaced); how many.
  int close_workers_with_credentials(const std::vector<std::int64_t>& credential_ids, const std::string& reason);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::leader
