// The one translation unit of ctl that includes Beast.
#include "baton/ctl/api_client.h"

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/url.hpp>

#include "baton/tls/await_operation.h"
#include "baton/tls/tls_context.h"

namespace baton::ctl {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

/// "HOST:PORT" -> host, port; false when it is not that shape.
bool split_addr(const std::string& addr, std::string& host, std::string& port) {
  auto colon = addr.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == addr.size()) return false;
  host = addr.substr(0, colon);
  port = addr.substr(colon + 1);
  return true;
}

struct Request {
  const std::string& host;
  const std::string& token;
  const std::string& method;
  const std::string& target;
  const std::string& body;
  const std::string& idempotency_key;
};

/// Every operation here is asynchronous: the stream's deadline then bounds
/// it, and a node that accepts and says nothing cannot hang `ctl` past
/// --timeout.
template <class Start>
beast::error_code await(asio::io_context& ioc, Start start) {
  return tls::await_operation(ioc, start);
}

/// One request and its answer over a connected stream (plain or TLS).
template <class Stream>
beast::error_code exchange(asio::io_context& ioc, Stream& stream, const Request& r, ApiReply& out,
                           std::string& location) {
  http::request<http::string_body> req{http::string_to_verb(r.method), r.target, 11};
  req.set(http::field::host, r.host);
  req.set(http::field::user_agent, "baton-ctl");
  if (!r.token.empty()) req.set(http::field::authorization, "Bearer " + r.token);
  if (!r.idempotency_key.empty()) req.set("Idempotency-Key", r.idempotency_key);
  if (!r.body.empty()) req.set(http::field::content_type, "application/json");
  req.body() = r.body;
  req.prepare_payload();
  if (auto ec = await(ioc, [&](auto h) { http::async_write(stream, req, h); })) return ec;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  if (auto ec = await(ioc, [&](auto h) { http::async_read(stream, buffer, parser, h); })) return ec;
  auto res = parser.release();
  out.status = static_cast<int>(res.result_int());
  out.body = std::move(res.body());
  if (auto l = res.find(http::field::location); l != res.end()) location = std::string(l->value());
  return {};
}

ApiReply once(const std::string& addr, const std::string& token, std::chrono::milliseconds timeout,
              const std::optional<tls::ClientFiles>& tls_files, const std::string& method, const std::string& target,
              const std::string& body, const std::string& idempotency_key, std::string& location) {
  ApiReply out;
  out.answered_by = addr;
  std::string host, port;
  if (!split_addr(addr, host, port)) {
    out.error = "address '" + addr + "' is not HOST:PORT";
    return out;
  }
  const Request request{host, token, method, target, body, idempotency_key};
  const auto unreachable = [&](const std::string& why) {
    out.status = 0;
    out.error = "cannot reach " + addr + ": " + why;
    return out;
  };
  asio::io_context ioc;
  asio::ip::tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto addresses = resolver.resolve(host, port, ec);
  if (ec) return unreachable(ec.message());
  const auto said = [](const beast::error_code& e) {
    return e == beast::error::timeout ? std::string("no answer within --timeout") : e.message();
  };
  if (!tls_files) {
    beast::tcp_stream stream(ioc);
    stream.expires_after(timeout);
    if ((ec = await(ioc, [&](auto h) { stream.async_connect(addresses, h); }))) return unreachable(said(ec));
    out.sent = true;
    if ((ec = exchange(ioc, stream, request, out, location))) return unreachable(said(ec));
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    return out;
  }
  auto ctx = tls::make_client_context(*tls_files);
  if (!ctx) {
    out.error = ctx.error().message;
    return out;
  }
  beast::ssl_stream<beast::tcp_stream> stream(ioc, **ctx);
  beast::get_lowest_layer(stream).expires_after(timeout);
  if ((ec = await(ioc, [&](auto h) { beast::get_lowest_layer(stream).async_connect(addresses, h); })))
    return unreachable(said(ec));
  if (!tls::expect_peer_name(stream.native_handle(), host))
    return unreachable("tls: cannot check a certificate against the host '" + host + "'");
  if ((ec = await(ioc, [&](auto h) { stream.async_handshake(asio::ssl::stream_base::client, h); }))) {
    std::string why = ec == beast::error::timeout ? said(ec) : tls::handshake_failure(ec, stream.native_handle());
    if (why.find("wrong version number") != std::string::npos ||
        why.find("packet length too long") != std::string::npos)
      why += " (the node may serve plaintext: then --insecure)";
    return unreachable("tls: " + why);
  }
  out.sent = true;
  if ((ec = exchange(ioc, stream, request, out, location))) return unreachable(said(ec));
  // close_notify, bounded like the rest; a node that closes first is fine.
  await(ioc, [&](auto h) { stream.async_shutdown(h); });
  return out;
}

}  // namespace

