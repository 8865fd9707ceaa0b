#include "actors/http/connection.hpp"

#include "actors/http/connection_writer.hpp"
#include "actors/http/openai_error.hpp"
#include "actors/log.hpp"

#include <boost/asio/post.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <fmt/format.h>

namespace deepinfer::actors::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {

// A client pipelining more than this while a response is pending is paused (TCP backpressure).
constexpr std::size_t watch_limit = 64 * 1024;
constexpr auto linger_timeout = std::chrono::milliseconds{1000};

std::string to_string(beast::string_view s) {
  return {s.data(), s.size()};
}

} // namespace

connection::connection(asio::ip::tcp::socket socket, std::shared_ptr<server_context> ctx)
  : socket_(std::move(socket)), timer_(socket_.get_executor()), ctx_(std::move(ctx)) {
  // nop
}

connection::~connection() {
  if (enrolled_ && phase_ != phase::closed)
    ctx_->retire(id_);
}

void connection::start(uint64_t id) {
  id_ = id;
  enrolled_ = true;
  beast::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay{true}, ec); // SSE chunks must leave at once
  auto ep = socket_.remote_endpoint(ec);
  if (!ec)
    remote_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  read_header();
}

void connection::set_idle(bool idle) {
  idle_since_.store(idle ? std::chrono::steady_clock::now().time_since_epoch().count() : 0, std::memory_order_relaxed);
}

