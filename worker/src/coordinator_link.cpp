// The worker's only translation unit that includes Boost.Beast for its
// connection to the leader (coordinator_probe.cpp holds the other, for
// the probe `baton doctor` runs with a worker's configuration).
#include "coordinator_link.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <deque>

#include "baton/base/assert.h"
#include "baton/protocol/codec.h"
#include "baton/protocol/messages.h"
#include "baton/tls/tls_context.h"

namespace baton::worker {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using PlainWs = websocket::stream<beast::tcp_stream>;
using TlsWs = websocket::stream<beast::ssl_stream<beast::tcp_stream>>;

namespace {
// Frames waiting for the socket, at most (a heartbeat interval's worth of a
// worker at full capacity is far below it).
constexpr std::size_t send_queue_max = 16384;
static_assert(send_queue_max > 0);
}  // namespace

struct CoordinatorLink::Impl {
  Impl(asio::io_context& ioc, Events events) : ioc_(ioc), events_(std::move(events)), resolver_(ioc) {}

  void open(const std::string& endpoint, const tls::ClientFiles* tls, std::chrono::milliseconds idle_timeout) {
    close();
    plain_.reset();
    tls_.reset();
    const std::uint64_t gen = generation_;
    endpoint_ = endpoint;
    idle_timeout_ = idle_timeout;
    protocol_ = protocol::protocol_version_min;  // until a welcome names the version
    auto colon = endpoint.rfind(':');
    host_ = endpoint.substr(0, colon);
    std::string port = endpoint.substr(colon + 1);
    if (!tls) {
      plain_ = std::make_shared<PlainWs>(ioc_);
    } else {
      auto ctx = tls::make_client_context(*tls);
      if (!ctx) return failed(gen, ctx.error().message);
      tls_context_ = *ctx;
      tls_ = std::make_shared<TlsWs>(ioc_, *tls_context_);
      // The node's certificate must name the address dialed: one of the
      // cluster CA issued for another host is refused too. A redirect is
      // followed the same way, so it reaches only a node that verifies.
      if (!tls::expect_peer_name(tls_->next_layer().native_handle(), host_))
        return failed(gen, "tls: cannot check a certificate against the host '" + host_ + "'");
    }
    with_ws([&](auto& ws) {
      ws.read_message_max(protocol::frame_bytes_max * 2);
      beast::get_lowest_layer(ws).expires_after(std::chrono::seconds(3));
    });
    resolver_.async_resolve(host_, port, [this, gen](beast::error_code ec, tcp::resolver::results_type results) {
      if (gen != generation_) return;
      if (ec) return failed(gen, "resolve: " + ec.message());
      with_ws([&](auto& ws) {
        beast::get_lowest_layer(ws).async_connect(
            results, [this, gen, &ws, keep = stream_ref()](beast::error_code ec2, tcp::endpoint) {
              if (gen != generation_) return;
              if (ec2) return failed(gen, "connect: " + ec2.message());
              beast::error_code nodelay_ec;  // small frames: no Nagle delay
              beast::get_lowest_layer(ws).socket().set_option(tcp::no_delay(true), nodelay_ec);
              if constexpr (std::is_same_v<std::decay_t<decltype(ws)>, TlsWs>) {
                ws.next_layer().async_handshake(
                    asio::ssl::stream_base::client, [this, gen, &ws, keep](beast::error_code ec3) {
                      if (gen != generation_) return;
                      // Nothing was sent: the token never reaches a node
                      // that does not verify.
                      if (ec3)
                        return failed(gen, "tls: " + tls::handshake_failure(ec3, ws.next_layer().native_handle()));
                      websocket_handshake(ws, gen);
                    });
              } else {
                websocket_handshake(ws, gen);
              }
            });
      });
    });
  }

  template <class Ws>
  void websocket_handshake(Ws& ws, std::uint64_t gen) {
    beast::get_lowest_layer(ws).expires_never();
    websocket::stream_base::timeout t{};
    t.handshake_timeout = std::chrono::seconds(3);
    t.idle_timeout = idle_timeout_;
    t.keep_alive_pings = true;  // a leader that stops answering is noticed within idle_timeout
    ws.set_option(t);
    ws.async_handshake(host_, "/ws", [this, gen, keep = stream_ref()](beast::error_code ec) {
      if (gen != generation_) return;
      if (ec) return failed(gen, "handshake: " + ec.message());
      open_ = true;
      events_.opened();
      if (gen == generation_) read(gen);
    });
  }

  void failed(std::uint64_t gen, const std::string& why) {
    if (gen != generation_) return;
    const std::string endpoint = endpoint_;
    close();
    events_.failed(endpoint, why);
  }

