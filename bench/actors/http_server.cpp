// HTTP entrypoint overhead on loopback, side by side with a raw Asio TCP echo of the same bytes
// (the reference: what the network stack alone costs per round trip).
//
//   build/bench/bench_http_server --benchmark_min_time=2
//
// BM_raw_tcp_echo_round_trip   one 80-byte request echoed back by a plain Asio server thread
// BM_http_keepalive_request    GET /health over one keep-alive connection (Beast client)
// BM_http_sse_chunks           a handler streams 1000 64-byte SSE chunks; time to read them all

#include "actors/http/http_server.hpp"

#include <benchmark/benchmark.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <thread>

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using asio::ip::tcp;
using namespace deepinfer::actors::http;

namespace {

constexpr std::string_view request_bytes = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bench\r\n\r\n";

void BM_raw_tcp_echo_round_trip(benchmark::State& state) {
  asio::io_context server_ioc;
  tcp::acceptor acceptor{server_ioc, {asio::ip::make_address("127.0.0.1"), 0}};
  std::thread server{[&] {
    tcp::socket s{server_ioc};
    acceptor.accept(s);
    s.set_option(tcp::no_delay{true});
    char buf[request_bytes.size()];
    boost::system::error_code ec;
    while (!ec) {
      asio::read(s, asio::buffer(buf), ec);
      if (!ec)
        asio::write(s, asio::buffer(buf), ec);
    }
  }};
  asio::io_context ioc;
  tcp::socket c{ioc};
  c.connect(acceptor.local_endpoint());
  c.set_option(tcp::no_delay{true});
  char reply[request_bytes.size()];
  for (auto _ : state) {
    asio::write(c, asio::buffer(request_bytes.data(), request_bytes.size()));
    asio::read(c, asio::buffer(reply));
  }
  c.close();
  server.join();
}
BENCHMARK(BM_raw_tcp_echo_round_trip)->UseRealTime();

http_server::config bench_config() {
  http_server::config cfg;
  cfg.port = 0;
  return cfg;
}

void BM_http_keepalive_request(benchmark::State& state) {
  router routes;
  routes.add("GET", "/health", [](http_request, std::shared_ptr<response_writer> w) {
    w->send_json(200, R"({"status":"ok"})");
  });
  http_server server{bench_config(), std::move(routes), std::make_shared<metrics_registry>()};
  if (server.start())
    return state.SkipWithError("start failed");
  asio::io_context ioc;
  tcp::socket c{ioc};
  c.connect({asio::ip::make_address("127.0.0.1"), server.port()});
  c.set_option(tcp::no_delay{true});
  boost::beast::flat_buffer buffer;
  for (auto _ : state) {
    asio::write(c, asio::buffer(request_bytes.data(), request_bytes.size()));
    bhttp::response<bhttp::string_body> res;
    bhttp::read(c, buffer, res);
    benchmark::DoNotOptimize(res.body().data());
  }
  server.stop(std::chrono::milliseconds{100});
}
BENCHMARK(BM_http_keepalive_request)->UseRealTime();

void BM_http_sse_chunks(benchmark::State& state) {
  constexpr int chunks = 1000;
  router routes;
  routes.add("GET", "/stream", [](http_request, std::shared_ptr<response_writer> w) {
    w->start_stream(200, "text/event-stream");
    for (int i = 0; i < chunks; ++i)
      w->write("data: {\"choices\":[{\"delta\":{\"content\":\"tok\"}}],\"i\":" + std::to_string(i % 10) + "}\n\n");
    w->finish();
  });
  http_server server{bench_config(), std::move(routes)};
  if (server.start())
    return state.SkipWithError("start failed");
  asio::io_context ioc;
  tcp::socket c{ioc};
  c.connect({asio::ip::make_address("127.0.0.1"), server.port()});
  boost::beast::flat_buffer buffer;
  std::string req = "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n";
  for (auto _ : state) {
    asio::write(c, asio::buffer(req));
    bhttp::response<bhttp::string_body> res;
    bhttp::read(c, buffer, res);
    benchmark::DoNotOptimize(res.body().data());
  }
  state.SetItemsProcessed(state.iterations() * chunks);
  server.stop(std::chrono::milliseconds{100});
}
BENCHMARK(BM_http_sse_chunks)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
