#include "actors/http/image_fetcher.hpp"

#include <limits>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "actors/http/fetch_url.hpp"
#include "recipe/base/thread_name.hpp"

namespace deepinfer::actors::http {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using kind = fetch_error::kind;

fetch_result failure(kind k, std::string message) {
  return fetch_error{k, std::move(message)};
}

bool is_redirect(unsigned status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/// One fetch's sockets and its deadline. The watchdog closes whatever is open when the deadline
/// passes, which ends the pending operation (every step then reports `timeout`). Lives on the
/// fetcher's one thread, so no step races another.
struct fetch_op {
  explicit fetch_op(asio::io_context& ioc) : resolver(ioc), watchdog(ioc) {}

  tcp::resolver resolver;
  asio::steady_timer watchdog;
  std::optional<beast::tcp_stream> plain;
  std::optional<beast::ssl_stream<beast::tcp_stream>> secure;
  bool timed_out = false;

  void expire() {
    timed_out = true;
    resolver.cancel();
    if (plain)
      plain->close();
    if (secure)
      beast::get_lowest_layer(*secure).close();
  }
};

/// One answered request: a redirect target, or the body.
struct hop_result {
  std::optional<std::string> location;
  fetch_result body = std::string{};
};

/// What a failed network step means: a timeout when the watchdog fired, else `what` and the
/// system's reason.
fetch_result step_failed(const fetch_op& op, const beast::error_code& ec, kind k, const std::string& what,
                         std::chrono::milliseconds limit) {
  if (op.timed_out)
    return failure(kind::timeout, "the fetch took longer than " + std::to_string(limit.count()) + " ms");
  return failure(k, what + ": " + ec.message());
}

/// GET `url` over `stream` (connected; for https, handshaken) and read the answer: a redirect's
/// Location without its body, or the body of a 2xx image answer under the size limit.
template <class Stream>
asio::awaitable<hop_result> exchange(Stream& stream, const fetch_op& op, const fetch_url& url,
                                     const image_fetcher::config& cfg) {
  hop_result out;
  beast::error_code ec;
  bhttp::request<bhttp::empty_body> req{bhttp::verb::get, url.target, 11};
  req.set(bhttp::field::host, url.host_header());
  req.set(bhttp::field::user_agent, cfg.user_agent);
  req.set(bhttp::field::accept, "image/png, image/jpeg, image/*;q=0.8");
  req.set(bhttp::field::connection, "close");
  co_await bhttp::async_write(stream, req, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    out.body = step_failed(op, ec, kind::unreachable, "sending the request failed", cfg.timeout);
    co_return out;
  }
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.header_limit(16 * 1024);
  // The size limit is checked once the status is known: a redirect's or an error page's body is
  // never read, so only an image answer can be "too large".
  // (Not boost::none: Beast 1.74 compares Content-Length with it as "greater than none" and
  // fails every header that has one.)
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  co_await bhttp::async_read_header(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    out.body = step_failed(op, ec, kind::unreachable, "reading the answer failed", cfg.timeout);
    co_return out;
  }
  const auto& head = parser.get();
  const unsigned status = head.result_int();
  if (is_redirect(status)) {
    out.location = std::string(head[bhttp::field::location]);
    co_return out;
  }
  if (status < 200 || status >= 300) {
    out.body = failure(kind::http_status, "the origin answered HTTP " + std::to_string(status) +
                                            (head.reason().empty() ? "" : " " + std::string(head.reason())));
    co_return out;
  }
  std::string type(head[bhttp::field::content_type]);
  for (auto& c : type)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (type.rfind("image/", 0) != 0) {
    out.body = failure(kind::not_image, "the origin answered Content-Type '" + std::string(head[bhttp::field::content_type]) +
                                          "', not an image");
    co_return out;
  }
  const auto limit = static_cast<uint64_t>(cfg.max_bytes);
  const std::string too_large = "the image is larger than " + std::to_string(cfg.max_bytes) + " bytes, the most accepted";
  if (auto n = parser.content_length(); n && *n > limit) {
    out.body = failure(kind::too_large, too_large + " (Content-Length " + std::to_string(*n) + ")");
    co_return out;
  }
  parser.body_limit(limit); // a chunked or close-delimited body is cut where it passes the limit
  co_await bhttp::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec == bhttp::error::body_limit) {
    out.body = failure(kind::too_large, too_large);
    co_return out;
  }
  if (ec) {
    out.body = step_failed(op, ec, kind::unreachable, "reading the image failed", cfg.timeout);
    co_return out;
  }
  out.body = std::move(parser.release().body());
  co_return out;
}

/// The whole fetch: each hop resolves, checks the addresses, connects, (for https) verifies the
/// certificate, and asks; redirects start the next hop.
asio::awaitable<fetch_result> run(std::shared_ptr<fetch_op> op, fetch_url url, const image_fetcher::config& cfg,
                                  asio::ssl::context& tls) {
  auto& ioc = static_cast<asio::io_context&>(op->resolver.get_executor().context());
  for (int hop = 0;; ++hop) {
    beast::error_code ec;
    auto found = co_await op->resolver.async_resolve(url.host, std::to_string(url.port),
                                                     asio::redirect_error(asio::use_awaitable, ec));
    if (ec)
      co_return step_failed(*op, ec, kind::unreachable, "cannot resolve '" + url.host + "'", cfg.timeout);
    std::vector<tcp::endpoint> endpoints;
    for (const auto& e : found)
      if (cfg.private_hosts == private_addresses::allow || !is_private_address(e.endpoint().address()))
        endpoints.push_back(e.endpoint());
    // Only the checked addresses are connected to, so a name cannot resolve to a public address
    // for the check and a private one for the connection.
    if (endpoints.empty())
      co_return failure(kind::refused_address, "'" + url.host + "' is a private or loopback address, which this server does not fetch from");
    op->plain.reset();
    op->secure.reset();
    hop_result answer;
    if (!url.tls) {
      op->plain.emplace(ioc);
      co_await op->plain->async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
      if (ec)
        co_return step_failed(*op, ec, kind::unreachable, "cannot connect to " + url.host_header(), cfg.timeout);
      answer = co_await exchange(*op->plain, *op, url, cfg);
    } else {
      op->secure.emplace(ioc, tls);
      auto& s = *op->secure;
      co_await beast::get_lowest_layer(s).async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
      if (ec)
        co_return step_failed(*op, ec, kind::unreachable, "cannot connect to " + url.host_header(), cfg.timeout);
      // SNI (for names only: RFC 6066 has no IP literals), and the name or address the
      // certificate must carry.
      beast::error_code not_ip;
      asio::ip::make_address(url.host, not_ip);
      if (not_ip && !SSL_set_tlsext_host_name(s.native_handle(), url.host.c_str()))
        co_return failure(kind::tls, "cannot set the TLS server name");
      s.set_verify_callback(asio::ssl::host_name_verification(url.host));
      co_await s.async_handshake(asio::ssl::stream_base::client, asio::redirect_error(asio::use_awaitable, ec));
      if (ec)
        co_return step_failed(*op, ec, kind::tls, "the TLS handshake with " + url.host_header() + " failed", cfg.timeout);
      answer = co_await exchange(s, *op, url, cfg);
    }
    if (!answer.location)
      co_return std::move(answer.body);
    if (hop >= cfg.max_redirects)
      co_return failure(kind::too_many_redirects, "more than " + std::to_string(cfg.max_redirects) + " redirects");
    auto next = fetch_url::resolve(url, *answer.location);
    if (!next)
      co_return failure(kind::too_many_redirects, "a redirect to '" + *answer.location + "', which is not an http(s) URL");
    url = std::move(*next);
  }
}

/// Runs the fetch and hands its result to `done` exactly once, whatever happens inside.
asio::awaitable<void> report(std::shared_ptr<fetch_op> op, fetch_url url, const image_fetcher::config& cfg,
                             asio::ssl::context& tls, std::function<void(fetch_result)> done) {
  std::optional<fetch_result> r;
  try {
    r.emplace(co_await run(op, std::move(url), cfg, tls));
  } catch (const std::exception& e) {
    r.emplace(failure(kind::unreachable, std::string("the fetch failed: ") + e.what()));
  }
  op->watchdog.cancel();
  done(std::move(*r));
}

} // namespace

