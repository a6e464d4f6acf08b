#include "baton/chaos/fault_proxy.h"

#include <atomic>
#include <boost/asio.hpp>
#include <deque>
#include <mutex>
#include <set>

#include "baton/base/assert.h"

namespace baton::chaos {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

const char* to_string(ProxyMode m) {
  switch (m) {
    case ProxyMode::pass: return "pass";
    case ProxyMode::blackhole: return "blackhole";
    case ProxyMode::latency: return "latency";
    case ProxyMode::reset: return "reset";
  }
  return "?";
}

namespace {
constexpr std::size_t chunk_bytes = 16 * 1024;
}

struct FaultProxy::Impl : std::enable_shared_from_this<FaultProxy::Impl> {
  struct Pipe;  // one direction of one connection
  struct Conn : std::enable_shared_from_this<Conn> {
    explicit Conn(asio::io_context& ioc, std::shared_ptr<Impl> p)
        : client(ioc), server(ioc), strand(asio::make_strand(ioc)), proxy(std::move(p)) {}
    tcp::socket client, server;
    asio::strand<asio::io_context::executor_type> strand;
    std::shared_ptr<Impl> proxy;
    bool closed = false;
    bool stranded = false;  ///< never moves a byte again (see FaultProxy::strand_existing)
    // Paused directions waiting for heal, with the chunk that arrived as the
    // blackhole began (held, not dropped: a partition delays, TCP retransmits).
    bool paused[2] = {false, false};
    std::shared_ptr<std::vector<char>> held[2];

    void start() {
      read(0);
      read(1);
    }
    tcp::socket& from(int dir) { return dir == 0 ? client : server; }
    tcp::socket& to(int dir) { return dir == 0 ? server : client; }

    void read(int dir) {
      if (closed) return;
      if (stranded || proxy->mode.load() == ProxyMode::blackhole) {
        paused[dir] = true;  // stop pulling bytes: the stream stalls both ways
        return;
      }
      auto buf = std::make_shared<std::vector<char>>(chunk_bytes);
      from(dir).async_read_some(asio::buffer(*buf),
                                asio::bind_executor(strand, [self = shared_from_this(), dir, buf](
                                                                boost::system::error_code ec, std::size_t n) {
                                  if (ec) return self->close();
                                  buf->resize(n);
                                  self->forward(dir, buf);
                                }));
    }
    void forward(int dir, std::shared_ptr<std::vector<char>> buf) {
      auto mode = proxy->mode.load();
      if (stranded || mode == ProxyMode::blackhole) {
        // One read is in flight per direction, so at most one chunk is
        // held: a second would mean the first is dropped, a partition that
        // loses bytes instead of delaying them.
        BATON_ASSERT(!held[dir]);
        held[dir] = buf;
        paused[dir] = true;
        proxy->applied++;
        return;
      }
      if (mode == ProxyMode::latency) {
        proxy->applied++;
        auto timer = std::make_shared<asio::steady_timer>(strand, proxy->latency());
        timer->async_wait(asio::bind_executor(strand, [self = shared_from_this(), dir, buf,
                                                       timer](boost::system::error_code) { self->write(dir, buf); }));
        return;
      }
      write(dir, buf);
    }
    void write(int dir, std::shared_ptr<std::vector<char>> buf) {
      if (closed) return;
      asio::async_write(to(dir), asio::buffer(*buf),
                        asio::bind_executor(
                            strand, [self = shared_from_this(), dir, buf](boost::system::error_code ec, std::size_t n) {
                              if (ec) return self->close();
                              self->proxy->forwarded += n;
                              self->read(dir);
                            }));
    }
    void resume() {
      asio::post(strand, [self = shared_from_this()] {
        for (int d = 0; d < 2; ++d)
          if (self->paused[d]) {
            self->paused[d] = false;
            if (auto h = std::move(self->held[d]))
              self->forward(d, h);
            else
              self->read(d);
          }
      });
    }
    void reset() {
      asio::post(strand, [self = shared_from_this()] {
        boost::system::error_code ignored;
        for (auto* s : {&self->client, &self->server}) {
          s->set_option(asio::socket_base::linger(true, 0), ignored);  // RST, not FIN
          s->close(ignored);
        }
        self->closed = true;
        self->proxy->applied++;
        self->proxy->forget(self.get());
      });
    }
    void close() {
      if (closed) return;
      closed = true;
      boost::system::error_code ignored;
      client.close(ignored);
      server.close(ignored);
      proxy->forget(this);
    }
  };

