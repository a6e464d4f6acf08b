// The only translation unit of the node that includes Boost.Beast.
#include "baton/leader/node_server.h"

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "baton/core/json_text.h"
#include "baton/leader_core/failed_auth_limiter.h"
#include "baton/protocol/codec.h"
#include "baton/tls/tls_context.h"

namespace baton::leader {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

bool constant_time_equal(const std::string& a, const std::string& b) {
  // Length is not secret; the comparison of equal-length strings takes the
  // same time wherever they differ (OpenSSL's CRYPTO_memcmp: written so
  // that no compiler turns it into an early exit).
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
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

/// How long a worker refused for its credential or version is asked to wait
/// before it connects again (protocol version 2).
constexpr std::int64_t refusal_retry_after_ms = 30000;
/// Hellos judged at once, server-wide (each may be a database lookup on the
/// admin pool): a reconnecting fleet of thousands queues far fewer, and a
/// flood of made-up hellos cannot crowd out the API.
constexpr int admissions_max = 64;

/// Failed authentications per source, server-wide (leader_core::
/// FailedAuthLimiter behind a lock): asked before a credential is looked
/// at, told of every credential refused. Refusals are counted and logged at
/// most once a second, with how many came since the last line.
class AuthGate {
 public:
  AuthGate(const ServerLimits& l, ServerHandlers& h)
      : limiter_({.per_second = l.auth_failure_rate, .burst = l.auth_failure_burst, .sources = 10000}), handlers_(h) {}

  /// How long the client at `address` must wait, or nullopt: go on.
  std::optional<Millis> refused(const std::string& address) {
    const std::string source = leader_core::auth_source_of(address);
    const MonoTime now = clock_.mono();
    std::optional<Millis> wait;
    {
      std::lock_guard lock(mutex_);
      wait = limiter_.refused(source, now);
      if (!wait) return wait;
      ++unlogged_;
      if (!logged_ || now - *logged_ >= std::chrono::seconds(1)) {
        spdlog::warn("auth_throttled source={} retry_after_ms={} count={} (since the last such line)",
                     json_quote(source), wait->count(), unlogged_);
        logged_ = now;
        unlogged_ = 0;
      }
    }
    handlers_.on_auth_throttled();
    return wait;
  }
  void failed(const std::string& address) {
    const std::string source = leader_core::auth_source_of(address);
    std::lock_guard lock(mutex_);
    limiter_.failed(source, clock_.mono());
  }

 private:
  RealClock clock_;
  std::mutex mutex_;
  leader_core::FailedAuthLimiter limiter_;
  ServerHandlers& handlers_;
  std::optional<MonoTime> logged_;
  std::int64_t unlogged_ = 0;
};

/// A time of the node's monotonic clock (RealClock: the steady clock) as
/// the timers' time point.
std::chrono::steady_clock::time_point timer_time(MonoTime t) {
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(t.since_start));
}

/// Whether a request's path is one that authenticates its caller (the API
/// and the metrics): those a throttled source is refused.
bool takes_credential(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  return path.rfind("/api/", 0) == 0 || path == "/metrics";
}

/// The server's set of open worker sessions (to close them all).
using Registry = std::function<void(std::shared_ptr<WorkerLink>, bool)>;

/// What a session needs of its server (the server outlives every session's
/// use of it: stop() joins the I/O thread first).
struct SessionContext {
  ServerHandlers& handlers;
  asio::thread_pool& admin;        ///< the API's requests
  asio::thread_pool& hellos;       ///< worker hellos: the API cannot occupy it
  std::atomic<int>& admin_queued;  ///< requests waiting for or in `admin`, server-wide
  AuthGate& gate;
  std::atomic<int>& admissions;  ///< hellos waiting for or in admit_worker, server-wide
  Registry registry;
  /// Records the credential a link was admitted with (for revocation).
  std::function<void(std::uint64_t link, std::int64_t credential)> bind_credential;
  const ServerLimits& limits;
  tls::WorkerCertificates worker_certificates;
};

/// Why a hello is refused for its TLS client certificate, or "" (mutual
/// TLS, docs/security.md): the certificate binds the worker id.
std::string certificate_refusal(SSL* ssl, tls::WorkerCertificates policy, const std::string& worker_id) {
  if (policy == tls::WorkerCertificates::off) return {};
  const bool has = tls::has_peer_certificate(ssl);
  if (!has && policy == tls::WorkerCertificates::optional) return {};
  // A certificate presented is judged in either mode: one that names another
  // worker, or (were a handshake ever to let it through) did not verify, is
  // refused.
  if (!has) return "a client certificate naming worker '" + worker_id + "' is required";
  if (!tls::peer_certificate_for_clients(ssl))
    return "the client certificate is not for client authentication (its extendedKeyUsage must list clientAuth)";
  if (!tls::peer_certificate_names(ssl, worker_id))
    return "the client certificate does not name worker '" + worker_id + "'";
  return {};
}

template <class Stream>
class WorkerSession : public WorkerLink, public std::enable_shared_from_this<WorkerSession<Stream>> {
  using std::enable_shared_from_this<WorkerSession<Stream>>::shared_from_this;

