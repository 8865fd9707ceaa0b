#include "actors/http/http_server.hpp"

#include "actors/http/connection.hpp"
#include "actors/log.hpp"
#include "recipe/base/assert.hpp"
#include "recipe/base/thread_name.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <thread>

namespace deepinfer::actors::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

server_context::admit server_context::enroll(const std::shared_ptr<connection>& c, uint64_t& id) {
  std::lock_guard guard{mutex};
  if (stopping)
    return admit::drop;
  auto how = admit::normal;
  if (open.size() >= cfg.max_connections) {
    // Make room: the connection idle longest goes (a flood of silent connections cannot lock
    // real clients out). Without one, this one may only ask for the health path.
    std::shared_ptr<connection> victim;
    int64_t oldest = 0;
    for (auto& [other_id, weak] : open)
      if (auto o = weak.lock();
          o && o->idle_since() != 0 && !o->evicting() && (!victim || o->idle_since() < oldest)) {
        victim = std::move(o);
        oldest = victim->idle_since();
      }
    if (victim && victim->claim_eviction())
      boost::asio::post(victim->executor(), [victim] { victim->evict(); });
    else if (open.size() >= cfg.max_connections + overflow_reserve)
      return admit::drop;
    else
      how = admit::overflow;
  }
  id = ++next_id;
  open.emplace(id, c);
  if (open_connections)
    open_connections->inc();
  return how;
}

void server_context::retire(uint64_t id) {
  std::lock_guard guard{mutex};
  if (open.erase(id) && open_connections)
    open_connections->dec();
  if (open.empty())
    all_closed.notify_all();
}

struct http_server::impl {
  std::shared_ptr<server_context> ctx = std::make_shared<server_context>();
  // Declared before the acceptor so the acceptor is destroyed first.
  std::shared_ptr<asio::io_context> ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::optional<tcp::acceptor> acceptor;
  std::optional<asio::steady_timer> accept_backoff; // on the acceptor's strand
  std::vector<std::thread> threads;
  std::atomic<uint16_t> port{0};
  std::mutex stop_mutex;
  enum class state { created, running, stopped } st = state::created;

  void accept();
  std::vector<std::shared_ptr<connection>> open_connections();
  bool wait_all_closed(std::chrono::steady_clock::time_point until);
};

void http_server::impl::accept() {
  acceptor->async_accept(asio::make_strand(*ioc), [this](boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor->is_open())
      return;
    if (ec) {
      // Typically EMFILE: retrying at once would spin, so wait for connections to close.
      log().warn("http accept failed: {}; retrying in 100 ms", ec.message());
      accept_backoff->expires_after(std::chrono::milliseconds{100});
      accept_backoff->async_wait([this](boost::system::error_code wait_ec) {
        if (!wait_ec && acceptor->is_open())
          accept();
      });
      return;
    }
    auto c = std::make_shared<connection>(std::move(socket), ctx);
    uint64_t id = 0;
    switch (ctx->enroll(c, id)) {
      case server_context::admit::overflow:
        c->set_overflow();
        [[fallthrough]];
      case server_context::admit::normal:
        asio::post(c->executor(), [c, id] { c->start(id); });
        break;
      case server_context::admit::drop:
        break; // closed with the socket, never read
    }
    accept();
  });
}

std::vector<std::shared_ptr<connection>> http_server::impl::open_connections() {
  std::vector<std::shared_ptr<connection>> out;
  std::lock_guard guard{ctx->mutex};
  for (auto& [id, weak] : ctx->open)
    if (auto c = weak.lock())
      out.push_back(std::move(c));
  return out;
}

bool http_server::impl::wait_all_closed(std::chrono::steady_clock::time_point until) {
  std::unique_lock lock{ctx->mutex};
  return ctx->all_closed.wait_until(lock, until, [&] { return ctx->open.empty(); });
}

http_server::http_server(config cfg, router routes, std::shared_ptr<metrics_registry> metrics)
  : impl_(std::make_unique<impl>()) {
  auto& ctx = *impl_->ctx;
  ctx.cfg = std::move(cfg);
  ctx.cfg.threads = std::max(1u, ctx.cfg.threads);
  ctx.cfg.max_connections = std::max<std::size_t>(1, ctx.cfg.max_connections);
  ctx.hosts.emplace(ctx.cfg.host, ctx.cfg.allowed_hosts);
  ctx.routes = std::move(routes);
  if (metrics) {
    ctx.requests = &metrics->add_counter("deepinfer_http_requests_total",
                                         "HTTP requests answered, by route pattern, method and status.",
                                         {"route", "method", "status"});
    ctx.latency = &metrics->add_histogram("deepinfer_http_request_duration_seconds",
                                          "HTTP request latency from the full request to the last response byte.",
                                          {"route", "method"}, metrics_registry::default_latency_buckets());
    ctx.open_connections =
      &metrics->add_gauge("deepinfer_http_open_connections", "Open HTTP client connections.").with();
    ctx.metrics = std::move(metrics);
  }
}

