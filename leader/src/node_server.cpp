// The only translation unit of the node that includes Boost.Beast.
#include "baton/leader/node_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "baton/base/json_text.h"
#include "http_session.h"
#include "session_context.h"

namespace baton::leader {

using namespace serving;

namespace {

/// A new connection to a TLS port: a TLS client is handed to an HttpSession
/// after its handshake; anything else gets a plaintext 400 saying to use
/// https/wss. The first byte tells (0x16 opens every TLS handshake), read
/// with MSG_PEEK so the handshake still sees it: Beast's flex server does
/// this with a buffered handshake, whose async form does not compile under
/// C++20 concepts in Boost 1.81.
class TlsDetector : public std::enable_shared_from_this<TlsDetector> {
 public:
  TlsDetector(tcp::socket&& socket, std::shared_ptr<tls::Context> ctx, const SessionContext& context, Slot slot,
              std::chrono::steady_clock::time_point request_deadline)
      : socket_(std::move(socket)),
        deadline_(socket_.get_executor()),
        ctx_(std::move(ctx)),
        context_(context),
        slot_(std::move(slot)),
        request_deadline_(request_deadline) {}

  void run() {
    // Nothing said within the request deadline: the connection was only
    // holding a slot.
    deadline_.expires_at(request_deadline_);
    deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;
      beast::error_code ignored;
      self->socket_.close(ignored);
    });
    socket_.async_wait(tcp::socket::wait_read,
                       beast::bind_front_handler(&TlsDetector::on_readable, shared_from_this()));
  }

 private:
  void on_readable(beast::error_code ec) {
    if (ec) return;
    // Never a blocking read on the I/O thread: a readiness that has no byte
    // behind it (it happens) means wait again, within the same deadline.
    unsigned char first = 0;
    socket_.non_blocking(true, ec);
    const std::size_t n = socket_.receive(asio::buffer(&first, 1), tcp::socket::message_peek, ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      socket_.async_wait(tcp::socket::wait_read,
                         beast::bind_front_handler(&TlsDetector::on_readable, shared_from_this()));
      return;
    }
    deadline_.cancel();
    if (ec || n == 0) return;
    if (first != 0x16) return refuse_plaintext();
    // A reload may replace the context while this connection lives: the
    // SSL object holds a reference to the OpenSSL context it was made from.
    auto stream = std::make_shared<TlsStream>(beast::tcp_stream(std::move(socket_)), *ctx_);
    // The handshake counts against the first request's deadline.
    beast::get_lowest_layer(*stream).expires_at(request_deadline_);
    stream->async_handshake(asio::ssl::stream_base::server, [self = shared_from_this(), stream](beast::error_code hec) {
      if (hec) {
        spdlog::debug("tls_handshake_failed error={}", json_quote(hec.message()));
        return;
      }
      std::make_shared<HttpSession<TlsStream>>(std::move(*stream), beast::flat_buffer(), self->context_,
                                               std::move(self->slot_), self->request_deadline_)
          ->run();
    });
  }
  void refuse_plaintext() {
    const std::string body =
        "{\"code\":\"tls_required\",\"message\":\"this port speaks TLS: use https:// (wss:// for workers)\"}";
    auto reply = std::make_shared<std::string>(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body);
    // Written, then what the client sent is read and dropped until it
    // closes (closing with unread bytes would reset the connection and could
    // lose the answer), for two seconds at most.
    deadline_.expires_after(std::chrono::seconds(2));
    deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;
      beast::error_code ignored;
      self->socket_.close(ignored);
    });
    asio::async_write(socket_, asio::buffer(*reply),
                      [self = shared_from_this(), reply](beast::error_code, std::size_t) {
                        beast::error_code ignored;
                        self->socket_.shutdown(tcp::socket::shutdown_send, ignored);
                        self->drain();
                      });
  }
  void drain() {
    socket_.async_read_some(asio::buffer(sink_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (!ec) return self->drain();
      self->deadline_.cancel();
    });
  }

  tcp::socket socket_;
  asio::steady_timer deadline_;
  char sink_[1024];
  std::shared_ptr<tls::Context> ctx_;
  const SessionContext& context_;
  Slot slot_;
  const std::chrono::steady_clock::time_point request_deadline_;
};

}  // namespace