  Impl(asio::io_context& io, int listen_port, int upstream)
      : ioc(io),
        acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(listen_port))),
        upstream_port(upstream) {}

  void accept() {
    acceptor.async_accept([self = shared_from_this()](boost::system::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !self->acceptor.is_open()) return;  // stopped
      if (ec) return self->accept();  // a client gave up mid-handshake: keep accepting
      if (self->mode.load() == ProxyMode::reset) {
        boost::system::error_code ignored;
        socket.set_option(asio::socket_base::linger(true, 0), ignored);
        socket.close(ignored);
        self->applied++;
        return self->accept();
      }
      auto conn = std::make_shared<Conn>(self->ioc, self);
      conn->client = std::move(socket);
      conn->server.async_connect(
          tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(self->upstream_port.load())),
          [self, conn](boost::system::error_code ec2) {
            if (ec2) return conn->close();
            {
              std::lock_guard lock(self->mutex);
              self->conns.insert(conn);
            }
            // set_mode stores the mode before it reads `conns`; this handler
            // inserts before it reads the mode. So a reset that raced with this
            // connect either saw the connection or is seen here: a connection
            // the kernel completed just before a reset never slips through.
            if (self->mode.load() == ProxyMode::reset) return conn->reset();
            conn->start();
          });
      self->accept();
    });
  }
  void forget(Conn* c) {
    std::lock_guard lock(mutex);
    for (auto it = conns.begin(); it != conns.end(); ++it)
      if (it->get() == c) {
        conns.erase(it);
        break;
      }
  }
  std::chrono::milliseconds latency() const { return std::chrono::milliseconds(latency_ms.load()); }

  asio::io_context& ioc;
  tcp::acceptor acceptor;
  std::atomic<int> upstream_port;
  std::atomic<ProxyMode> mode{ProxyMode::pass};
  std::atomic<std::int64_t> latency_ms{0};
  std::atomic<std::uint64_t> forwarded{0};
  std::atomic<std::uint64_t> applied{0};
  std::mutex mutex;
  std::set<std::shared_ptr<Conn>> conns;
};

FaultProxy::FaultProxy(asio::io_context& ioc, int listen_port, int upstream_port)
    : impl_(std::make_shared<Impl>(ioc, listen_port, upstream_port)) {
  impl_->accept();
}

FaultProxy::~FaultProxy() { stop(); }

int FaultProxy::port() const { return impl_->acceptor.local_endpoint().port(); }

void FaultProxy::set_upstream(int port) { impl_->upstream_port = port; }

ProxyMode FaultProxy::mode() const { return impl_->mode.load(); }

std::uint64_t FaultProxy::bytes_forwarded() const { return impl_->forwarded.load(); }
std::uint64_t FaultProxy::faults_applied() const { return impl_->applied.load(); }

void FaultProxy::strand_existing() {
  std::vector<std::shared_ptr<Impl::Conn>> conns;
  {
    std::lock_guard lock(impl_->mutex);
    conns.assign(impl_->conns.begin(), impl_->conns.end());
  }
  for (auto& c : conns)
    asio::post(c->strand, [c, impl = impl_] {
      if (c->closed || c->stranded) return;
      c->stranded = true;
      impl->applied++;
    });
}

void FaultProxy::set_mode(ProxyMode m, std::chrono::milliseconds latency) {
  impl_->latency_ms = latency.count();
  impl_->mode = m;
  std::vector<std::shared_ptr<Impl::Conn>> conns;
  {
    std::lock_guard lock(impl_->mutex);
    conns.assign(impl_->conns.begin(), impl_->conns.end());
  }
  for (auto& c : conns) {
    if (m == ProxyMode::reset)
      c->reset();
    else if (m != ProxyMode::blackhole)
      c->resume();
  }
}

void FaultProxy::stop() {
  if (!impl_) return;
  asio::post(impl_->ioc, [impl = impl_] {
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
    std::vector<std::shared_ptr<Impl::Conn>> conns;
    {
      std::lock_guard lock(impl->mutex);
      conns.assign(impl->conns.begin(), impl->conns.end());
      impl->conns.clear();
    }
    for (auto& c : conns) asio::post(c->strand, [c] { c->close(); });
  });
}

}  // namespace baton::chaos
