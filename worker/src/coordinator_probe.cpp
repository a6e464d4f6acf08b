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

constexpr std::size_t reply_bytes_max = 256 * 1024;

/// Runs `ioc` until `done` or `timeout`; false on timeout.
bool run_for(asio::io_context& ioc, const bool& done, Millis timeout) {
  ioc.restart();
  ioc.run_for(timeout);
  return done;
}

/// The status and body of an HTTP/1.1 answer read to the end of the
/// connection (the request said Connection: close).
Result<CoordinatorReply> parse_reply(const std::string& raw, const std::string& what) {
  if (raw.rfind("HTTP/1.", 0) != 0 || raw.size() < 12) return make_error(Errc::io, "no HTTP answer to " + what);
  CoordinatorReply r;
  try {
    r.status = std::stoi(raw.substr(9, 3));
  } catch (...) {
    return make_error(Errc::io, "a malformed status line answered " + what);
  }
  if (auto at = raw.find("\r\n\r\n"); at != std::string::npos) r.body = raw.substr(at + 4);
  return r;
}

template <class Stream>
Result<CoordinatorReply> exchange(asio::io_context& ioc, Stream& stream, const std::string& request,
                                  const std::string& what, Millis timeout) {
  bool done = false;
  boost::system::error_code ec;
  std::string reply;
  asio::async_write(stream, asio::buffer(request), [&](boost::system::error_code e, std::size_t) {
    if (e) {
      ec = e;
      done = true;
      return;
    }
    // To the end of the stream (Connection: close); a TLS peer that closes
    // without close_notify still gave the whole answer.
    asio::async_read(stream, asio::dynamic_buffer(reply, reply_bytes_max),
                     [&](boost::system::error_code e2, std::size_t) {
                       ec = e2;
                       done = true;
                     });
  });
  if (!run_for(ioc, done, timeout))
    return make_error(Errc::io, "no answer to " + what + " within " + std::to_string(timeout.count()) + " ms");
  if (reply.empty()) return make_error(Errc::io, "no answer to " + what + ": " + ec.message());
  return parse_reply(reply, what);
}

}  // namespace

Result<CoordinatorReply> ask_coordinator(const WorkerConfig& cfg, const std::string& endpoint,
                                         const std::string& method, const std::string& target,
                                         const std::map<std::string, std::string>& headers, const std::string& body,
                                         Millis timeout) {
  const auto colon = endpoint.rfind(':');
  const std::string host = endpoint.substr(0, colon), port = endpoint.substr(colon + 1);
  const std::string what = method + " " + target;
  auto fail = [](const std::string& why) { return make_error(Errc::io, why); };
  asio::io_context ioc;
  tcp::resolver resolver(ioc);
  boost::system::error_code ec;
  auto addresses = resolver.resolve(host, port, ec);
  if (ec) return fail("resolve: " + ec.message());
  // With `insecure` the stream's TLS layer is never used: only its socket.
  auto ctx = std::make_shared<tls::Context>(tls::Context::tls_client);
  if (!cfg.insecure) {
    auto made = tls::make_client_context(cfg.tls);
    if (!made) return fail(made.error().message);
    ctx = *made;
  }
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers) request += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST")
    request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  request += "\r\n" + body;

  asio::ssl::stream<tcp::socket> tls_stream(ioc, *ctx);
  tcp::socket& socket = tls_stream.next_layer();
  bool done = false;
  asio::async_connect(socket, addresses, [&](boost::system::error_code e, const tcp::endpoint&) {
    ec = e;
    done = true;
  });
  if (!run_for(ioc, done, timeout)) return fail("connect: no answer within " + std::to_string(timeout.count()) + " ms");
  if (ec) return fail("connect: " + ec.message());
  if (cfg.insecure) return exchange(ioc, socket, request, what, timeout);
  // Nothing is sent before the node's certificate verifies for the host
  // dialed: a bootstrap token never reaches an impostor.
  if (!tls::expect_peer_name(tls_stream.native_handle(), host))
    return fail("tls: cannot check a certificate against the host '" + host + "'");
  done = false;
  tls_stream.async_handshake(asio::ssl::stream_base::client, [&](boost::system::error_code e) {
    ec = e;
    done = true;
  });
  if (!run_for(ioc, done, timeout)) return fail("tls: no handshake within " + std::to_string(timeout.count()) + " ms");
  if (ec) return fail("tls: " + tls::handshake_failure(ec, tls_stream.native_handle()));
  return exchange(ioc, tls_stream, request, what, timeout);
}

std::string probe_coordinator(const WorkerConfig& cfg, const std::string& endpoint, Millis timeout) {
  auto reply = ask_coordinator(cfg, endpoint, "GET", "/healthz", {}, "", timeout);
  if (!reply) return reply.error().message;
  if (reply->status == 200) return "";
  return "GET /healthz answered " + std::to_string(reply->status);
}

}  // namespace baton::worker