std::string path_segment(const std::string& s) {
  boost::urls::url u;
  u.segments().push_back(s);
  return std::string(u.encoded_path());
}

std::vector<std::string> address_list(const std::string& addrs) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= addrs.size()) {
    auto comma = addrs.find(',', at);
    if (comma == std::string::npos) comma = addrs.size();
    auto a = addrs.substr(at, comma - at);
    a.erase(0, a.find_first_not_of(" \t"));
    a.erase(a.find_last_not_of(" \t") + 1);
    if (!a.empty()) out.push_back(a);
    at = comma + 1;
  }
  return out;
}

std::string redirect_refusal(const std::string& configured, const std::string& location,
                             const std::optional<tls::ClientFiles>& tls) {
  const std::string scheme = tls ? "https://" : "http://";
  if (location.rfind(scheme, 0) != 0)
    return "not following the redirect to '" + location + "': only " + scheme + " addresses are followed";
  const auto slash = location.find('/', scheme.size());
  const std::string to =
      location.substr(scheme.size(), slash == std::string::npos ? std::string::npos : slash - scheme.size());
  const auto given = address_list(configured);
  if (tls && tls->ca_file.empty() && std::find(given.begin(), given.end(), to) == given.end())
    return "not following the redirect to '" + location + "' with the token: verified by the system's roots (no " +
           "ca_file), the token goes only to the address given (" + configured +
           "); give the cluster's CA (--ca, ca_file) or the leader's address";
  return "";
}

ApiClient::ApiClient(std::string addr, std::string token, std::chrono::milliseconds timeout,
                     std::optional<tls::ClientFiles> tls)
    : addr_(std::move(addr)), token_(std::move(token)), timeout_(timeout), tls_(std::move(tls)) {}

ApiReply ApiClient::call(const std::string& method, const std::string& target, const std::string& body,
                         const std::string& idempotency_key) const {
  auto given = address_list(addr_);
  if (given.empty()) given.push_back(addr_);  // once() names what is wrong with it
  std::string addr, path = target;
  for (int hop = 0;; ++hop) {
    std::string location;
    ApiReply reply;
    if (hop == 0) {
      // The addresses given, in order, while the request never left.
      std::string unreachable;
      for (const auto& a : given) {
        location.clear();
        reply = once(a, token_, timeout_, tls_, method, path, body, idempotency_key, location);
        addr = a;
        if (reply.status != 0 || reply.sent) break;
        unreachable += (unreachable.empty() ? "" : "; ") + reply.error;
      }
      if (reply.status == 0 && !reply.sent && given.size() > 1) reply.error = unreachable;
    } else {
      reply = once(addr, token_, timeout_, tls_, method, path, body, idempotency_key, location);
    }
    if (reply.status != 307 && reply.status != 308) return reply;
    // A follower names the leader: https://HOST:PORT/path. Followed only
    // where the token may go (redirect_refusal).
    const std::string scheme = tls_ ? "https://" : "http://";
    if (hop == 3) {
      reply.error = "too many redirects (last to " + location + ")";
      return reply;
    }
    if (auto refused = redirect_refusal(addr_, location, tls_); !refused.empty()) {
      reply.error = refused;
      return reply;
    }
    auto slash = location.find('/', scheme.size());
    addr = location.substr(scheme.size(), slash == std::string::npos ? std::string::npos : slash - scheme.size());
    path = slash == std::string::npos ? "/" : location.substr(slash);
  }
}

}  // namespace baton::ctl
