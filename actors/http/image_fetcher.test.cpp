#include "actors/http/image_fetcher.hpp"

#include "actors/http/fetch_url.hpp"
#include "actors/http/http_test_client.hpp"

#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/test/unit_test.hpp>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <future>

using namespace deepinfer::actors::http;
using namespace deepinfer::actors::http::testing;
using namespace std::chrono_literals;
using kind = fetch_error::kind;

namespace {

const std::string png_bytes = std::string("\x89PNG\r\n\x1a\n", 8) + std::string(1000, 'p');

/// An origin on loopback (the project's own Beast server) with one route per behaviour.
struct origin {
  server_fixture f;
  std::mutex held_mutex;
  std::vector<std::shared_ptr<response_writer>> held; // answers that never come (until the end)

  origin() {
    f.start({}, [this](router& r) {
      auto send = [](unsigned status, std::string type, std::string body,
                     std::vector<std::pair<std::string, std::string>> headers = {}) {
        return [=](http_request, std::shared_ptr<response_writer> w) {
          http_response res;
          res.status = status;
          res.content_type = type;
          res.body = body;
          res.headers = headers;
          w->send(std::move(res));
        };
      };
      r.add("GET", "/img/a.png", send(200, "image/png", png_bytes));
      r.add("GET", "/img/moved", send(302, "text/html", "moved", {{"Location", "a.png"}}));
      r.add("GET", "/hop1", send(301, "text/html", "", {{"Location", "/img/moved"}}));
      r.add("GET", "/loop", send(307, "text/html", "", {{"Location", "/loop"}}));
      r.add("GET", "/elsewhere", send(302, "text/html", "", {{"Location", "ftp://example.com/a.png"}}));
      r.add("GET", "/page", send(200, "text/html; charset=utf-8", "<html></html>"));
      r.add("GET", "/big", send(200, "image/png", std::string(200000, 'x')));
      r.add("GET", "/stream", [](http_request, std::shared_ptr<response_writer> w) {
        // Chunked, no Content-Length: the limit must cut it as it is read.
        w->start_stream(200, "image/png");
        for (int i = 0; i < 4; ++i)
          w->write(std::string(64 * 1024, 's'));
        w->finish();
      });
      r.add("GET", "/stall", [this](http_request, std::shared_ptr<response_writer> w) {
        std::lock_guard guard{held_mutex};
        held.push_back(std::move(w));
      });
    });
  }
  ~origin() {
    std::lock_guard guard{held_mutex};
    for (auto& w : held)
      w->send_json(503, "{}");
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(f.server->port()) + path; }
};

/// A self-signed certificate for IP 127.0.0.1 (EC P-256, one hour), PEM: certificate and key.
std::pair<std::string, std::string> self_signed_localhost() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -60);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("deepinfer test"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, x, x, nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_subject_alt_name, "IP:127.0.0.1"}, std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, nid, value);
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(x, key, EVP_sha256());
  auto pem = [](auto write) {
    BIO* bio = BIO_new(BIO_s_mem());
    write(bio);
    char* data = nullptr;
    const long n = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<std::size_t>(n));
    BIO_free(bio);
    return out;
  };
  auto cert = pem([x](BIO* b) { PEM_write_bio_X509(b, x); });
  auto pkey = pem([key](BIO* b) { PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr); });
  X509_free(x);
  EVP_PKEY_free(key);
  return {cert, pkey};
}

/// An https origin on 127.0.0.1 with `cert`: every connection that completes the handshake gets
/// one PNG answer.
struct tls_origin {
  boost::asio::io_context ioc;
  boost::asio::ssl::context tls{boost::asio::ssl::context::tls_server};
  boost::asio::ip::tcp::acceptor acceptor{ioc, {boost::asio::ip::make_address("127.0.0.1"), 0}};
  std::thread thread;
  std::atomic<bool> stopping{false};

  explicit tls_origin(const std::pair<std::string, std::string>& cert) {
    tls.use_certificate_chain(boost::asio::buffer(cert.first));
    tls.use_private_key(boost::asio::buffer(cert.second), boost::asio::ssl::context::pem);
    thread = std::thread([this] {
      for (;;) {
        boost::system::error_code ec;
        boost::asio::ip::tcp::socket sock{ioc};
        acceptor.accept(sock, ec);
        if (ec || stopping)
          return;
        boost::asio::ssl::stream<boost::asio::ip::tcp::socket> s{std::move(sock), tls};
        s.handshake(boost::asio::ssl::stream_base::server, ec);
        if (ec)
          continue; // the client refused the certificate
        boost::asio::streambuf req;
        boost::asio::read_until(s, req, "\r\n\r\n", ec);
        const std::string res = "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: " +
                                std::to_string(png_bytes.size()) + "\r\nConnection: close\r\n\r\n" + png_bytes;
        boost::asio::write(s, boost::asio::buffer(res), ec);
        s.shutdown(ec);
      }
    });
  }
  ~tls_origin() {
    stopping = true;
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket poke{ioc};
    poke.connect(acceptor.local_endpoint(), ec); // wakes the blocking accept
    thread.join();
  }
  uint16_t port() const { return acceptor.local_endpoint().port(); }
};

