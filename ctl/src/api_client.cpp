// The one translation unit of ctl that includes Beast.
#include "baton/ctl/api_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/url.hpp>

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

ApiReply once(const std::string& addr, const std::string& token, std::chrono::milliseconds timeout,
              const std::string& method, const std::string& target, const std::string& body,
              const std::string& idempotency_key, std::string& location) {
  ApiReply out;
  out.answered_by = addr;
  std::string host, port;
  if (!split_addr(addr, host, port)) {
    out.error = "address '" + addr + "' is not HOST:PORT";
    return out;
  }
  try {
    asio::io_context ioc;
    asio::ip::tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.expires_after(timeout);
    stream.connect(resolver.resolve(host, port));
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, host);
    req.set(http::field::user_agent, "baton-ctl");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    if (!idempotency_key.empty()) req.set("Idempotency-Key", idempotency_key);
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    http::read(stream, buffer, parser);
    auto res = parser.release();
    out.status = static_cast<int>(res.result_int());
    out.body = std::move(res.body());
    if (auto l = res.find(http::field::location); l != res.end()) location = std::string(l->value());
    beast::error_code ec;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  } catch (const std::exception& e) {
    out.status = 0;
    out.error = "cannot reach " + addr + ": " + e.what();
  }
  return out;
}

}  // namespace

std::string path_segment(const std::string& s) {
  boost::urls::url u;
  u.segments().push_back(s);
  return std::string(u.encoded_path());
}

ApiClient::ApiClient(std::string addr, std::string token, std::chrono::milliseconds timeout)
    : addr_(std::move(addr)), token_(std::move(token)), timeout_(timeout) {}

ApiReply ApiClient::call(const std::string& method, const std::string& target, const std::string& body,
                         const std::string& idempotency_key) const {
  std::string addr = addr_, path = target;
  for (int hop = 0;; ++hop) {
    std::string location;
    auto reply = once(addr, token_, timeout_, method, path, body, idempotency_key, location);
    if (reply.status != 307 && reply.status != 308) return reply;
    // A follower names the leader: http://HOST:PORT/path.
    const std::string scheme = "http://";
    if (hop == 3 || location.rfind(scheme, 0) != 0) {
      if (hop == 3) reply.error = "too many redirects (last to " + location + ")";
      return reply;
    }
    auto slash = location.find('/', scheme.size());
    addr = location.substr(scheme.size(), slash == std::string::npos ? std::string::npos : slash - scheme.size());
    path = slash == std::string::npos ? "/" : location.substr(slash);
  }
}

}  // namespace baton::ctl
