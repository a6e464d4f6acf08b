// A rolling upgrade, at the process level (docs/protocol.md, "Versions"): a
// node that speaks protocol versions 1 to 7 serves, side by side, a real
// `baton worker` (which negotiates version 7: its runs start with their
// assignment, and its heartbeats carry progress) and a version-1 worker (this
// test speaking exactly the frames a version-1 binary sends, through a whole
// run); a worker that speaks only a later version is refused with both
// ranges named. The client is Boost.Beast over TLS, verified as a worker
// verifies the node.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <optional>
#include <regex>

#include "baton/tls/tls_context.h"
#include "cluster.h"

using namespace baton::testing;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

namespace {

const char* jobs = R"(jobs:
  - name: for-old
    selector: {gen: old}
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
  - name: for-new
    selector: {gen: new}
    tasks:
      - {kind: BUILTIN, builtin: NOOP}
)";

const std::string worker_token = "suite-worker-token-not-for-production";

/// A worker connection driven frame by frame.
class RawWorker {
 public:
  explicit RawWorker(int port) : ws_(ioc_, *ctx()) {
    beast::get_lowest_layer(ws_).connect(
        tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
    EXPECT_TRUE(baton::tls::expect_peer_name(ws_.next_layer().native_handle(), "127.0.0.1"));
    ws_.next_layer().handshake(asio::ssl::stream_base::client);
    ws_.handshake("127.0.0.1", "/ws");
  }
  void send(const std::string& frame) {
    ws_.text(true);
    ws_.write(asio::buffer(frame));
  }
  /// The next frame within `max`, or nullopt (closed, or nothing came).
  /// Heartbeats go out every 250 ms meanwhile (a version-1 heartbeat
  /// listing `running` and `assigned`), as a worker's do.
  std::optional<std::string> next(std::chrono::milliseconds max = std::chrono::seconds(10)) {
    beast::flat_buffer buf;
    bool done = false;
    beast::error_code ec;
    ws_.async_read(buf, [&](beast::error_code e, std::size_t) {
      ec = e;
      done = true;
    });
    const auto end = std::chrono::steady_clock::now() + max;
    while (!done && std::chrono::steady_clock::now() < end) {
      ioc_.restart();
      ioc_.run_for(std::chrono::milliseconds(250));
      if (done) break;
      heartbeat_ = R"({"type":"heartbeat","version":1,"running":[)" + running + R"(],"finished":[)" + finished +
                   R"(],"assigned":[)" + assigned + "]}";
      bool written = false;
      ws_.text(true);
      ws_.async_write(asio::buffer(heartbeat_), [&](beast::error_code, std::size_t) { written = true; });
      while (!written && !done) {
        ioc_.restart();
        ioc_.run_one_for(std::chrono::milliseconds(250));
      }
    }
    if (!done) {
      beast::get_lowest_layer(ws_).close();
      ioc_.restart();
      ioc_.run();
      return std::nullopt;
    }
    if (ec) return std::nullopt;
    return beast::buffers_to_string(buf.data());
  }
  std::string running, finished, assigned;  ///< attempt refs (JSON objects) the heartbeats list

  /// Frames until one of `type` (others, such as heartbeat timing, skipped).
  std::optional<std::string> next_of(const std::string& type) {
    for (int i = 0; i < 50; ++i) {
      auto f = next();
      if (!f) return std::nullopt;
      if (f->find("\"type\":\"" + type + "\"") != std::string::npos) return f;
    }
    return std::nullopt;
  }

 private:
  static std::shared_ptr<baton::tls::Context> ctx() {
    static auto made = *baton::tls::make_client_context({ThrowawayCa::shared().ca(), "", ""});
    return made;
  }
  asio::io_context ioc_;
  websocket::stream<beast::ssl_stream<beast::tcp_stream>> ws_;
  std::string heartbeat_;  ///< the frame being written (it must outlive the write)
};

std::string field(const std::string& frame, const std::string& key) {
  std::smatch m;
  const std::regex re("\"" + key + "\":(\"[^\"]*\"|[0-9]+)");
  if (!std::regex_search(frame, m, re)) return "";
  std::string v = m[1];
  return v.front() == '"' ? v.substr(1, v.size() - 2) : v;
}

/// The attempt reference of a frame, as version 1 writes it.
std::string ref_of(const std::string& frame) {
  return R"("run_id":)" + field(frame, "run_id") + R"(,"attempt":)" + field(frame, "attempt") + R"(,"lease_token":")" +
         field(frame, "lease_token") + "\"";
}

}  // namespace