image_fetcher::config small_limits() {
  image_fetcher::config cfg;
  cfg.max_bytes = 100000;
  cfg.timeout = 1500ms;
  cfg.max_redirects = 3;
  return cfg;
}

/// Fetches `url` and waits for the answer (the fetcher answers on its own thread).
fetch_result fetch_now(image_fetcher& fetcher, const std::string& url) {
  std::promise<fetch_result> p;
  auto answer = p.get_future();
  fetcher.fetch(url, [&p](fetch_result r) { p.set_value(std::move(r)); });
  BOOST_REQUIRE(answer.wait_for(30s) == std::future_status::ready);
  return answer.get();
}

void require_error(const fetch_result& r, kind k, const std::string& needle) {
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(static_cast<int>(r.error().what) == static_cast<int>(k), r.error().message);
  BOOST_TEST(r.error().message.find(needle) != std::string::npos, r.error().message);
}

} // namespace

BOOST_AUTO_TEST_SUITE(image_fetcher_suite)

BOOST_AUTO_TEST_CASE(fetches_an_image_body_off_the_callers_thread) {
  origin o;
  image_fetcher fetcher{small_limits()};
  std::promise<std::thread::id> where;
  auto r = fetch_now(fetcher, o.url("/img/a.png"));
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(*r == png_bytes);
  fetcher.fetch(o.url("/img/a.png"), [&where](fetch_result) { where.set_value(std::this_thread::get_id()); });
  BOOST_TEST((where.get_future().get() != std::this_thread::get_id()));
}

BOOST_AUTO_TEST_CASE(follows_relative_redirects_up_to_the_limit) {
  origin o;
  image_fetcher fetcher{small_limits()};
  // 301 /hop1 -> /img/moved, 302 -> a.png (relative to /img/)
  auto r = fetch_now(fetcher, o.url("/hop1"));
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(*r == png_bytes);
  require_error(fetch_now(fetcher, o.url("/loop")), kind::too_many_redirects, "more than 3 redirects");
  require_error(fetch_now(fetcher, o.url("/elsewhere")), kind::too_many_redirects, "not an http(s) URL");
  auto none = small_limits();
  none.max_redirects = 0;
  image_fetcher strict{none};
  require_error(fetch_now(strict, o.url("/img/moved")), kind::too_many_redirects, "more than 0 redirects");
}

BOOST_AUTO_TEST_CASE(a_body_over_the_size_cap_is_refused_by_content_length_and_as_read) {
  origin o;
  image_fetcher fetcher{small_limits()};
  require_error(fetch_now(fetcher, o.url("/big")), kind::too_large, "Content-Length 200000");
  require_error(fetch_now(fetcher, o.url("/stream")), kind::too_large, "larger than 100000 bytes");
  auto roomy = small_limits();
  roomy.max_bytes = 1 << 20;
  image_fetcher big{roomy};
  auto r = fetch_now(big, o.url("/stream"));
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->size() == 4u * 64 * 1024);
}

BOOST_AUTO_TEST_CASE(a_stalled_origin_times_out_at_the_limit) {
  origin o;
  image_fetcher fetcher{small_limits()};
  const auto t0 = std::chrono::steady_clock::now();
  require_error(fetch_now(fetcher, o.url("/stall")), kind::timeout, "longer than 1500 ms");
  const auto ms = elapsed_ms(t0);
  BOOST_TEST(ms >= 1400);
  BOOST_TEST(ms < 10000); // a loaded machine is slow, never unbounded
  // The fetcher still works after a timeout.
  BOOST_TEST(fetch_now(fetcher, o.url("/img/a.png")).has_value());
}

BOOST_AUTO_TEST_CASE(non_image_content_types_and_error_statuses_are_refused) {
  origin o;
  image_fetcher fetcher{small_limits()};
  require_error(fetch_now(fetcher, o.url("/page")), kind::not_image, "text/html");
  require_error(fetch_now(fetcher, o.url("/nope.png")), kind::http_status, "HTTP 404");
}

BOOST_AUTO_TEST_CASE(loopback_is_fetched_by_default_and_refused_when_the_switch_says_so) {
  origin o;
  auto cfg = small_limits();
  cfg.private_hosts = private_addresses::refuse;
  image_fetcher fetcher{cfg};
  require_error(fetch_now(fetcher, o.url("/img/a.png")), kind::refused_address, "private or loopback");
  // A redirect is checked at every hop too: the first hop here is already loopback.
  require_error(fetch_now(fetcher, "http://localhost:" + std::to_string(o.f.server->port()) + "/hop1"),
                kind::refused_address, "'localhost'");
}