void connection::read_header() {
  if (shutdown_)
    return close();
  if (buffer_.size() == 0)
    return wait_for_request();
  set_idle(false);
  phase_ = phase::reading;
  first_byte_ = std::chrono::steady_clock::now();
  in_body_ = false;
  parser_.emplace();
  parser_->body_limit(ctx_->cfg.body_limit_bytes);
  parser_->header_limit(static_cast<std::uint32_t>(ctx_->cfg.header_limit_bytes));
  arm_timer(ctx_->cfg.header_timeout);
  bhttp::async_read_header(socket_, buffer_, *parser_,
                           [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

void connection::wait_for_request() {
  // Idle until the first byte of the next request; the header timeout counts from there.
  phase_ = phase::idle;
  set_idle(true);
  arm_timer(ctx_->cfg.idle_timeout);
  if (watching_)
    return; // the read in flight brings it
  watching_ = true;
  socket_.async_read_some(buffer_.prepare(16 * 1024), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
    self->on_watch(ec, n);
  });
}

void connection::evict() {
  if (phase_ != phase::idle || buffer_.size() > 0) {
    evicting_ = false; // it got busy meanwhile
    return;
  }
  log().debug("http conn={} closed to make room at the connection cap", id_);
  close();
}

void connection::on_header(beast::error_code ec) {
  if (ec)
    return on_read_error(ec);
  timed_out_ = false; // a timer that fired as the header completed cancelled nothing
  if (parser_->is_done())
    return dispatch();
  in_body_ = true;
  arm_timer(ctx_->cfg.body_timeout);
  // curl and others wait for an interim 100 before sending a large body.
  auto expect = parser_->get()[bhttp::field::expect];
  if (beast::iequals(expect, "100-continue"))
    queue("HTTP/1.1 100 Continue\r\n\r\n");
  bhttp::async_read(socket_, buffer_, *parser_,
                    [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
}

void connection::on_body(beast::error_code ec) {
  if (ec)
    return on_read_error(ec);
  dispatch();
}

void connection::on_read_error(beast::error_code ec) {
  if (phase_ == phase::closed)
    return;
  if (std::exchange(timed_out_, false)) {
    auto secs = [](std::chrono::milliseconds d) { return fmt::format("{:g}", static_cast<double>(d.count()) / 1000); };
    if (in_body_) {
      const auto left = parser_ && parser_->content_length_remaining() ? *parser_->content_length_remaining() : 0;
      return reply_error(408, "the request body did not arrive within " + secs(ctx_->cfg.body_timeout) + " s (" +
                                std::to_string(left) + " bytes still missing); send it without pauses",
                         "request_timeout");
    }
    return reply_error(408, "the request header did not arrive within " + secs(ctx_->cfg.header_timeout) +
                              " s of its first byte; send it without pauses",
                       "request_timeout");
  }
  if (ec == bhttp::error::body_limit)
    return reply_error(413, "request body exceeds " + std::to_string(ctx_->cfg.body_limit_bytes) + " bytes",
                       "payload_too_large");
  if (ec == bhttp::error::header_limit)
    return reply_error(431, "request header block too large", "header_too_large");
  bool parse_error = ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
                     ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
  if (parse_error)
    return reply_error(400, "malformed HTTP request: " + ec.message(), "bad_request");
  // End of stream between requests, reset, or our timer closing a slow client.
  log().debug("http conn={} closed while reading: {}", id_, ec.message());
  close();
}

std::string connection::error_body(unsigned status, std::string_view message, std::string_view code) const {
  return ctx_->routes.error_body(error_path_, status, message, code);
}

void connection::reply_error(unsigned status, std::string_view message, std::string_view code) {
  ++seq_;
  phase_ = phase::handling;
  reply_ = reply::none;
  keep_alive_ = false;
  linger_ = true; // the rest of the request may still be arriving
  version_ = 11;
  route_ = "invalid";
  method_ = "";
  head_only_ = false;
  if (!parser_ || parser_->get().target().empty()) {
    // Beast parses the request line with the whole header: for a stalled or oversized header,
    // read the path off the raw bytes, so the answer still comes in its route's shape.
    error_path_.clear();
    std::string_view raw{static_cast<const char*>(buffer_.data().data()), std::min<std::size_t>(buffer_.size(), 8192)};
    raw = raw.substr(0, raw.find("\r\n"));
    if (auto sp = raw.find(' '); sp != std::string_view::npos) {
      auto target = raw.substr(sp + 1);
      target = target.substr(0, target.find(' '));
      error_path_ = std::string{target.substr(0, target.find('?'))};
    }
  }
  if (parser_ && !parser_->get().target().empty()) {
    // The request line was parsed (a 413 is detected once the whole header is in): label it
    // like the request it is, e.g. 413 on /v1/chat/completions.
    const auto& h = parser_->get();
    method_ = h.method() == bhttp::verb::unknown ? "other" : to_string(h.method_string());
    head_only_ = h.method() == bhttp::verb::head;
    auto target = to_string(h.target());
    error_path_ = target.substr(0, target.find('?'));
    auto m = ctx_->routes.find(method_, error_path_);
    route_ = m.result == router::outcome::found ? m.route : "unmatched";
  }
  started_ = std::chrono::steady_clock::now();
  ++timer_gen_;
  timer_.cancel();
  http_response r;
  r.status = status;
  r.body = error_body(status, message, code);
  send(seq_, std::move(r));
}

bool connection::precheck(const http_request& req) {
  // 1. DNS rebinding: only the names this server answers to.
  if (auto host = req.header("host"); !ctx_->hosts->allows(host)) {
    keep_alive_ = false;
    http_response r;
    r.status = 403;
    r.body = error_body(403, ctx_->hosts->explain(*host), "host_not_allowed");
    send(seq_, std::move(r));
    return true;
  }
  // 2. Over the connection cap: the health path only.
  if (overflow_ && req.path != ctx_->cfg.health_path) {
    http_response r;
    r.status = 503;
    r.body = error_body(503, "the server has " + std::to_string(ctx_->cfg.max_connections) +
                               " connections open, its limit; retry shortly, or reuse a connection (keep-alive)",
                        "too_many_connections");
    r.headers.emplace_back("Retry-After", "1");
    send(seq_, std::move(r));
    return true;
  }
  // 3. CORS, only for configured origins: their preflight is answered here.
  auto& origins = ctx_->cfg.cors_origins;
  if (auto origin = req.header("origin"); origin && !origins.empty()) {
    bool any = std::find(origins.begin(), origins.end(), "*") != origins.end();
    if (any || std::find(origins.begin(), origins.end(), *origin) != origins.end())
      cors_origin_ = std::string{*origin};
    if (!cors_origin_.empty() && req.method == "OPTIONS" && req.header("access-control-request-method")) {
      http_response r;
      r.status = 204;
      r.content_type.clear();
      r.headers = {{"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
                   {"Access-Control-Allow-Headers",
                    std::string{req.header("access-control-request-headers").value_or("content-type")}},
                   {"Access-Control-Max-Age", "600"}};
      send(seq_, std::move(r));
      return true;
    }
  }
  return false;
}

void connection::dispatch() {
  timed_out_ = false;
  ++timer_gen_;
  timer_.cancel();
  ++seq_;
  phase_ = phase::handling;
  reply_ = reply::none;
  aborted_ = false;
  started_ = std::chrono::steady_clock::now();
  auto msg = parser_->release();
  parser_.reset();

  http_request req;
  req.method = to_string(msg.method_string());
  req.target = to_string(msg.target());
  // The absolute form (`GET http://host/v1/models`, RFC 9112 3.2.2: a server must accept it,
  // some proxies send it): the route is its path.
  if (req.target.starts_with("http://") || req.target.starts_with("https://")) {
    const auto slash = req.target.find('/', req.target.find("://") + 3);
    req.target = slash == std::string::npos ? std::string{"/"} : req.target.substr(slash);
  }
  auto q = req.target.find('?');
  req.path = req.target.substr(0, q);
  if (q != std::string::npos)
    req.query = req.target.substr(q + 1);
  for (const auto& f : msg)
    req.headers.emplace_back(to_string(f.name_string()), to_string(f.value()));
  req.body = std::move(msg.body());
  req.version = msg.version();
  req.remote = remote_;
  req.first_byte = first_byte_;
  req.dispatched = started_;
  version_ = msg.version();
  head_only_ = msg.method() == bhttp::verb::head;
  keep_alive_ = msg.keep_alive() && !shutdown_ && !overflow_;
  linger_ = false;
  error_path_ = req.path;
  cors_origin_.clear();

  auto m = ctx_->routes.find(req.method, req.path);
  // Bounded label values: unknown paths and methods must not blow up the metrics.
  route_ = m.result == router::outcome::found ? m.route : "unmatched";
  method_ = msg.method() == bhttp::verb::unknown ? "other" : req.method;
  req.route = m.route;
  log().debug("http conn={} req={} {} {}", id_, seq_, req.method, req.target);

  watch();
  if (precheck(req))
    return;
  auto writer = std::make_shared<connection_writer>(ctx_->ioc.lock(), shared_from_this(), seq_);
  switch (m.result) {
    case router::outcome::found:
      try {
        (*m.fn)(std::move(req), writer);
      } catch (const std::exception& e) {
        log().error("http conn={} req={} handler threw: {}", id_, seq_, e.what());
        http_response r;
        r.status = 500;
        r.body = error_body(500, std::string{"internal error: "} + e.what(), "internal_error");
        send(seq_, std::move(r));
      }
      break;
    case router::outcome::not_found: {
      http_response r;
      r.status = 404;
      r.body = error_body(404, "Invalid URL (" + req.method + " " + req.path + ")", "not_found");
      writer->send(std::move(r));
      break;
    }
    case router::outcome::method_not_allowed: {
      http_response r;
      r.status = 405;
      r.body = error_body(405, "Method " + req.method + " not allowed on " + req.path, "method_not_allowed");
      r.headers.emplace_back("Allow", m.allow);
      writer->send(std::move(r));
      break;
    }
  }
}

void connection::watch() {
  // A read while the handler works is how a disconnect is noticed; it also buffers pipelined
  // requests, which are parsed after the current response.
  if (watching_ || phase_ == phase::closed || buffer_.size() >= watch_limit)
    return;
  watching_ = true;
  socket_.async_read_some(buffer_.prepare(16 * 1024), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
    self->on_watch(ec, n);
  });
}

void connection::on_watch(beast::error_code ec, std::size_t n) {
  watching_ = false;
  if (phase_ == phase::closed)
    return;
  // operation_aborted while idle is response_done() cancelling the watch on purpose.
  if (ec && !(ec == asio::error::operation_aborted && phase_ == phase::idle)) {
    log().debug("http conn={} peer gone: {}", id_, ec.message());
    return close();
  }
  buffer_.commit(n);
  if (phase_ == phase::handling)
    watch();
  else if (phase_ == phase::idle)
    read_header();
}

void connection::arm_timer(std::chrono::milliseconds after) {
  auto gen = ++timer_gen_;
  timer_.expires_after(after);
  timer_.async_wait([self = shared_from_this(), gen](beast::error_code ec) {
    if (ec || gen != self->timer_gen_ || self->phase_ == phase::handling || self->phase_ == phase::closed)
      return;
    log().debug("http conn={} timed out", self->id_);
    if (self->phase_ == phase::reading) {
      // A stalled header or body: stop the read in flight; its handler answers 408.
      self->timed_out_ = true;
      beast::error_code cancel_ec;
      self->socket_.cancel(cancel_ec);
      return;
    }
    self->close(); // idle past the idle timeout, or lingering
  });
}

void connection::response_done() {
  record(status_);
  phase_ = phase::idle;
  on_disconnect_.clear();
  cors_origin_.clear();
  if (!keep_alive_ || shutdown_ || overflow_)
    return linger_ ? linger() : close();
  if (watching_ && buffer_.size() > 0) {
    beast::error_code ec;
    socket_.cancel(ec); // a pipelined request is buffered: stop the watch, on_watch parses it
    return;
  }
  read_header(); // parses what is buffered, or waits for the next request
}

void connection::linger() {
  // Closing with unread input makes the kernel send RST, which can destroy the error response
  // before the client reads it; so send FIN, drain input until EOF or a short timeout, then close.
  phase_ = phase::lingering;
  beast::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  arm_timer(linger_timeout);
  drain();
}

void connection::drain() {
  buffer_.clear();
  socket_.async_read_some(buffer_.prepare(16 * 1024), [self = shared_from_this()](beast::error_code ec, std::size_t) {
    if (self->phase_ != phase::lingering)
      return;
    if (ec)
      return self->close();
    self->drain();
  });
}

void connection::close() {
  if (phase_ == phase::closed)
    return;
  bool cut_short = phase_ == phase::handling && reply_ != reply::complete;
  phase_ = phase::closed;
  set_idle(false);
  ++timer_gen_;
  timer_.cancel();
  beast::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  if (cut_short) {
    aborted_ = true;
    record(499); // nginx's "client closed request"
    auto callbacks = std::move(on_disconnect_);
    on_disconnect_.clear();
    for (auto& cb : callbacks) {
      try {
        cb();
      } catch (const std::exception& e) {
        log().error("http conn={} on_disconnect callback threw: {}", id_, e.what());
      }
    }
  }
  if (enrolled_)
    ctx_->retire(id_);
}

void connection::record(unsigned status) {
  auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  log().debug("http conn={} req={} status={} ms={:.3f}", id_, seq_, status, seconds * 1e3);
  if (!ctx_->requests)
    return;
  ctx_->requests->with({route_, method_, std::to_string(status)}).inc();
  ctx_->latency->with({route_, method_}).observe(seconds);
}

} // namespace deepinfer::actors::http