struct NodeServer::Impl {
  Impl(std::string listen_, ServerHandlers& h, ServerLimits l, std::optional<tls::ServerFiles> files)
      : listen(std::move(listen_)),
        handlers(h),
        limits(l),
        tls_files(std::move(files)),
        budget(std::make_shared<ConnectionBudget>(limits)),
        gate(limits, handlers),
        readyz_gate(readyz_per_second, readyz_burst, handlers, "readyz_throttled"),
        acceptor(ioc),
        reload_timer(ioc),
        context{handlers,
                admin,
                hellos,
                admin_queued,
                gate,
                readyz_gate,
                admissions,
                registry(),
                [this](std::uint64_t link, std::int64_t credential) {
                  std::lock_guard lock(mutex);
                  if (credential != 0) credentials[link] = credential;
                },
                limits,
                tls_files ? tls_files->worker_certificates : tls::WorkerCertificates::off} {}

  void do_accept() {
    acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec) {
        if (ec == asio::error::operation_aborted) return;
        spdlog::warn("accept_error error={}", ec.message());
      } else {
        // Small frames (assign, start, start_granted) must not wait for
        // Nagle's algorithm and delayed ACKs (~40 ms each way).
        beast::error_code nodelay_ec;
        socket.set_option(tcp::no_delay(true), nodelay_ec);
        beast::error_code addr_ec;
        const auto peer = socket.remote_endpoint(addr_ec);
        std::string why;
        if (auto slot = budget->take(addr_ec ? "?" : peer.address().to_string(), why)) {
          // The first request's deadline counts from here.
          const auto deadline = timer_time(RealClock().mono() + limits.request_deadline);
          if (tls_source)
            std::make_shared<TlsDetector>(std::move(socket), tls_source->current(), context, std::move(slot), deadline)
                ->run();
          else
            std::make_shared<HttpSession<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)), beast::flat_buffer(),
                                                             context, std::move(slot), deadline)
                ->run();
        } else {
          handlers.on_connection_refused();
          const MonoTime now = RealClock().mono();
          if (now - last_refusal_log > std::chrono::seconds(1)) {  // one line a second, not one per connection
            last_refusal_log = now;
            spdlog::warn("connection_refused peer={} reason=\"{}\"", addr_ec ? "?" : peer.address().to_string(), why);
          }
          beast::error_code ignored;
          socket.close(ignored);
        }
      }
      do_accept();
    });
  }
  /// Renewed certificate files are served to new connections within a
  /// second; files that do not load leave the previous ones in use.
  void watch_tls_files() {
    reload_timer.expires_after(std::chrono::seconds(1));
    reload_timer.async_wait([this](beast::error_code ec) {
      if (ec) return;
      // Reading files and building a context is not for the I/O thread.
      asio::post(admin, [this] {
        auto outcome = tls_source->reload_if_changed();
        if (outcome.kind == tls::ServerContextSource::ReloadOutcome::reloaded)
          spdlog::info("tls_reloaded cert_file={} listen={}", json_quote(tls_files->cert_file), listen);
        else if (outcome.kind == tls::ServerContextSource::ReloadOutcome::failed)
          spdlog::error("tls_reload_failed error={} (the previous certificate stays in use)",
                        json_quote(outcome.error));
        asio::post(ioc, [this] { watch_tls_files(); });
      });
    });
  }
  Registry registry() {
    return [this](std::shared_ptr<WorkerLink> s, bool add) {
      std::lock_guard lock(mutex);
      if (add) {
        sessions.insert(s);
      } else {
        sessions.erase(s);
        credentials.erase(s->id());
      }
    };
  }

  std::string listen;
  ServerHandlers& handlers;
  const ServerLimits limits;
  const std::optional<tls::ServerFiles> tls_files;
  std::unique_ptr<tls::ServerContextSource> tls_source;
  std::shared_ptr<ConnectionBudget> budget;
  MonoTime last_refusal_log{};
  asio::io_context ioc{1};
  asio::thread_pool admin{admin_threads};
  asio::thread_pool hellos{1};  ///< one: the hellos' lookups share one connection (node.cpp)
  std::atomic<int> admin_queued{0};
  AuthGate gate;
  // GET /readyz per source (security review N2): a health checker asks
  // every second or so; a source asking faster than this gets 429s.
  static constexpr double readyz_per_second = 50, readyz_burst = 200;
  AuthGate readyz_gate;
  std::atomic<int> admissions{0};
  tcp::acceptor acceptor;
  asio::steady_timer reload_timer;
  std::thread thread;
  std::mutex mutex;
  std::set<std::shared_ptr<WorkerLink>> sessions;
  std::map<std::uint64_t, std::int64_t> credentials;  ///< link id -> the worker credential it attached with
  const SessionContext context;
};

