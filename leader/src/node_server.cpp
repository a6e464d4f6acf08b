// The only translation unit of the node that includes Boost.Beast.
#include "baton/leader/node_server.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "baton/core/json_text.h"
#include "baton/protocol/codec.h"

namespace baton::leader {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

bool constant_time_equal(const std::string& a, const std::string& b) {
  // Length is not secret; the comparison of equal-length strings takes the
  // same time wherever they differ.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

namespace {

std::atomic<std::uint64_t> next_link_id{1};

/// Open connections, in total and per client address, under the caps of
/// ServerLimits. A session holds its Slot; the slot is given back when the
/// last owner (the HTTP session, then the WebSocket it became) is gone.
class ConnectionBudget : public std::enable_shared_from_this<ConnectionBudget> {
 public:
  struct Slot {
    Slot(std::shared_ptr<ConnectionBudget> b, std::string a) : budget(std::move(b)), address(std::move(a)) {}
    Slot(const Slot&) = delete;  // exactly one give_back per take
    Slot& operator=(const Slot&) = delete;
    ~Slot() { budget->give_back(address); }
    std::shared_ptr<ConnectionBudget> budget;
    std::string address;
  };
  explicit ConnectionBudget(const ServerLimits& l) : limits_(l) {}

  /// A slot, or null and why not.
  std::shared_ptr<Slot> take(const std::string& address, std::string& why) {
    std::lock_guard lock(mutex_);
    if (total_ >= limits_.max_connections) {
      why = "max_connections " + std::to_string(limits_.max_connections);
      return nullptr;
    }
    int& mine = per_address_[address];
    if (mine >= limits_.max_connections_per_address) {
      why = "max_connections_per_address " + std::to_string(limits_.max_connections_per_address);
      return nullptr;
    }
    ++mine;
    ++total_;
    return std::make_shared<Slot>(shared_from_this(), address);
  }

 private:
  void give_back(const std::string& address) {
    std::lock_guard lock(mutex_);
    --total_;
    if (auto it = per_address_.find(address); it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
  }
  const ServerLimits limits_;
  std::mutex mutex_;
  int total_ = 0;
  std::map<std::string, int> per_address_;
};
using Slot = std::shared_ptr<ConnectionBudget::Slot>;

class WorkerSession : public WorkerLink, public std::enable_shared_from_this<WorkerSession> {
 public:
  WorkerSession(tcp::socket&& socket, const std::string& token, ServerHandlers& handlers,
                std::function<void(std::shared_ptr<WorkerSession>, bool)> registry, const ServerLimits& limits,
                Slot slot)
      : ws_(std::move(socket)),
        token_(token),
        handlers_(handlers),
        registry_(std::move(registry)),
        id_(next_link_id++),
        limits_(limits),
        slot_(std::move(slot)),
        hello_timer_(ws_.get_executor()) {}

  template <class Body, class Allocator>
  void accept(http::request<Body, http::basic_fields<Allocator>> req) {
    // Before the hello is accepted a frame may be only so large (an
    // unauthenticated client cannot make the node buffer megabytes); after
    // it, frames up to twice the protocol limit reach the codec, which
    // answers too_large with an error frame; beyond that Beast closes with
    // 1009.
    ws_.read_message_max(limits_.pre_auth_frame_bytes_max);
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.async_accept(req, beast::bind_front_handler(&WorkerSession::on_accept, shared_from_this()));
  }

  void send(const protocol::Message& m) override {
    std::string frame = protocol::encode(m);
    asio::post(ws_.get_executor(),
               [self = shared_from_this(), frame = std::move(frame)]() mutable { self->queue(std::move(frame)); });
  }
  void close(const std::string& reason) override {
    asio::post(ws_.get_executor(), [self = shared_from_this(), reason] { self->close_now(reason); });
  }
  std::uint64_t id() const override { return id_; }

 private:
  void on_accept(beast::error_code ec) {
    if (ec) return;
    registry_(shared_from_this(), true);
    // No hello in time: the connection was only holding a slot.
    hello_timer_.expires_after(limits_.hello_deadline);
    hello_timer_.async_wait([self = shared_from_this()](beast::error_code e) {
      if (!e && self->worker_id_.empty() && !self->closing_)
        self->reject("protocol", "no hello within " + std::to_string(self->limits_.hello_deadline.count()) + " ms");
    });
    read();
  }
  void read() { ws_.async_read(buffer_, beast::bind_front_handler(&WorkerSession::on_read, shared_from_this())); }
  void on_read(beast::error_code ec, std::size_t) {
    if (ec) return finish();
    std::string frame = beast::buffers_to_string(buffer_.data());
    buffer_.consume(buffer_.size());
    if (closing_) return read();
    if (!ws_.got_text()) return reject("bad_frame", "frames must be JSON text");
    auto decoded = protocol::decode(frame);
    if (auto* err = std::get_if<protocol::DecodeError>(&decoded)) return reject(err->code, err->message);
    auto& msg = std::get<protocol::Message>(decoded);
    if (worker_id_.empty()) {
      auto* hello = std::get_if<protocol::Hello>(&msg);
      if (!hello) return reject("protocol", "the first message must be hello");
      if (!constant_time_equal(hello->token, token_)) return reject("unauthenticated", "bad worker token");
      worker_id_ = hello->worker_id;
      hello->token.clear();
      hello_timer_.cancel();
      ws_.read_message_max(protocol::frame_bytes_max * 2);
      handlers_.on_worker_hello(shared_from_this(), *hello);
    } else if (std::holds_alternative<protocol::Hello>(msg)) {
      return reject("protocol", "hello was already received");
    } else {
      handlers_.on_worker_message(id_, worker_id_, std::move(msg));
    }
    read();
  }
  void reject(const std::string& code, const std::string& message) {
    handlers_.on_protocol_error();
    // Both may carry what a worker sent: quoted, so no line can be forged.
    spdlog::info("worker_frame_rejected link={} worker={} code={} message={}", id_, json_quote(worker_id_), code,
                 json_quote(message));
    queue(protocol::encode(protocol::Error{code, message}));
    close_now(code);
    read();  // drain until the close completes
  }
  void queue(std::string frame) {
    if (closing_) return;
    if (queue_.size() >= session_send_queue_max) return close_now("send queue full");
    queue_.push_back(std::move(frame));
    if (queue_.size() == 1 && !writing_) write_next();
  }
  void write_next() {
    if (queue_.empty()) {
      if (closing_ && !closed_) do_close();
      return;
    }
    writing_ = true;
    ws_.text(true);
    ws_.async_write(asio::buffer(queue_.front()),
                    beast::bind_front_handler(&WorkerSession::on_write, shared_from_this()));
  }
  void on_write(beast::error_code ec, std::size_t) {
    writing_ = false;
    if (ec) return finish();
    queue_.pop_front();
    write_next();
  }
  void close_now(const std::string& reason) {
    if (closing_) return;
    closing_ = true;
    close_reason_ = reason;
    if (!writing_) {
      // Keep queued frames (an error or redirect) that are not yet written.
      if (queue_.empty())
        do_close();
      else
        write_next();
    }
  }
  void do_close() {
    closed_ = true;
    websocket::close_reason cr(websocket::close_code::normal);
    cr.reason = close_reason_.substr(0, 120);
    ws_.async_close(cr, [self = shared_from_this()](beast::error_code) { self->finish(); });
  }
  void finish() {
    if (finished_) return;
    finished_ = true;
    hello_timer_.cancel();
    if (!worker_id_.empty()) handlers_.on_worker_closed(id_, worker_id_);
    registry_(shared_from_this(), false);
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }

  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
  const std::string& token_;
  ServerHandlers& handlers_;
  std::function<void(std::shared_ptr<WorkerSession>, bool)> registry_;
  const std::uint64_t id_;
  const ServerLimits& limits_;
  Slot slot_;  ///< this connection's place under the caps
  asio::steady_timer hello_timer_;
  std::string worker_id_;
  std::deque<std::string> queue_;
  bool writing_ = false, closing_ = false, closed_ = false, finished_ = false;
  std::string close_reason_;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket&& socket, const std::string& token, ServerHandlers& handlers, asio::thread_pool& admin,
              std::function<void(std::shared_ptr<WorkerSession>, bool)> registry, const ServerLimits& limits, Slot slot)
      : stream_(std::move(socket)),
        token_(token),
        handlers_(handlers),
        admin_(admin),
        registry_(std::move(registry)),
        limits_(limits),
        slot_(std::move(slot)) {}

  void run() { read(); }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(http_body_bytes_max);
    parser_->header_limit(16 * 1024);
    // The whole request, headers and body, within the deadline: a client
    // that trickles bytes (slow loris) loses its connection all the same.
    stream_.expires_after(limits_.request_deadline);
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&HttpSession::on_read, shared_from_this()));
  }
  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream) return shutdown();
    if (ec) {
      if (ec == http::error::body_limit) {
        HttpResponse r{413,
                       "application/json",
                       "{\"code\":\"payload_too_large\",\"message\":\"the request body is larger than " +
                           std::to_string(http_body_bytes_max) + " bytes\"}",
                       {}};
        return write(r, false);
      }
      if (ec.category() == beast::http::make_error_code(http::error::bad_target).category()) {
        HttpResponse r{400,
                       "application/json",
                       "{\"code\":\"bad_request\",\"message\":\"" + std::string(ec.message()) + "\"}",
                       {}};
        return write(r, false);
      }
      return;
    }
    auto req = parser_->release();
    if (websocket::is_upgrade(req)) {
      if (req.target() != "/ws") {
        HttpResponse r{404, "application/json", "{\"code\":\"not_found\",\"message\":\"websocket path is /ws\"}", {}};
        return write(r, false);
      }
      stream_.expires_never();
      auto ws = std::make_shared<WorkerSession>(stream_.release_socket(), token_, handlers_, registry_, limits_,
                                                std::move(slot_));
      ws->accept(std::move(req));
      return;
    }
    HttpRequest request;
    request.method = std::string(req.method_string());
    request.target = std::string(req.target());
    for (const auto& f : req) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request.headers[name] = std::string(f.value());
    }
    request.body = std::move(req.body());
    const bool keep_alive = req.keep_alive();
    // Admin handlers may query the database: never on the I/O thread.
    asio::post(admin_, [self = shared_from_this(), request = std::move(request), keep_alive] {
      HttpResponse response;
      try {
        response = self->handlers_.handle_http(request);
      } catch (const std::exception& e) {
        response = HttpResponse{500,
                                "application/json",
                                std::string("{\"code\":\"internal\",\"message\":\"") + "internal error" + "\"}",
                                {}};
        spdlog::error("http_handler_exception target={} error={}", request.target, e.what());
      }
      asio::post(self->stream_.get_executor(),
                 [self, response = std::move(response), keep_alive] { self->write(response, keep_alive); });
    });
  }
  void write(const HttpResponse& r, bool keep_alive) {
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), 11);
    res->set(http::field::server, "baton");
    res->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    res->keep_alive(keep_alive);
    res->body() = r.body;
    res->prepare_payload();
    http::async_write(stream_, *res, [self = shared_from_this(), res, keep_alive](beast::error_code ec, std::size_t) {
      if (ec) return;
      if (!keep_alive) return self->shutdown();
      self->read();
    });
  }
  void shutdown() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const std::string& token_;
  ServerHandlers& handlers_;
  asio::thread_pool& admin_;
  std::function<void(std::shared_ptr<WorkerSession>, bool)> registry_;
  const ServerLimits& limits_;
  Slot slot_;
};

}  // namespace

