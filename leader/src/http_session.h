// One HTTP connection: its requests in turn, each under its deadline,
// until it closes or becomes a worker's WebSocket (NodeServer's own;
// included only by node_server.cpp).
#pragma once

#include <spdlog/spdlog.h>

#include <optional>
#include <string>

#include "baton/base/json_text.h"
#include "session_context.h"
#include "worker_session.h"

namespace baton::leader::serving {

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
    parser_->header_limit(http_header_bytes_max);
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
    const bool probe = !websocket::is_upgrade(req) && counted_per_source(target);
    if (!websocket::is_upgrade(req) && (takes_credential(target) || probe))
      if (auto wait = (probe ? context_.readyz_gate : context_.gate).refused(address_)) {
        HttpResponse r{429,
                       "application/json",
                       std::string(probe ? "{\"code\":\"rate_limited\",\"message\":\"too many readiness checks from "
                                           "this address"
                                         : "{\"code\":\"auth_throttled\",\"message\":\"too many failed "
                                           "authentications from this address") +
                           "; retry in " + std::to_string(wait->count()) + " ms\"}",
                       {}};
        r.headers["Retry-After"] = std::to_string((wait->count() + 999) / 1000);
        return hold_then_refuse(std::move(r), std::min(*wait, context_.limits.auth_throttle_hold));
      }
    if (probe) context_.readyz_gate.failed(address_);  // counted, whatever it answers
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
    const bool from_memory = req.method() == http::verb::get &&
                             answered_from_memory(std::string_view(req.target().data(), req.target().size()));
    // The admin threads are a bounded queue: a request beyond it is answered
    // now, from this thread, instead of waiting behind the others.
    if (!from_memory && !enter_admin_queue()) return write(shed(), keep_alive);
    HttpRequest request;
    request.method = std::string(req.method_string());
    request.target = std::string(req.target());
    for (const auto& f : req) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request.headers[name] = std::string(f.value());
    }
    request.body = std::move(req.body());
    // Liveness and readiness read memory only: answered here, so that
    // neither a flood of them nor a full admin queue delays the other.
    if (from_memory) return write(respond(request), keep_alive);
    // Admin handlers may query the database: never on the I/O thread.
    asio::post(context_.admin, [self = shared_from_this(), request = std::move(request), keep_alive] {
      HttpResponse response = self->respond(request);
      self->context_.admin_queued.fetch_sub(1);
      if (response.status == 401) self->context_.gate.failed(self->address_);
      asio::post(self->stream_.get_executor(),
                 [self, response = std::move(response), keep_alive] { self->write(response, keep_alive); });
    });
  }
  /// The handlers' answer; a handler's exception is a 500, logged, on
  /// whichever thread answers (the I/O thread's too: it must not unwind).
  HttpResponse respond(const HttpRequest& request) {
    try {
      return context_.handlers.handle_http(request);
    } catch (const std::exception& e) {
      spdlog::error("http_handler_exception target={} error={}", json_quote(request.target), e.what());
      return HttpResponse{500, "application/json", "{\"code\":\"internal\",\"message\":\"internal error\"}", {}};
    }
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

}  // namespace baton::leader::serving
