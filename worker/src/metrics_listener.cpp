#include "metrics_listener.h"

#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <memory>

namespace baton::worker {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t request_bytes_max = 8192;
constexpr auto request_time_max = std::chrono::seconds(5);

/// One scrape: read the request head, answer, close.
struct Scrape : std::enable_shared_from_this<Scrape> {
  Scrape(tcp::socket s, const std::function<std::string()>& render)
      : socket(std::move(s)), timer(socket.get_executor()), buffer(request_bytes_max), render(render) {}
  void run() {
    auto self = shared_from_this();
    timer.expires_after(request_time_max);
    timer.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) self->socket.close();
    });
    asio::async_read_until(socket, buffer, "\r\n\r\n", [self](const boost::system::error_code& ec, std::size_t) {
      if (ec) return self->finish();
      std::string head(asio::buffers_begin(self->buffer.data()), asio::buffers_end(self->buffer.data()));
      const bool metrics = head.rfind("GET /metrics ", 0) == 0 || head.rfind("GET /metrics?", 0) == 0;
      const std::string body = metrics ? self->render() : "not found: this address serves GET /metrics only\n";
      self->answer = std::string(metrics ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.1 404 Not Found\r\n") +
                     (metrics ? "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                              : "Content-Type: text/plain; charset=utf-8\r\n") +
                     "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
      asio::async_write(self->socket, asio::buffer(self->answer),
                        [self](const boost::system::error_code&, std::size_t) { self->finish(); });
    });
  }
  void finish() {
    timer.cancel();
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }
  tcp::socket socket;
  asio::steady_timer timer;
  asio::streambuf buffer;
  std::function<std::string()> render;
  std::string answer;
};

}  // namespace

MetricsListener::MetricsListener(asio::io_context& ioc, std::function<std::string()> render)
    : ioc_(ioc), render_(std::move(render)), acceptor_(ioc) {}

Result<void> MetricsListener::start(const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  auto bad = [&](const std::string& why) {
    return make_error(Errc::bad_config, "metrics_listen: '" + host_port + "': " + why);
  };
  if (colon == std::string::npos) return bad("must be HOST:PORT");
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host_port.substr(0, colon), ec);
  if (ec) return bad("not an IP address: " + ec.message());
  int port = 0;
  try {
    port = std::stoi(host_port.substr(colon + 1));
  } catch (const std::exception&) {
    return bad("the port is not a number");
  }
  if (port < 0 || port > 65535) return bad("the port must be 0-65535");
  const tcp::endpoint ep(address, static_cast<unsigned short>(port));
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return bad(ec.message());
  accept();
  return {};
}

void MetricsListener::stop() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

int MetricsListener::port() const {
  boost::system::error_code ec;
  const auto ep = acceptor_.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void MetricsListener::accept() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) std::make_shared<Scrape>(std::move(socket), render_)->run();
    accept();
  });
}

}  // namespace baton::worker
