#pragma once
// A fault-injecting TCP proxy on loopback for the chaos harness: it forwards
// 127.0.0.1:listen -> 127.0.0.1:upstream and can, on command,
//   blackhole  stop moving bytes in both directions (connections stay open,
//              as in a network partition; TCP buffers fill, peers time out),
//   latency    delay every chunk by a fixed time (order kept per direction),
//   reset      abort every open connection with RST and refuse new ones,
//   heal       back to plain forwarding (a blackholed stream resumes).
// Runs on the caller's io_context; all commands are thread-safe.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}

namespace baton::chaos {

enum class ProxyMode { pass, blackhole, latency, reset };
const char* to_string(ProxyMode m);

class FaultProxy {
 public:
  /// Listens on 127.0.0.1:listen_port (0 = any free port).
  FaultProxy(boost::asio::io_context& ioc, int listen_port, int upstream_port);
  ~FaultProxy();

  int port() const;
  /// New connections go to 127.0.0.1:port from now on (a failover: the
  /// address clients use now leads to the new primary).
  void set_upstream(int port);
  void set_mode(ProxyMode mode, std::chrono::milliseconds latency = std::chrono::milliseconds(0));
  void heal() { set_mode(ProxyMode::pass); }
  /// Every connection open now stops moving bytes for good while staying
  /// open (a middlebox that lost its state, a server host gone without a
  /// FIN); new connections pass. Only a client-side deadline gets a client
  /// out of a call on such a connection.
  void strand_existing();
  ProxyMode mode() const;
  std::uint64_t bytes_forwarded() const;
  /// Chunks held by a blackhole or delayed by latency, and connections reset
  /// or refused: how the harness knows a fault took effect.
  std::uint64_t faults_applied() const;
  void stop();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace baton::chaos
