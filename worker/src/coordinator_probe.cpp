#include "baton/worker/coordinator_probe.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include "baton/tls/tls_context.h"

namespace baton::worker {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

/// Runs `ioc` until `done` or `timeout`; false on timeout.
bool run_for(asio::io_context& ioc, const bool& done, Millis timeout) {
  ioc.restart();
  ioc.run_for(timeout);
  return done;
}

/// Sends GET /healthz over `stream` and reads the status line.
template <class Stream>
std::string ask_healthz(asio::io_context& ioc, Stream& stream, const std::string& host, Millis timeout) {
  const std::string req = "GET /healthz HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n";
  bool done = false;
  boost::system::error_code ec;
  std::string reply;
  asio::async_write(stream, asio::buffer(req), [&](boost::system::error_code e, std::size_t) {
    if (e) {
      ec = e;
      done = true;
      return;
    }
    asio::async_read(stream, asio::dynamic_buffer(reply, 4096), asio::transfer_at_least(12),
                     [&](boost::system::error_code e2, std::size_t) {
                       ec = e2;
                       done = true;
                     });
  });
  if (!run_for(ioc, done, timeout))
    return "no answer to GET /healthz within " + std::to_string(timeout.count()) + " ms";
  if (reply.rfind("HTTP/1.1 200", 0) == 0) return "";
  if (reply.empty()) return "no answer to GET /healthz: " + ec.message();
  return "GET /healthz answered '" + reply.substr(0, reply.find('\r')) + "'";
}

}  // namespace

std::string probe_coordinator(const WorkerConfig& cfg, const std::string& endpoint, Millis timeout) {
  const auto colon = endpoint.rfind(':');
  const std::string host = endpoint.substr(0, colon), port = endpoint.substr(colon + 1);
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  auto addresses = resolver.resolve(host, port, ec);
  if (ec) return "resolve: " + ec.message();
  // With `insecure` the stream's TLS layer is never used: only its socket.
  auto ctx = std::make_shared<tls::Context>(tls::Context::tls_client);
  if (!cfg.insecure) {
    auto made = tls::make_client_context(cfg.tls);
    if (!made) return made.error().message;
    ctx = *made;
  }
  asio::ssl::stream<tcp::socket> tls_stream(ioc, *ctx);
  tcp::socket& socket = tls_stream.next_layer();
  bool done = false;
  asio::async_connect(socket, addresses, [&](boost::system::error_code e, const tcp::endpoint&) {
    ec = e;
    done = true;
  });
  if (!run_for(ioc, done, timeout)) return "connect: no answer within " + std::to_string(timeout.count()) + " ms";
  if (ec) return "connect: " + ec.message();
  if (cfg.insecure) return ask_healthz(ioc, socket, host, timeout);
  if (!tls::expect_peer_name(tls_stream.native_handle(), host))
    return "tls: cannot check a certificate against the host '" + host + "'";
  done = false;
  tls_stream.async_handshake(asio::ssl::stream_base::client, [&](boost::system::error_code e) {
    ec = e;
    done = true;
  });
  if (!run_for(ioc, done, timeout)) return "tls: no handshake within " + std::to_string(timeout.count()) + " ms";
  if (ec) return "tls: " + tls::handshake_failure(ec, tls_stream.native_handle());
  return ask_healthz(ioc, tls_stream, host, timeout);
}

}  // namespace baton::worker