struct image_fetcher::impl {
  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  asio::ssl::context tls{asio::ssl::context::tls_client};
  std::thread thread;
};

image_fetcher::image_fetcher(const config& cfg) : cfg_(cfg), impl_(std::make_unique<impl>()) {
  auto& tls = impl_->tls;
  tls.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                  asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  tls.set_verify_mode(asio::ssl::verify_peer);
  boost::system::error_code ec;
  if (cfg_.ca_file.empty())
    tls.set_default_verify_paths(ec);
  else
    tls.load_verify_file(cfg_.ca_file, ec);
  // A store that cannot be loaded leaves no CA trusted: every https fetch then fails its
  // certificate check (a 400 that says so), which is safe; http still works.
  impl_->thread = std::thread([this] {
    name_this_thread("http.fetch");
    impl_->ioc.run();
  });
}

image_fetcher::~image_fetcher() {
  impl_->work.reset();
  impl_->ioc.stop();
  if (impl_->thread.joinable())
    impl_->thread.join();
}

void image_fetcher::fetch(std::string url, std::function<void(fetch_result)> done) {
  auto parsed = fetch_url::parse(url);
  if (!parsed) {
    done(failure(kind::bad_url, "not an absolute http(s) URL this server can fetch"));
    return;
  }
  asio::post(impl_->ioc, [this, u = std::move(*parsed), done = std::move(done)]() mutable {
    auto op = std::make_shared<fetch_op>(impl_->ioc);
    op->watchdog.expires_after(cfg_.timeout);
    op->watchdog.async_wait([op](const beast::error_code& ec) {
      if (!ec)
        op->expire();
    });
    asio::co_spawn(impl_->ioc, report(op, std::move(u), cfg_, impl_->tls, std::move(done)), asio::detached);
  });
}

} // namespace deepinfer::actors::http
