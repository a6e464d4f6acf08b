// The one translation unit of notify that includes Beast.
#include "baton/notify/https_post.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
#include <vector>

#include "baton/tls/await_operation.h"
#include "baton/tls/tls_context.h"

namespace baton::notify {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct HttpsPoster::Trust {
  std::shared_ptr<tls::Context> context;
};

namespace {

/// Every operation is asynchronous: the stream's deadline then bounds it, and
/// a receiver that accepts and says nothing cannot hold the sender past its
/// timeout.
template <class Start>
beast::error_code await(asio::io_context& ioc, Start start) {
  return tls::await_operation(ioc, start);
}

HttpAnswer no_answer(std::string why) { return HttpAnswer{std::nullopt, std::move(why)}; }

}  // namespace

HttpsPoster::HttpsPoster(std::unique_ptr<Trust> trust, Millis timeout, DestinationPolicy destinations)
    : trust_(std::move(trust)), timeout_(timeout), destinations_(std::move(destinations)) {}
HttpsPoster::~HttpsPoster() = default;

Result<std::unique_ptr<HttpsPoster>> HttpsPoster::make(const tls::ClientFiles& trust, Millis timeout,
                                                       DestinationPolicy destinations) {
  auto ctx = tls::make_client_context(trust);
  if (!ctx) return ctx.error();
  return std::unique_ptr<HttpsPoster>(
      new HttpsPoster(std::make_unique<Trust>(Trust{*ctx}), timeout, std::move(destinations)));
}

HttpAnswer HttpsPoster::post(const OutgoingPost& p) const {
  auto parsed = boost::urls::parse_uri(p.url);
  if (!parsed) return no_answer("url '" + p.url + "' is not a URL");
  const auto& u = *parsed;
  if (u.scheme() != "https") return no_answer("url '" + p.url + "' is not https");
  const std::string host = u.host_address();
  if (host.empty()) return no_answer("url '" + p.url + "' names no host");
  const std::string port = u.has_port() ? std::string(u.port()) : "443";
  std::string target = u.encoded_path().empty() ? "/" : std::string(u.encoded_path());
  if (u.has_query()) target += "?" + std::string(u.encoded_query());

  asio::io_context ioc;
  asio::ip::tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto addresses = resolver.resolve(host, port, ec);
  const std::string where = host + ":" + port;
  if (ec) return no_answer("cannot resolve " + where + ": " + ec.message());
  // Judged on the addresses connected to, not on the name: a name that
  // resolves to this host is refused as its address would be.
  std::vector<asio::ip::tcp::endpoint> allowed;
  std::string refused;
  for (const auto& entry : addresses) {
    const auto& ep = entry.endpoint();
    auto why = destination_refusal(ep.address().to_string(), ep.port(), destinations_);
    if (why.empty())
      allowed.push_back(ep);
    else if (refused.empty())
      refused = std::move(why);
  }
  if (allowed.empty()) return no_answer("not sent: " + refused);
  const auto said = [&](const beast::error_code& e) {
    return e == beast::error::timeout
               ? "no answer from " + where + " within " + std::to_string(timeout_.count()) + " ms"
               : where + ": " + e.message();
  };
  beast::ssl_stream<beast::tcp_stream> stream(ioc, *trust_->context);
  beast::get_lowest_layer(stream).expires_after(timeout_);
  if ((ec = await(ioc, [&](auto h) { beast::get_lowest_layer(stream).async_connect(allowed, h); })))
    return no_answer("connect: " + said(ec));
  if (!tls::expect_peer_name(stream.native_handle(), host))
    return no_answer("tls: cannot check a certificate against the host '" + host + "'");
  if ((ec = await(ioc, [&](auto h) { stream.async_handshake(asio::ssl::stream_base::client, h); })))
    return no_answer("tls: " + (ec == beast::error::timeout
                                    ? said(ec)
                                    : where + ": " + tls::handshake_failure(ec, stream.native_handle())));

  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, u.has_port() ? host + ":" + port : host);
  for (const auto& [name, value] : p.headers) req.set(name, value);
  req.body() = p.body;
  req.prepare_payload();
  if ((ec = await(ioc, [&](auto h) { http::async_write(stream, req, h); }))) return no_answer("send: " + said(ec));
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024);  // the answer's body is not used: a receiver may not make it large
  ec = await(ioc, [&](auto h) { http::async_read(stream, buffer, parser, h); });
  if (ec && !parser.is_header_done()) return no_answer("answer: " + said(ec));
  HttpAnswer out{static_cast<int>(parser.get().result_int()), {}};
  if (!ec) await(ioc, [&](auto h) { stream.async_shutdown(h); });  // close_notify, bounded like the rest
  return out;
}

}  // namespace baton::notify