NodeServer::NodeServer(std::string listen, ServerHandlers& handlers, ServerLimits limits,
                       std::optional<tls::ServerFiles> tls)
    : impl_(std::make_unique<Impl>(std::move(listen), handlers, limits, std::move(tls))) {}

NodeServer::~NodeServer() { stop(); }

Result<void> NodeServer::start() {
  if (impl_->tls_files) {
    auto source = tls::ServerContextSource::open(*impl_->tls_files);
    if (!source) return source.error();
    impl_->tls_source = std::move(*source);
  }
  auto colon = impl_->listen.rfind(':');
  std::string host = impl_->listen.substr(0, colon);
  std::string port = impl_->listen.substr(colon + 1);
  beast::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec) return make_error(Errc::bad_config, "listen: '" + host + "' is not an IP address");
  unsigned long port_n = 0;
  try {
    port_n = std::stoul(port);
  } catch (...) {
    return make_error(Errc::bad_config, "listen: '" + port + "' is not a port");
  }
  if (port_n > 65535) return make_error(Errc::bad_config, "listen: '" + port + "' is not a port");
  tcp::endpoint ep(addr, static_cast<unsigned short>(port_n));
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return make_error(Errc::bad_config, "listen " + impl_->listen + ": " + ec.message());
  impl_->do_accept();
  if (impl_->tls_source) impl_->watch_tls_files();
  impl_->thread = std::thread([this] { impl_->ioc.run(); });
  return {};
}

void NodeServer::close_all_workers(const std::string& reason) {
  std::vector<std::shared_ptr<WorkerLink>> all;
  {
    std::lock_guard lock(impl_->mutex);
    all.assign(impl_->sessions.begin(), impl_->sessions.end());
  }
  for (auto& s : all) s->close(reason);
}

int NodeServer::close_workers_with_credentials(const std::vector<std::int64_t>& credential_ids,
                                               const std::string& reason) {
  std::vector<std::shared_ptr<WorkerLink>> hit;
  {
    std::lock_guard lock(impl_->mutex);
    for (const auto& s : impl_->sessions) {
      auto it = impl_->credentials.find(s->id());
      if (it != impl_->credentials.end() &&
          std::find(credential_ids.begin(), credential_ids.end(), it->second) != credential_ids.end())
        hit.push_back(s);
    }
  }
  for (auto& s : hit) s->close(reason);
  return static_cast<int>(hit.size());
}

void NodeServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  close_all_workers("node stopping");
  asio::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
    impl_->reload_timer.cancel();
  });
  // Give sessions a moment to send their close frames, then stop.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  impl_->ioc.stop();
  impl_->thread.join();
  impl_->admin.join();
  impl_->hellos.join();
  std::lock_guard lock(impl_->mutex);
  impl_->sessions.clear();
}

}  // namespace baton::leader
