// baton-fleet: a load client for benchmarks. Opens N worker connections to
// a coordinator over the real protocol (hello, heartbeats, start, finish) and
// completes every granted attempt at once, as a NOOP: the leader sees N
// attached workers doing work, with none of the cost of running processes.
//
//   baton-fleet --endpoint 127.0.0.1:7001 --token-file F --workers 1000
//               [--capacity 1] [--prefetch CAPACITY] [--prefix fleet-]
//               [--seconds 0 (until SIGTERM)]
//
// Each session keeps a worker's slots as a real worker does (docs/protocol.md,
// "Prefetch"): it asks to start at most `capacity` attempts at once, holds up
// to `prefetch` more assigned runs queued, asks for the oldest as a slot
// frees, lists what it holds in every heartbeat, and sends what one incoming
// frame caused as one outgoing frame. The default prefetch is the real
// worker's (its capacity).
//
// Follows redirects like a worker. Prints one line of totals every second and
// at exit: attached sessions, attempts finished.
#include <signal.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "baton/protocol/codec.h"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using namespace baton;

namespace {

struct Totals {
  int attached = 0;
  long long finished = 0;
  long long reconnects = 0;
};

struct Options {
  std::string endpoint;
  std::string token;
  int workers = 1000;
  int capacity = 1;
  int prefetch = -1;  ///< -1: as a worker's default, the capacity
  std::string prefix = "fleet-";
  int seconds = 0;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(asio::io_context& ioc, const Options& o, std::string id, Totals& totals)
      : ioc_(ioc), opt_(o), id_(std::move(id)), totals_(totals), heartbeat_(ioc), retry_(ioc) {}

  void start(const std::string& endpoint) {
    endpoint_ = endpoint;
    queue_.clear();
    writing_ = false;
    // A new connection starts with nothing held: a leader that reads this
    // hello's empty lists treats whatever the last one held as lost.
    queued_.clear();
    asked_.clear();
    unacked_.clear();
    ws_ = std::make_unique<websocket::stream<beast::tcp_stream>>(ioc_);
    auto colon = endpoint_.rfind(':');
    tcp::endpoint ep(asio::ip::make_address(endpoint_.substr(0, colon)),
                     static_cast<unsigned short>(std::stoi(endpoint_.substr(colon + 1))));
    beast::get_lowest_layer(*ws_).expires_after(std::chrono::seconds(10));
    beast::get_lowest_layer(*ws_).async_connect(ep, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->retry();
      beast::get_lowest_layer(*self->ws_).expires_never();
      beast::error_code ignored;
      beast::get_lowest_layer(*self->ws_).socket().set_option(tcp::no_delay(true), ignored);
      self->ws_->async_handshake(self->endpoint_, "/ws", [self](beast::error_code ec2) {
        if (ec2) return self->retry();
        protocol::Hello hello{self->id_, self->opt_.token, self->opt_.capacity, {{"fleet", "bench"}}, {}, {}, "", "",
                              ""};
        hello.prefetch = self->opt_.prefetch;
        // The versions a real worker speaks: from 3, frames queued together
        // travel as one batch.
        hello.protocol_min = protocol::protocol_version_min;
        hello.protocol_max = protocol::protocol_version_max;
        self->version_ = protocol::protocol_version_min;
        self->send(hello);
        self->read();
      });
    });
  }

