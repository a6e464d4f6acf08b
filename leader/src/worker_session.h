// A worker's WebSocket, from the upgrade through its hello to its close
// (NodeServer's own; included only by node_server.cpp).
#pragma once

#include <spdlog/spdlog.h>

#include <deque>
#include <set>
#include <string>
#include <vector>

#include "baton/base/assert.h"
#include "baton/base/json_text.h"
#include "baton/leader/frame_handoff.h"
#include "baton/protocol/codec.h"
#include "session_context.h"

namespace baton::leader::serving {

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
    switch (handed_.put(std::move(frame))) {
      case FrameHandoff::Put::first:
        asio::post(ws_.get_executor(), [self = shared_from_this()] { self->take_handed(); });
        break;
      case FrameHandoff::Put::more: break;
      // The connection's thread has not taken what the loop handed it for
      // as long as the loop took to hand it this much: closed, as a full
      // send queue is, rather than held without bound.
      case FrameHandoff::Put::full: close("send queue full"); break;
    }
  }
  void take_handed() {
    for (auto& f : handed_.take()) queue(std::move(f));
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
    BATON_ASSERT(queue_.size() <= session_send_queue_max);
    if (queue_.size() == 1 && !writing_) write_next();
  }
  void write_next() {
    // One write in flight per stream (Beast's rule: a second async_write
    // before the first completes is undefined behaviour).
    BATON_ASSERT(!writing_);
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
  FrameHandoff handed_{session_send_queue_max};
  bool writing_ = false, closing_ = false, closed_ = false, finished_ = false;
  std::string close_reason_;
};

}  // namespace baton::leader::serving