struct NodeServer::Impl {
  Impl(std::string listen_, std::string token_, ServerHandlers& h, ServerLimits l)
      : listen(std::move(listen_)),
        token(std::move(token_)),
        handlers(h),
        limits(l),
        budget(std::make_shared<ConnectionBudget>(limits)),
        acceptor(ioc) {}

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
          std::make_shared<HttpSession>(std::move(socket), token, handlers, admin, registry(), limits, std::move(slot))
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
  std::function<void(std::shared_ptr<WorkerSession>, bool)> registry() {
    return [this](std::shared_ptr<WorkerSession> s, bool add) {
      std::lock_guard lock(mutex);
      if (add)
        sessions.insert(s);
      else
        sessions.erase(s);
    };
  }

  std::string listen;
  std::string token;
  ServerHandlers& handlers;
  const ServerLimits limits;
  std::shared_ptr<ConnectionBudget> budget;
  MonoTime last_refusal_log{};
  asio::io_context ioc{1};
  asio::thread_pool admin{2};
  tcp::acceptor acceptor;
  std::thread thread;
  std::mutex mutex;
  std::set<std::shared_ptr<WorkerSession>> sessions;
};

NodeServer::NodeServer(std::string listen, std::string worker_token, ServerHandlers& handlers, ServerLimits limits)
    : impl_(std::make_unique<Impl>(std::move(listen), std::move(worker_token), handlers, limits)) {}

NodeServer::~NodeServer() { stop(); }

Result<void> NodeServer::start() {
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
  impl_->thread = std::thread([this] { impl_->ioc.run(); });
  return {};
}

void NodeServer::close_all_workers(const std::string& reason) {
  std::vector<std::shared_ptr<WorkerSession>> all;
  {
    std::lock_guard lock(impl_->mutex);
    all.assign(impl_->sessions.begin(), impl_->sessions.end());
  }
  for (auto& s : all) s->close(reason);
}

void NodeServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  close_all_workers("node stopping");
  asio::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
  // Give sessions a moment to send their close frames, then stop.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  impl_->ioc.stop();
  impl_->thread.join();
  impl_->admin.join();
  std::lock_guard lock(impl_->mutex);
  impl_->sessions.clear();
}

}  // namespace baton::leader
