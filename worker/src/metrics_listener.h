#pragma once
// The worker's optional metrics address (worker.yaml `metrics_listen`): a
// plain HTTP listener on the agent's own io_context that answers
// `GET /metrics` with what `render` returns, and 404 to anything else.
// One request per connection, read within 5 s and at most 8 KiB, then
// closed: a scraper's port, not a web server.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <string>

#include "baton/base/result.h"

namespace baton::worker {

class MetricsListener {
 public:
  MetricsListener(boost::asio::io_context& ioc, std::function<std::string()> render);
  /// Binds HOST:PORT and starts accepting; an error names the address.
  Result<void> start(const std::string& host_port);
  void stop();
  /// The port bound (the one asked for, or the kernel's for port 0).
  int port() const;

 private:
  void accept();
  boost::asio::io_context& ioc_;
  std::function<std::string()> render_;
  boost::asio::ip::tcp::acceptor acceptor_;
};

}  // namespace baton::worker