BOOST_AUTO_TEST_CASE(unreachable_origins_bad_urls_and_failed_tls_are_errors) {
  origin o;
  image_fetcher fetcher{small_limits()};
  uint16_t closed = 0;
  {
    // A port nobody listens on any more.
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::acceptor a{ioc, {boost::asio::ip::make_address("127.0.0.1"), 0}};
    closed = a.local_endpoint().port();
  }
  require_error(fetch_now(fetcher, "http://127.0.0.1:" + std::to_string(closed) + "/a.png"), kind::unreachable,
                "cannot connect");
  require_error(fetch_now(fetcher, "ftp://127.0.0.1/a.png"), kind::bad_url, "http(s)");
  require_error(fetch_now(fetcher, "http://user:pw@127.0.0.1/a.png"), kind::bad_url, "http(s)");
  // https to a plain-HTTP origin: the handshake fails, nothing is fetched.
  require_error(fetch_now(fetcher, "https://127.0.0.1:" + std::to_string(o.f.server->port()) + "/img/a.png"),
                kind::tls, "TLS handshake");
}

BOOST_AUTO_TEST_CASE(https_verifies_the_certificate_against_the_ca_store_and_the_address) {
  const auto cert = self_signed_localhost();
  tls_origin o{cert};
  const auto url = "https://127.0.0.1:" + std::to_string(o.port()) + "/a.png";
  // The system store does not trust a self-signed certificate.
  image_fetcher system{small_limits()};
  require_error(fetch_now(system, url), kind::tls, "certificate verify failed");
  // Trusted through fetch_ca_file: fetched.
  const auto ca = std::filesystem::temp_directory_path() / ("deepinfer-fetch-ca-" + std::to_string(::getpid()) + ".pem");
  std::ofstream(ca) << cert.first;
  auto cfg = small_limits();
  cfg.ca_file = ca.string();
  image_fetcher trusting{cfg};
  auto r = fetch_now(trusting, url);
  BOOST_TEST(r.has_value(), (r ? "" : r.error().message));
  if (r)
    BOOST_TEST(*r == png_bytes);
  // The same certificate for another name (it names 127.0.0.1 only): refused.
  require_error(fetch_now(trusting, "https://localhost:" + std::to_string(o.port()) + "/a.png"), kind::tls,
                "TLS handshake");
  std::filesystem::remove(ca);
}

BOOST_AUTO_TEST_CASE(urls_parse_and_redirects_resolve_against_their_base) {
  auto u = fetch_url::parse("HTTPS://Example.COM:8443/a/b.png?x=1#frag");
  BOOST_REQUIRE(u.has_value());
  BOOST_TEST(u->tls);
  BOOST_TEST(u->host == "example.com");
  BOOST_TEST(u->port == 8443);
  BOOST_TEST(u->target == "/a/b.png?x=1");
  BOOST_TEST(u->host_header() == "example.com:8443");
  auto v6 = fetch_url::parse("http://[::1]/x");
  BOOST_REQUIRE(v6.has_value());
  BOOST_TEST(v6->host == "::1");
  BOOST_TEST(v6->host_header() == "[::1]");
  BOOST_TEST(fetch_url::parse("http://h?q")->target == "/?q");
  for (auto bad : {"http://", "http://:80/", "http://h:0/", "http://h:99999/", "http://h/a b", "http://h/\r\nX: y",
                   "data:image/png;base64,AA", "http://[::1/x"})
    BOOST_TEST(!fetch_url::parse(bad).has_value(), bad);
  auto base = *fetch_url::parse("http://h:81/dir/page.png?q=1");
  BOOST_TEST(fetch_url::resolve(base, "other.png")->str() == "http://h:81/dir/other.png");
  BOOST_TEST(fetch_url::resolve(base, "/root.png")->str() == "http://h:81/root.png");
  BOOST_TEST(fetch_url::resolve(base, "//cdn.example/x.png")->str() == "http://cdn.example/x.png");
  BOOST_TEST(fetch_url::resolve(base, "https://s.example/y.png")->str() == "https://s.example/y.png");
  BOOST_TEST(!fetch_url::resolve(base, "file:///etc/passwd").has_value());
  BOOST_TEST(!fetch_url::resolve(base, "").has_value());
}

BOOST_AUTO_TEST_CASE(private_addresses_are_recognised) {
  using boost::asio::ip::make_address;
  for (auto a : {"127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "0.0.0.0",
                 "100.64.0.1", "224.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fd00::1", "ff02::1",
                 "::ffff:10.0.0.1"})
    BOOST_TEST(is_private_address(make_address(a)), a);
  for (auto a : {"8.8.8.8", "172.32.0.1", "192.169.0.1", "100.128.0.1", "2001:4860:4860::8888", "::ffff:8.8.8.8"})
    BOOST_TEST(!is_private_address(make_address(a)), a);
}

BOOST_AUTO_TEST_SUITE_END()