TEST(ProtocolVersions, AVersionOneWorkerAndAVersionFourWorkerShareANode) {
  Cluster c("versions", jobs);
  c.start_node("n1");
  ASSERT_EQ(c.wait_for_leader(), "n1");
  auto& modern = c.start_worker("w-new", 2, {}, "", "{gen: new}");
  ASSERT_TRUE(c.wait_for_workers("n1", 1));
  EXPECT_TRUE(wait_until([&] { return modern.log().find("protocol=7") != std::string::npos; }, 5s)) << modern.log();

  // A version-1 worker, frame for frame as version-1 binaries wrote them:
  // no range in the hello.
  RawWorker old(c.port("n1"));
  old.send(R"({"type":"hello","version":1,"worker_id":"w-old","token":")" + worker_token +
           R"(","capacity":1,"labels":{"gen":"old"},"running":[]})");
  auto welcome = old.next_of("welcome");
  ASSERT_TRUE(welcome);
  EXPECT_EQ(field(*welcome, "version"), "1") << *welcome;
  EXPECT_EQ(welcome->find("\"protocol\""), std::string::npos) << "a version-1 welcome names no version: " << *welcome;
  ASSERT_TRUE(c.wait_for_workers("n1", 2));

  // A whole run on the version-1 worker: assign, start, grant, finish, ack,
  // every frame the node sends it in version 1.
  auto run = c.trigger("n1", "for-old");
  ASSERT_GT(run, 0);
  auto assign = old.next_of("assign");
  ASSERT_TRUE(assign);
  EXPECT_EQ(field(*assign, "version"), "1");
  EXPECT_EQ(field(*assign, "run_id"), std::to_string(run));
  EXPECT_EQ(assign->find("start_granted"), std::string::npos) << "version 1 has the separate start: " << *assign;
  const std::string ref = "{" + ref_of(*assign) + "}";
  old.assigned = ref;
  old.send(R"({"type":"start","version":1,)" + ref_of(*assign) + "}");
  auto granted = old.next_of("start_granted");
  ASSERT_TRUE(granted);
  EXPECT_EQ(field(*granted, "version"), "1");
  old.assigned.clear();
  old.running = ref;
  old.send(R"({"type":"finish","version":1,)" + ref_of(*assign) +
           R"(,"outcome":"SUCCEEDED","exit_code":0,"stdout_tail":"old\n","duration_ms":1,"tasks":[]})");
  old.running.clear();
  old.finished = ref;  // ended, not yet acknowledged
  auto ack = old.next_of("finish_ack");
  ASSERT_TRUE(ack);
  EXPECT_EQ(field(*ack, "version"), "1");
  old.finished.clear();
  EXPECT_TRUE(c.wait_for_state(run, "SUCCEEDED", 10s));
  EXPECT_EQ(c.db().run(run)->worker_id, "w-old");

  // Meanwhile the version-5 worker runs its own work, each run started by
  // its assignment: one statement wrote ASSIGNED and RUNNING (one
  // transaction in the history), and the worker asked for no start.
  auto fresh = c.trigger("n1", "for-new");
  EXPECT_TRUE(c.wait_for_state(fresh, "SUCCEEDED", 10s));
  EXPECT_EQ(c.db().run(fresh)->worker_id, "w-new");
  const std::string steps = c.db().scalar(
      "SELECT string_agg(from_state || '->' || to_state, ',' ORDER BY to_version)"
      " FROM job_run_transitions WHERE run_id = " +
      std::to_string(fresh) + " AND to_state IN ('ASSIGNED', 'RUNNING')");
  EXPECT_EQ(steps, "PENDING->ASSIGNED,ASSIGNED->RUNNING");
  EXPECT_EQ(c.db().scalar("SELECT count(DISTINCT xid) FROM job_run_transitions WHERE run_id = " +
                          std::to_string(fresh) + " AND to_state IN ('ASSIGNED', 'RUNNING')"),
            "1");

  // A worker that speaks only a later version is told both ranges, in a
  // version-1 frame every worker reads, and the node goes on.
  RawWorker future(c.port("n1"));
  future.send(R"({"type":"hello","version":1,"worker_id":"w-future","token":")" + worker_token +
              R"(","capacity":1,"labels":{},"running":[],"protocol":{"min":8,"max":9}})");
  auto refused = future.next_of("error");
  ASSERT_TRUE(refused);
  EXPECT_EQ(field(*refused, "code"), "bad_version");
  EXPECT_NE(refused->find("this node speaks protocol versions 1 to 7, the worker 8 to 9"), std::string::npos)
      << *refused;
  EXPECT_EQ(c.http(c.port("n1"), "GET", "/healthz").status, 200);
}