 public:
  WorkerSession(Stream&& stream, const SessionContext& context, Slot slot)
      : ws_(std::move(stream)),
        handlers_(context.handlers),
        hellos_(context.hellos),
        gate_(context.gate),
        admissions_(context.admissions),
        registry_(context.registry),
        bind_credential_(context.bind_credential),
        worker_certificates_(context.worker_certificates),
        id_(next_link_id++),
        limits_(context.limits),
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
    // In the version negotiated at hello; the welcome names it.
    const int version = version_.load();
    std::string frame;
    if (const auto* w = std::get_if<protocol::Welcome>(&m)) {
      protocol::Welcome named = *w;
      named.protocol = version;
      frame = protocol::encode(named, version);
    } else {
      frame = protocol::encode(m, version);
    }
    // Called on the control loop's thread, often many times in one pass:
    // one hand-over to the connection's thread per burst, not per message.
    bool first = false;
    {
      std::lock_guard lock(handed_mutex_);
      first = handed_.empty();
      handed_.push_back(std::move(frame));
    }
    if (first) asio::post(ws_.get_executor(), [self = shared_from_this()] { self->take_handed(); });
  }
  void take_handed() {
    std::vector<std::string> frames;
    {
      std::lock_guard lock(handed_mutex_);
      frames.swap(handed_);
    }
    for (auto& f : frames) queue(std::move(f));
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
      // Also while the hello's credential is being checked: a database that
      // does not answer does not keep the connection waiting.
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
    auto decoded = protocol::decode_frame(frame);
    if (auto* err = std::get_if<protocol::DecodeError>(&decoded)) return reject(err->code, err->message);
    auto& messages = std::get<std::vector<protocol::Message>>(decoded);
    if (worker_id_.empty()) {
      auto* hello = messages.size() == 1 ? std::get_if<protocol::Hello>(&messages[0]) : nullptr;
      if (!hello) return reject("protocol", "the first message must be hello");
      claimed_id_ = hello->worker_id;
      // The highest version both ends speak (docs/protocol.md, "Versions").
      auto version = protocol::negotiate_version(protocol::protocol_version_min, protocol::protocol_version_max,
                                                 hello->protocol_min, hello->protocol_max);
      if (!version)
        return reject("bad_version",
                      "this node speaks protocol versions " + std::to_string(protocol::protocol_version_min) + " to " +
                          std::to_string(protocol::protocol_version_max) + ", the worker " +
                          std::to_string(hello->protocol_min) + " to " + std::to_string(hello->protocol_max) +
                          ": upgrade the older side (docs/protocol.md, \"Versions\")");
      version_ = *version;
      if constexpr (std::is_same_v<Stream, TlsStream>) {
        auto why = certificate_refusal(ws_.next_layer().native_handle(), worker_certificates_, hello->worker_id);
        if (!why.empty()) return reject("unauthenticated", why);
      }
      // The credential may take a database round trip: checked on the
      // hellos' own pool, and nothing more is read from this connection
      // until it is. Unauthenticated clients can send hellos as fast as
      // they like: at most admissions_max wait for the pool at once, the
      // others are refused and asked to come back.
      // A source that failed to authenticate too often is refused before
      // its credential is looked at (docs/security.md).
      if (auto wait = gate_.refused(slot_->address))
        return reject(
            "unavailable",
            "too many failed authentications from this address; retry in " + std::to_string(wait->count()) + " ms",
            wait->count());
      if (admissions_.fetch_add(1) >= admissions_max) {
        admissions_.fetch_sub(1);
        return reject("unavailable", "too many workers are being admitted at once; retry shortly");
      }
      // On the hellos' own thread: however busy the API is, a reconnecting
      // fleet is judged.
      asio::post(hellos_, [self = shared_from_this(), hello = std::move(*hello)]() mutable {
        WorkerAdmission admission = self->handlers_.admit_worker(hello);
        if (!admission.admitted && admission.code == "unauthenticated") self->gate_.failed(self->slot_->address);
        self->admissions_.fetch_sub(1);
        hello.token.clear();
        asio::post(self->ws_.get_executor(), [self, hello = std::move(hello), admission = std::move(admission)] {
          self->on_admission(hello, admission);
        });
      });
      return;
    }
    // A batch never holds a hello (decode_frame refuses it): only a frame
    // of its own can.
    if (std::holds_alternative<protocol::Hello>(messages[0])) return reject("protocol", "hello was already received");
    for (auto& msg : messages) handlers_.on_worker_message(id_, worker_id_, std::move(msg));
    read();
  }
  void on_admission(const protocol::Hello& hello, const WorkerAdmission& admission) {
    if (closing_) return;  // the hello deadline passed meanwhile
    if (!admission.admitted) return reject(admission.code, admission.message);
    worker_id_ = hello.worker_id;
    hello_timer_.cancel();
    bind_credential_(id_, admission.credential_id);
    ws_.read_message_max(protocol::frame_bytes_max * 2);
    handlers_.on_worker_hello(shared_from_this(), hello);
    read();
  }
  void reject(const std::string& code, const std::string& message, std::optional<std::int64_t> retry_after = {}) {
    handlers_.on_protocol_error();
    // Both may carry what a worker sent: quoted, so no line can be forged.
    spdlog::info("worker_frame_rejected link={} worker={} code={} message={}", id_,
                 json_quote(worker_id_.empty() ? claimed_id_ : worker_id_), code, json_quote(message));
    // A refusal that retrying cannot cure (credentials, versions) asks a
    // version-2 worker to wait instead of reconnecting within milliseconds.
    const bool lasting = code == "unauthenticated" || code == "forbidden" || code == "bad_version";
    const std::int64_t retry_after_ms = retry_after             ? *retry_after
                                        : lasting               ? refusal_retry_after_ms
                                        : code == "unavailable" ? 2000
                                                                : 0;
    queue(protocol::encode(protocol::Error{code, message, retry_after_ms}, version_.load()));
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
    // What queued meanwhile leaves in one frame (a batch from version 3).
    writing_frame_ = protocol::next_frame(queue_, version_.load());
    ws_.text(true);
    ws_.async_write(asio::buffer(writing_frame_),
                    beast::bind_front_handler(&WorkerSession::on_write, shared_from_this()));
  }
  void on_write(beast::error_code ec, std::size_t) {
    writing_ = false;
    if (ec) return finish();
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

  websocket::stream<Stream> ws_;
  beast::flat_buffer buffer_;
  ServerHandlers& handlers_;
  asio::thread_pool& hellos_;
  AuthGate& gate_;
  std::atomic<int>& admissions_;  ///< the server's hellos being judged now
  Registry registry_;
  std::function<void(std::uint64_t, std::int64_t)> bind_credential_;
  const tls::WorkerCertificates worker_certificates_;
  const std::uint64_t id_;
  const ServerLimits& limits_;
  Slot slot_;  ///< this connection's place under the caps
  asio::steady_timer hello_timer_;
  std::string worker_id_;
  std::string claimed_id_;  ///< the id a hello claimed, before it was admitted (for the refusal's log line)
  /// The protocol version of this connection: 1 until a hello chose one.
  /// Read by send() on other threads (the control loop's).
  std::atomic<int> version_{protocol::protocol_version_min};
  std::deque<std::string> queue_;
  std::string writing_frame_;  ///< the frame being written (taken off queue_)
  /// Frames send() encoded on other threads, not yet queued.
  std::mutex handed_mutex_;
  std::vector<std::string> handed_;
  bool writing_ = false, closing_ = false, closed_ = false, finished_ = false;
  std::string close_reason_;
};

template <class Stream>
class HttpSession : public std::enable_shared_from_this<HttpSession<Stream>> {
  using std::enable_shared_from_this<HttpSession<Stream>>::shared_from_this;
  using Deadline = std::chrono::steady_clock::time_point;