 private:
  void retry() {
    if (attached_) totals_.attached--;
    attached_ = false;
    heartbeat_.cancel();
    totals_.reconnects++;
    retry_.expires_after(std::chrono::milliseconds(200 + std::rand() % 300));
    retry_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->start(self->opt_.endpoint);
    });
  }
  void read() {
    ws_->async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->retry();
      std::string frame = beast::buffers_to_string(self->buffer_.data());
      self->buffer_.consume(self->buffer_.size());
      auto decoded = protocol::decode_frame(frame);
      if (auto* ms = std::get_if<std::vector<protocol::Message>>(&decoded))
        for (const auto& m : *ms)
          if (!self->handle(m)) return;
      self->flush();  // what this frame caused leaves as one frame
      self->read();
    });
  }
  bool handle(const protocol::Message& m) {
    if (auto* w = std::get_if<protocol::Welcome>(&m)) {
      version_ = w->protocol;
      attached_ = true;
      totals_.attached++;
      heartbeat_every_ = std::chrono::milliseconds(w->heartbeat_interval_ms);
      schedule_heartbeat();
    } else if (auto* r = std::get_if<protocol::Redirect>(&m)) {
      beast::error_code ignored;
      beast::get_lowest_layer(*ws_).socket().close(ignored);
      if (r->leader_endpoint.empty()) {
        retry();
      } else {
        auto self = shared_from_this();
        asio::post(ioc_, [self, ep = r->leader_endpoint] { self->start(ep); });
      }
      return false;
    } else if (auto* a = std::get_if<protocol::Assign>(&m)) {
      if (a->start_granted) {
        finish(a->ref);  // the start came with the assignment (protocol 4)
      } else {
        queued_.push_back(a->ref);
        ask_to_start();
      }
    } else if (auto* g = std::get_if<protocol::StartGranted>(&m)) {
      if (!forget(asked_, g->ref)) return true;
      finish(g->ref);
      ask_to_start();
    } else if (auto* d = std::get_if<protocol::StartDenied>(&m)) {
      if (forget(asked_, d->ref)) ask_to_start();
    } else if (auto* c = std::get_if<protocol::Cancel>(&m)) {
      forget(queued_, c->ref);  // queued too long, placed again: dropped
    } else if (auto* k = std::get_if<protocol::FinishAck>(&m)) {
      forget(unacked_, k->ref);
    }
    return true;
  }
  // A started NOOP ends at once.
  void finish(const protocol::AttemptRef& ref) {
    protocol::Finish f;
    f.ref = ref;
    f.outcome = protocol::Outcome::succeeded;
    f.exit_code = 0;
    queue(f);
    unacked_.push_back(ref);
    totals_.finished++;
  }
  // The oldest queued runs, into the free slots (a start asked for holds
  // its slot until granted: the NOOP ends at the grant).
  void ask_to_start() {
    while (static_cast<int>(asked_.size()) < opt_.capacity && !queued_.empty()) {
      asked_.push_back(queued_.front());
      queued_.pop_front();
      queue(protocol::Start{asked_.back()});
    }
  }
  static bool forget(std::deque<protocol::AttemptRef>& from, const protocol::AttemptRef& ref) {
    for (auto it = from.begin(); it != from.end(); ++it)
      if (*it == ref) {
        from.erase(it);
        return true;
      }
    return false;
  }
  void schedule_heartbeat() {
    heartbeat_.expires_after(heartbeat_every_);
    heartbeat_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || !self->attached_) return;
      protocol::Heartbeat h;
      h.assigned.assign(self->queued_.begin(), self->queued_.end());
      h.assigned.insert(h.assigned.end(), self->asked_.begin(), self->asked_.end());
      h.finished.assign(self->unacked_.begin(), self->unacked_.end());
      self->queue(h);
      self->flush();
      self->schedule_heartbeat();
    });
  }
  void send(const protocol::Message& m) {
    queue(m);
    flush();
  }
  void queue(const protocol::Message& m) { queue_.push_back(protocol::encode(m, version_)); }
  void flush() {
    if (!writing_ && !queue_.empty()) write_next();
  }
  void write_next() {
    writing_ = true;
    auto frame = std::make_shared<std::string>(protocol::next_frame(queue_, version_));
    ws_->text(true);
    ws_->async_write(asio::buffer(*frame), [self = shared_from_this(), frame](beast::error_code ec, std::size_t) {
      self->writing_ = false;
      if (ec) {
        self->queue_.clear();
        return;  // the read side notices and reconnects
      }
      if (!self->queue_.empty()) self->write_next();
    });
  }

  asio::io_context& ioc_;
  const Options& opt_;
  std::string id_;
  Totals& totals_;
  std::string endpoint_;
  std::unique_ptr<websocket::stream<beast::tcp_stream>> ws_;
  beast::flat_buffer buffer_;
  std::deque<std::string> queue_;
  std::deque<protocol::AttemptRef> queued_;   ///< assigned, waiting for a slot (prefetch)
  std::deque<protocol::AttemptRef> asked_;    ///< start asked for, not yet granted or denied
  std::deque<protocol::AttemptRef> unacked_;  ///< finished, not yet acknowledged
  asio::steady_timer heartbeat_, retry_;
  std::chrono::milliseconds heartbeat_every_{1000};
  bool attached_ = false, writing_ = false;
  int version_ = protocol::protocol_version_min;  ///< until the welcome names one
};

constexpr const char* usage_line =
    "usage: baton-fleet --endpoint HOST:PORT --token-file F [--workers N] [--capacity C] [--prefetch P] [--prefix P]"
    " [--seconds S]\n";

int usage(const char* why) {
  std::fprintf(stderr, "baton-fleet: %s\n%s", why, usage_line);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::string token_file;
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::fputs(usage_line, stdout);
    return 0;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    try {
      if (k == "--endpoint")
        o.endpoint = v;
      else if (k == "--token-file")
        token_file = v;
      else if (k == "--workers")
        o.workers = std::stoi(v);
      else if (k == "--capacity")
        o.capacity = std::stoi(v);
      else if (k == "--prefetch")
        o.prefetch = std::stoi(v);
      else if (k == "--prefix")
        o.prefix = v;
      else if (k == "--seconds")
        o.seconds = std::stoi(v);
      else
        return usage(("unknown option " + k).c_str());
    } catch (const std::exception&) {
      return usage(("bad value for " + k + ": '" + v + "'").c_str());
    }
  }
  if (o.endpoint.empty() || o.endpoint.rfind(':') == std::string::npos)
    return usage("--endpoint HOST:PORT is required");
  std::ifstream in(token_file);
  if (!std::getline(in, o.token) || o.token.empty()) return usage("--token-file must name a file holding the token");
  if (o.workers < 1 || o.workers > 100000 || o.capacity < 1) return usage("--workers 1..100000, --capacity >= 1");
  if (o.prefetch < 0) o.prefetch = o.capacity;
  if (o.prefetch > o.capacity) return usage("--prefetch 0..capacity");

  asio::io_context ioc;
  Totals totals;
  std::vector<std::shared_ptr<Session>> sessions;
  for (int i = 0; i < o.workers; ++i) {
    sessions.push_back(std::make_shared<Session>(ioc, o, o.prefix + std::to_string(i), totals));
    sessions.back()->start(o.endpoint);
  }
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](beast::error_code, int) { ioc.stop(); });
  asio::steady_timer report(ioc);
  const auto began = std::chrono::steady_clock::now();
  std::function<void()> tick = [&] {
    report.expires_after(std::chrono::seconds(1));
    report.async_wait([&](beast::error_code ec) {
      if (ec) return;
      std::printf("fleet attached=%d finished=%lld reconnects=%lld\n", totals.attached, totals.finished,
                  totals.reconnects);
      std::fflush(stdout);
      if (o.seconds > 0 && std::chrono::steady_clock::now() - began >= std::chrono::seconds(o.seconds)) ioc.stop();
      tick();
    });
  };
  tick();
  ioc.run();
  std::printf("fleet_done attached=%d finished=%lld reconnects=%lld\n", totals.attached, totals.finished,
              totals.reconnects);
  return 0;
}