http_server::~http_server() {
  stop(std::chrono::milliseconds{0});
}

std::error_code http_server::start() {
  std::lock_guard guard{impl_->stop_mutex};
  if (impl_->st != impl::state::created)
    return std::make_error_code(std::errc::operation_not_permitted);
  auto& cfg = impl_->ctx->cfg;
  impl_->ioc = std::make_shared<asio::io_context>(static_cast<int>(cfg.threads));
  impl_->ctx->ioc = impl_->ioc;
  boost::system::error_code ec;
  tcp::endpoint endpoint;
  auto address = asio::ip::make_address(cfg.host, ec);
  if (!ec) {
    endpoint = tcp::endpoint{address, cfg.port};
  } else {
    tcp::resolver resolver{*impl_->ioc};
    auto results = resolver.resolve(cfg.host, std::to_string(cfg.port), ec);
    if (ec)
      return ec;
    if (results.empty())
      return std::make_error_code(std::errc::address_not_available);
    endpoint = *results.begin();
  }
  auto& acc = impl_->acceptor.emplace(asio::make_strand(*impl_->ioc));
  if (acc.open(endpoint.protocol(), ec) || acc.set_option(asio::socket_base::reuse_address{true}, ec) ||
      acc.bind(endpoint, ec) || acc.listen(asio::socket_base::max_listen_connections, ec)) {
    log().error("http cannot listen on {}:{}: {}", cfg.host, cfg.port, ec.message());
    impl_->acceptor.reset();
    return ec;
  }
  impl_->port = acc.local_endpoint(ec).port();
  impl_->accept_backoff.emplace(acc.get_executor());
  impl_->work.emplace(impl_->ioc->get_executor());
  impl_->accept();
  for (unsigned i = 0; i < cfg.threads; ++i) {
    impl_->threads.emplace_back([ioc = impl_->ioc] {
      name_this_thread("http.io");
      for (;;) {
        try {
          ioc->run();
          return;
        } catch (const std::exception& e) {
          log().error("http I/O thread caught: {}", e.what());
        }
      }
    });
  }
  impl_->st = impl::state::running;
  log().info("http listening on {}:{} threads={}", cfg.host, impl_->port.load(), cfg.threads);
  return {};
}

uint16_t http_server::port() const {
  return impl_->port;
}

void http_server::stop(std::chrono::milliseconds deadline) {
  std::lock_guard guard{impl_->stop_mutex};
  if (impl_->st != impl::state::running)
    return;
  impl_->st = impl::state::stopped;
  for (const auto& t : impl_->threads) {
    DEEPINFER_ASSERT(t.get_id() != std::this_thread::get_id(),
                     "http_server::stop called on its own I/O thread; it would join itself");
  }
  auto until = std::chrono::steady_clock::now() + deadline;
  // 1. Stop accepting; connections accepted from here on are dropped by enroll().
  {
    std::lock_guard lock{impl_->ctx->mutex};
    impl_->ctx->stopping = true;
  }
  asio::post(impl_->acceptor->get_executor(), [this] {
    boost::system::error_code ec;
    impl_->acceptor->close(ec);
    impl_->accept_backoff->cancel();
  });
  // 2. Close idle connections; busy ones close after their response.
  for (auto& c : impl_->open_connections())
    asio::post(c->executor(), [c] { c->begin_shutdown(); });
  // 3. Past the deadline, cut what is left (their on_disconnect callbacks fire).
  if (!impl_->wait_all_closed(until)) {
    auto left = impl_->open_connections();
    log().warn("http stop deadline passed; closing {} connections", left.size());
    for (auto& c : left)
      asio::post(c->executor(), [c] { c->force_close(); });
    left.clear();
    impl_->wait_all_closed(std::chrono::steady_clock::now() + std::chrono::milliseconds{100});
  }
  // 4. Join; handlers still queued are destroyed with the io_context, never run.
  impl_->work.reset();
  impl_->ioc->stop();
  for (auto& t : impl_->threads)
    t.join();
  impl_->threads.clear();
  boost::system::error_code ec;
  impl_->acceptor->close(ec); // in case the posted close never ran: no more kernel-side accepts
  log().info("http stopped port={}", impl_->port.load());
}

} // namespace deepinfer::actors::http