 public:
  /// `buffer`: bytes already read from the connection (the TLS detection's).
  /// `deadline`: the first request's, counted from the connection's accept.
  HttpSession(Stream&& stream, beast::flat_buffer buffer, const SessionContext& context, Slot slot, Deadline deadline)
      : stream_(std::move(stream)),
        buffer_(std::move(buffer)),
        context_(context),
        slot_(std::move(slot)),
        address_(slot_->address),
        first_deadline_(deadline) {}

  void run() { read(); }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(http_body_bytes_max);
    parser_->header_limit(16 * 1024);
    // One deadline bounds a request, headers, body and answer: from the
    // connection's accept for the first (its TLS handshake included), from
    // the previous answer for the next ones. A client that trickles bytes
    // (slow loris) loses its connection all the same.
    auto& lowest = beast::get_lowest_layer(stream_);
    if (first_deadline_) {
      lowest.expires_at(*first_deadline_);
      first_deadline_.reset();
    } else {
      lowest.expires_after(context_.limits.request_deadline);
    }
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&HttpSession::on_header, shared_from_this()));
  }
  void on_header(beast::error_code ec, std::size_t) {
    if (ec) return on_read_error(ec);
    const auto& req = parser_->get();
    const std::string_view target(req.target().data(), req.target().size());
    // A source that failed to authenticate too often is refused before its
    // credential is looked at, and before its body is read.
    if (!websocket::is_upgrade(req) && takes_credential(target))
      if (auto wait = context_.gate.refused(address_)) {
        HttpResponse r{429,
                       "application/json",
                       "{\"code\":\"auth_throttled\",\"message\":\"too many failed authentications from this "
                       "address; retry in " +
                           std::to_string(wait->count()) + " ms\"}",
                       {}};
        r.headers["Retry-After"] = std::to_string((wait->count() + 999) / 1000);
        return hold_then_refuse(std::move(r), std::min(*wait, context_.limits.auth_throttle_hold));
      }
    if (parser_->is_done()) return on_request();
    const bool large =
        parser_->chunked() || parser_->content_length().value_or(0) > context_.limits.pre_auth_body_bytes_max;
    if (!large) return read_body();
    // A large body is read only for a valid credential: without one, the
    // node neither buffers nor even receives it (docs/security.md).
    const std::string authorization(req[http::field::authorization]);
    if (authorization.empty()) {
      context_.gate.failed(address_);
      context_.handlers.on_credential_missing();
      return refuse(body_needs_credential());
    }
    if (!enter_admin_queue()) return refuse(shed());
    asio::post(context_.admin, [self = shared_from_this(), authorization] {
      bool valid = false;
      try {
        valid = self->context_.handlers.credential_valid(authorization);
      } catch (const std::exception& e) {
        spdlog::error("http_credential_check_exception error={}", json_quote(e.what()));
      }
      self->context_.admin_queued.fetch_sub(1);
      if (!valid) self->context_.gate.failed(self->address_);
      asio::post(self->stream_.get_executor(), [self, valid] {
        if (valid) return self->read_body();
        self->refuse(self->body_needs_credential());
      });
    });
  }
  void read_body() {
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&HttpSession::on_read, shared_from_this()));
  }
  void on_read(beast::error_code ec, std::size_t) {
    if (ec) return on_read_error(ec);
    on_request();
  }
  void on_read_error(beast::error_code ec) {
    if (ec == http::error::end_of_stream) return shutdown();
    if (ec == http::error::body_limit) {
      HttpResponse r{413,
                     "application/json",
                     "{\"code\":\"payload_too_large\",\"message\":\"the request body is larger than " +
                         std::to_string(http_body_bytes_max) + " bytes\"}",
                     {}};
      return refuse(r);
    }
    if (ec.category() == beast::http::make_error_code(http::error::bad_target).category()) {
      HttpResponse r{
          400, "application/json", "{\"code\":\"bad_request\",\"message\":\"" + std::string(ec.message()) + "\"}", {}};
      return write(r, false);
    }
  }
  HttpResponse body_needs_credential() const {
    return HttpResponse{401,
                        "application/json",
                        "{\"code\":\"unauthenticated\",\"message\":\"a request body over " +
                            std::to_string(context_.limits.pre_auth_body_bytes_max / 1024) +
                            " KiB is read only with a valid 'Authorization: Bearer <token>' header\"}",
                        {}};
  }
  static HttpResponse shed() {
    HttpResponse r{503,
                   "application/json",
                   "{\"code\":\"overloaded\",\"message\":\"this node has too many requests in hand; retry in a "
                   "second\"}",
                   {}};
    r.headers["Retry-After"] = "1";
    return r;
  }
  /// A place in the admin queue, or false (the request is shed).
  bool enter_admin_queue() {
    if (context_.admin_queued.fetch_add(1) < context_.limits.admin_queue_max) return true;
    context_.admin_queued.fetch_sub(1);
    context_.handlers.on_request_shed();
    return false;
  }
  void on_request() {
    auto req = parser_->release();
    if (websocket::is_upgrade(req)) {
      if (req.target() != "/ws") {
        HttpResponse r{404, "application/json", "{\"code\":\"not_found\",\"message\":\"websocket path is /ws\"}", {}};
        return write(r, false);
      }
      beast::get_lowest_layer(stream_).expires_never();
      auto ws = std::make_shared<WorkerSession<Stream>>(std::move(stream_), context_, std::move(slot_));
      ws->accept(std::move(req));
      return;
    }
    const bool keep_alive = req.keep_alive();
    // The admin threads are a bounded queue: a request beyond it is answered
    // now, from this thread, instead of waiting behind the others.
    if (!enter_admin_queue()) return write(shed(), keep_alive);
    HttpRequest request;
    request.method = std::string(req.method_string());
    request.target = std::string(req.target());
    for (const auto& f : req) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request.headers[name] = std::string(f.value());
    }
    request.body = std::move(req.body());
    // Admin handlers may query the database: never on the I/O thread.
    asio::post(context_.admin, [self = shared_from_this(), request = std::move(request), keep_alive] {
      HttpResponse response;
      try {
        response = self->context_.handlers.handle_http(request);
      } catch (const std::exception& e) {
        response = HttpResponse{500,
                                "application/json",
                                std::string("{\"code\":\"internal\",\"message\":\"") + "internal error" + "\"}",
                                {}};
        spdlog::error("http_handler_exception target={} error={}", json_quote(request.target), e.what());
      }
      self->context_.admin_queued.fetch_sub(1);
      if (response.status == 401) self->context_.gate.failed(self->address_);
      asio::post(self->stream_.get_executor(),
                 [self, response = std::move(response), keep_alive] { self->write(response, keep_alive); });
    });
  }
  void write(const HttpResponse& r, bool keep_alive, bool drain_after = false) {
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(r.status), 11);
    res->set(http::field::server, "baton");
    res->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    res->keep_alive(keep_alive);
    res->body() = r.body;
    res->prepare_payload();
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, keep_alive, drain_after](beast::error_code ec, std::size_t) {
                        if (ec) return;
                        if (drain_after) return self->drain();
                        if (!keep_alive) return self->shutdown();
                        self->read();
                      });
  }
  /// Answers and closes without reading the rest of the request (what is
  /// left of its body, if any, is drained).
  void refuse(const HttpResponse& r) { write(r, false, parser_ && !parser_->is_done()); }
  /// A throttled source's answer is held before it is sent (a tarpit):
  /// nothing is read from the connection meanwhile, so a client that waits
  /// for its answers (every HTTP/1.1 client) sends at most one request per
  /// hold and connection, and its connections are bounded per address. The
  /// hold costs the node a timer, not a core (docs/security.md).
  void hold_then_refuse(HttpResponse r, Millis hold) {
    if (hold.count() <= 0) return refuse(r);
    held_.emplace(stream_.get_executor());
    held_->expires_after(hold);
    held_->async_wait([self = shared_from_this(), r = std::move(r)](beast::error_code ec) {
      if (ec) return;
      beast::get_lowest_layer(self->stream_).expires_after(self->context_.limits.request_deadline);
      self->refuse(r);
    });
  }
  /// What the client still sends (a body refused unread) is read and
  /// dropped until it stops or two seconds pass: closing with unread bytes
  /// would reset the connection, and the client could lose the answer.
  void drain() {
    if (!draining_) {
      draining_ = true;
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(2));
      if constexpr (!std::is_same_v<Stream, TlsStream>) {
        beast::error_code ignored;
        stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      }
    }
    stream_.async_read_some(asio::buffer(sink_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (!ec) self->drain();
    });
  }
  void shutdown() {
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      // close_notify, bounded: a peer that never answers it is cut off.
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(2));
      stream_.async_shutdown([self = shared_from_this()](beast::error_code) {
        beast::error_code ignored;
        beast::get_lowest_layer(self->stream_).socket().close(ignored);
      });
    } else {
      beast::error_code ec;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    }
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const SessionContext& context_;
  Slot slot_;
  const std::string address_;  ///< the client's address (the source of its failed authentications)
  std::optional<Deadline> first_deadline_;
  bool draining_ = false;
  std::optional<asio::steady_timer> held_;  ///< a throttled answer's hold
  char sink_[4096];
};

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
        acceptor(ioc),
        reload_timer(ioc),
        context{handlers,
                admin,
                hellos,
                admin_queued,
                gate,
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
