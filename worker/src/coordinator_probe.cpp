#include "baton/worker/coordinator_probe.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "baton/tls/tls_context.h"

namespace baton::worker {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t reply_bytes_max = 256 * 1024;

/// Runs `ioc` until `done` or `timeout`; false on timeout.
bool run_for(asio::io_context& ioc, const bool& done, Millis timeout) {
  ioc.restart();
  ioc.run_for(timeout);
  return done;
}

/// Writes `request` and reads the answer with Beast's HTTP/1.1 parser
/// (status line, headers, a body by Content-Length, chunks or the end of
/// the stream), bounded: at most 16 KiB of headers and 256 KiB of body.
template <class Stream>
Result<CoordinatorReply> exchange(asio::io_context& ioc, Stream& stream,
                                  const http::request<http::string_body>& request, const std::string& what,
                                  Millis timeout) {
  bool done = false;
  boost::system::error_code ec;
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(reply_bytes_max);
  http::async_write(stream, request, [&](boost::system::error_code e, std::size_t) {
    if (e) {
      ec = e;
      done = true;
      return;
    }
    http::async_read(stream, buffer, parser, [&](boost::system::error_code e2, std::size_t) {
      ec = e2;
      done = true;
    });
  });
  if (!run_for(ioc, done, timeout))
    return make_error(Errc::io, "no answer to " + what + " within " + std::to_string(timeout.count()) + " ms");
  // A TLS peer that closes without close_notify after a complete answer
  // still gave the whole answer.
  if (ec && !parser.is_done()) {
    const bool nothing = !parser.is_header_done() && buffer.size() == 0;
    return make_error(Errc::io,
                      (nothing ? "no answer to " : "a malformed or cut HTTP answer to ") + what + ": " + ec.message());
  }
  CoordinatorReply r;
  r.status = static_cast<int>(parser.get().result_int());
  r.body = parser.get().body();
  return r;
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
  const http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) return fail("unknown HTTP method '" + method + "'");
  http::request<http::string_body> request{verb, target, 11};
  request.set(http::field::host, host);
  request.set(http::field::connection, "close");
  for (const auto& [k, v] : headers) request.set(k, v);
  if (!body.empty() || verb == http::verb::post) {
    request.set(http::field::content_type, "application/json");
    request.body() = body;
  }
  request.prepare_payload();

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
