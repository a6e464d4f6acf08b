#pragma once
// Internal to the worker: its one connection to a coordinator. A WebSocket,
// plain (`insecure: true`) or TLS with the node's name checked against the
// address dialed; resolve, connect, both handshakes, one read at a time,
// a bounded queue of encoded messages with one write in flight, close.
// Frames in and out: what they mean is the Agent's. Beast stays in
// coordinator_link.cpp (and coordinator_probe.cpp): the Agent sees none.
//
// Every callback comes on the io_context's thread, and only for the link
// that is open now: a completion of a link closed or replaced since is
// dropped, so the Agent never hears of a connection it already gave up.
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "baton/tls/tls_files.h"

namespace baton::worker {

class CoordinatorLink {
 public:
  struct Events {
    /// Both handshakes are done: the hello may go.
    std::function<void()> opened;
    /// One frame read. The next read starts once this returns, if the link
    /// is still open (the Agent may close it from here).
    std::function<void(std::string frame)> frame;
    /// The link did not open (resolve, connect, TLS or WebSocket
    /// handshake): nothing was sent on it, so no token left this worker.
    std::function<void(const std::string& endpoint, const std::string& why)> failed;
    /// An open link's read or write failed.
    std::function<void(const std::string& endpoint, const std::string& why)> lost;
  };

  CoordinatorLink(boost::asio::io_context& ioc, Events events);
  ~CoordinatorLink();
  CoordinatorLink(const CoordinatorLink&) = delete;
  CoordinatorLink& operator=(const CoordinatorLink&) = delete;

  /// Dials `endpoint` (HOST:PORT), closing the link before. `tls` null: a
  /// plaintext link (`insecure`); otherwise its files are read now, so
  /// renewed ones are used at the next link. `idle_timeout`: a peer that
  /// answers no ping for that long is lost. May call `failed` before it
  /// returns (TLS files that do not load, a host no certificate can name).
  void open(const std::string& endpoint, const tls::ClientFiles* tls, std::chrono::milliseconds idle_timeout);
  /// Queues one message encoded for protocol(); false when the queue is
  /// full (the peer reads nothing: the caller closes the link).
  [[nodiscard]] bool send(std::string encoded);
  /// Drops the link and what waits to be written; nothing of it is heard
  /// of again.
  void close();

  /// The protocol version messages are encoded and batched for: the
  /// lowest until a welcome names the link's (set_protocol).
  int protocol() const;
  void set_protocol(int version);
  /// Messages waiting for the socket.
  std::size_t queued() const;
  /// Both handshakes done, and not closed or lost since.
  bool is_open() const;
  /// Changes at every open and close: a loop over one frame's messages
  /// stops when the link it read them from is gone.
  std::uint64_t generation() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::worker
