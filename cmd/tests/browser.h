#pragma once
// Headless Chromium (the Debian package) driven over the DevTools protocol,
// for the dashboard's browser tests: navigate, evaluate JavaScript in the
// page, wait for a condition, take a screenshot. One page at a time (tab()
// moves to another); every call has a deadline; the browser is killed with
// the object.
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <stdexcept>
#include <thread>

#include "baton/testing/child_process.h"

namespace baton::testing {

class Browser {
 public:
  explicit Browser(const std::string& dir)
      : chromium_({"/usr/bin/chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                   "--disable-dev-shm-usage", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                   "--window-size=1280,900", "--user-data-dir=" + dir + "/chromium-profile",
                   // Test nodes serve the shared throwaway CA's certificate:
                   // trusted by its key alone, nothing else is.
                   "--ignore-certificate-errors-spki-list=" + ThrowawayCa::shared().node_spki_sha256(), "about:blank"},
                  dir + "/chromium.log") {
    // Chromium names its DevTools port on stderr.
    std::smatch m;
    const std::regex re(R"(DevTools listening on ws://127\.0\.0\.1:(\d+)/)");
    for (int i = 0; i < 300; ++i) {
      std::string log = chromium_.log();
      if (std::regex_search(log, m, re)) break;
      if (!chromium_.running()) throw std::runtime_error("chromium exited: " + log);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (m.empty()) throw std::runtime_error("chromium did not start: " + chromium_.log());
    port_ = std::stoi(m[1]);
    // The page target made for about:blank.
    first_tab_ = page_target("about:blank");
    attach(first_tab_);
  }

  /// Drives the tab whose address starts with `url` (one the page opened,
  /// as a user opens a link in a new tab: its own session storage) until
  /// first_tab().
  void tab(const std::string& url) { attach(page_target(url)); }
  void first_tab() { attach(first_tab_); }

  /// One DevTools command; events in between are skipped.
  boost::json::value call(const std::string& method, boost::json::object params = {}) {
    const auto id = ++id_;
    ws_->write(boost::asio::buffer(
        boost::json::serialize(boost::json::object{{"id", id}, {"method", method}, {"params", params}})));
    for (;;) {
      boost::beast::flat_buffer buf;
      ws_->next_layer().expires_after(std::chrono::seconds(30));
      ws_->read(buf);
      auto v = boost::json::parse(boost::beast::buffers_to_string(buf.data())).as_object();
      if (!v.contains("id") || v["id"].as_int64() != id) continue;
      if (v.contains("error")) throw std::runtime_error(method + ": " + boost::json::serialize(v["error"]));
      return v["result"];
    }
  }

  /// The value of a JavaScript expression in the page (promises awaited).
  boost::json::value eval(const std::string& js) {
    auto r =
        call("Runtime.evaluate", {{"expression", js}, {"awaitPromise", true}, {"returnByValue", true}}).as_object();
    if (r.contains("exceptionDetails"))
      throw std::runtime_error("javascript: " + js + ": " + boost::json::serialize(r["exceptionDetails"]));
    auto& result = r["result"].as_object();
    return result.contains("value") ? result["value"] : boost::json::value(nullptr);
  }

  void navigate(const std::string& url) {
    call("Page.navigate", {{"url", url}});
    // The page being left is 'complete' too until the navigation commits:
    // wait for the new document (a script on the old one, about:blank,
    // may not touch the new origin's storage).
    wait_for("location.href.startsWith(" + boost::json::serialize(boost::json::value(url)) +
             ") && document.readyState === 'complete'");
  }

  void reload() {
    call("Page.reload");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    wait_for("document.readyState === 'complete'");
  }

  /// Polls a JavaScript condition until it is true (or throws after `max`).
  void wait_for(const std::string& condition, std::chrono::milliseconds max = std::chrono::seconds(15)) {
    auto deadline = std::chrono::steady_clock::now() + max;
    for (;;) {
      auto v = eval("(() => { try { return !!(" + condition + "); } catch (e) { return false; } })()");
      if (v.is_bool() && v.as_bool()) return;
      if (std::chrono::steady_clock::now() > deadline) {
        auto page = eval("document.body ? document.body.innerText.slice(0, 800) : ''");
        throw std::runtime_error("timed out waiting for: " + condition +
                                 "\npage: " + (page.is_string() ? std::string(page.as_string()) : ""));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  void screenshot(const std::string& file) {
    auto r = call("Page.captureScreenshot", {{"format", "png"}}).as_object();
    const std::string b64(r["data"].as_string());
    std::string png(boost::beast::detail::base64::decoded_size(b64.size()), '\0');
    auto [n, used] = boost::beast::detail::base64::decode(png.data(), b64.data(), b64.size());
    (void)used;
    png.resize(n);
    std::ofstream(file, std::ios::binary) << png;
  }

 private:
  /// The DevTools path of the page whose address starts with `url`.
  std::string page_target(const std::string& url) {
    for (int i = 0; i < 100; ++i) {
      auto list = http_request_plain(port_, "GET", "/json/list");
      boost::system::error_code ec;
      auto v = boost::json::parse(list.body, ec);
      if (!ec && v.is_array())
        for (const auto& t : v.as_array())
          if (t.at("type") == "page" && std::string(t.at("url").as_string()).rfind(url, 0) == 0) {
            std::string ws(t.at("webSocketDebuggerUrl").as_string());
            return ws.substr(ws.find('/', std::string("ws://").size()));
          }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw std::runtime_error("no page at " + url + " in chromium");
  }
  void attach(const std::string& ws_path) {
    ws_ = std::make_unique<boost::beast::websocket::stream<boost::beast::tcp_stream>>(ioc_);
    boost::asio::ip::tcp::resolver resolver(ioc_);
    ws_->next_layer().connect(resolver.resolve("127.0.0.1", std::to_string(port_)));
    ws_->handshake("127.0.0.1:" + std::to_string(port_), ws_path);
    call("Page.enable");
    call("Runtime.enable");
  }

  ChildProcess chromium_;
  boost::asio::io_context ioc_;
  int port_ = 0;
  std::string first_tab_;
  std::unique_ptr<boost::beast::websocket::stream<boost::beast::tcp_stream>> ws_;
  std::int64_t id_ = 0;
};

}  // namespace baton::testing