  void lost(std::uint64_t gen, const std::string& why) {
    if (gen != generation_) return;
    const std::string endpoint = endpoint_;
    close();
    events_.lost(endpoint, why);
  }

  void read(std::uint64_t gen) {
    with_ws([&](auto& ws) {
      ws.async_read(buffer_, [this, gen, keep = stream_ref()](beast::error_code ec, std::size_t) {
        if (gen != generation_) return;
        if (ec) return lost(gen, ec.message());
        std::string frame = beast::buffers_to_string(buffer_.data());
        buffer_.consume(buffer_.size());
        events_.frame(std::move(frame));
        if (gen == generation_ && open_) read(gen);
      });
    });
  }

  bool send(std::string encoded) {
    if (!open_) return true;  // nothing to send on: the next link's hello says what is current
    if (queue_.size() >= send_queue_max) return false;
    queue_.push_back(std::move(encoded));
    BATON_ASSERT(queue_.size() <= send_queue_max);
    if (!writing_) write_next();
    return true;
  }

  void write_next() {
    // One write in flight per stream (Beast's rule: a second async_write
    // before the first completes is undefined behaviour).
    BATON_ASSERT(!writing_);
    if (queue_.empty() || !open_) return;
    writing_ = true;
    const std::uint64_t gen = generation_;
    // What queued meanwhile leaves in one frame (a batch from version 3).
    // The frame lives with the write: a reconnect clears the queue while a
    // write of the old connection may still hold its buffer.
    auto frame = std::make_shared<std::string>(protocol::next_frame(queue_, protocol_));
    with_ws([&](auto& ws) {
      ws.text(true);
      ws.async_write(asio::buffer(*frame), [this, gen, frame, keep = stream_ref()](beast::error_code ec, std::size_t) {
        if (gen != generation_) return;
        writing_ = false;
        if (ec) return lost(gen, "write: " + ec.message());
        write_next();
      });
    });
  }

  void close() {
    ++generation_;
    open_ = false;
    writing_ = false;
    queue_.clear();
    resolver_.cancel();
    with_ws([](auto& ws) {
      beast::error_code ignored;
      beast::get_lowest_layer(ws).socket().close(ignored);
    });
    // The streams stay until the cancelled operations' completions have run
    // (each holds its stream_ref); the next open replaces them.
  }

  /// The connection's stream, for an operation on it to hold until it
  /// completes.
  std::shared_ptr<void> stream_ref() const {
    if (tls_) return tls_;
    return plain_;
  }

  /// Calls f with the connection's WebSocket stream (TLS or, with
  /// `insecure`, plain), if there is one.
  template <class F>
  void with_ws(F&& f) {
    if (tls_)
      f(*tls_);
    else if (plain_)
      f(*plain_);
  }

  asio::io_context& ioc_;
  Events events_;
  tcp::resolver resolver_;
  // Shared with every operation in flight on it (stream_ref): a new
  // connection replaces these at once, while the old one's cancelled
  // operations still run their completions -- a WebSocket read that fails
  // tears its stream down first -- on a stream that must still be there.
  std::shared_ptr<PlainWs> plain_;  ///< the connection, with `insecure`
  std::shared_ptr<TlsWs> tls_;      ///< the connection, verified
  std::shared_ptr<tls::Context> tls_context_;
  beast::flat_buffer buffer_;
  std::deque<std::string> queue_;
  bool writing_ = false, open_ = false;
  std::uint64_t generation_ = 0;
  int protocol_ = protocol::protocol_version_min;
  std::string endpoint_, host_;
  std::chrono::milliseconds idle_timeout_{0};
};

CoordinatorLink::CoordinatorLink(asio::io_context& ioc, Events events)
    : impl_(std::make_unique<Impl>(ioc, std::move(events))) {}
CoordinatorLink::~CoordinatorLink() = default;

void CoordinatorLink::open(const std::string& endpoint, const tls::ClientFiles* tls,
                           std::chrono::milliseconds idle_timeout) {
  impl_->open(endpoint, tls, idle_timeout);
}
bool CoordinatorLink::send(std::string encoded) { return impl_->send(std::move(encoded)); }
void CoordinatorLink::close() { impl_->close(); }
int CoordinatorLink::protocol() const { return impl_->protocol_; }
void CoordinatorLink::set_protocol(int version) { impl_->protocol_ = version; }
std::size_t CoordinatorLink::queued() const { return impl_->queue_.size(); }
std::uint64_t CoordinatorLink::generation() const { return impl_->generation_; }
bool CoordinatorLink::is_open() const { return impl_->open_; }

}  // namespace baton::worker
