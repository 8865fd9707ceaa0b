#pragma once

#include "actors/http/http_server.hpp"
#include "actors/http/request_checks.hpp"
#include "actors/http/response_writer.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace deepinfer::actors::http {

class connection;

/// Internal: what an `http_server` shares with its connections. It owns neither the io_context
/// nor the connections, so no reference cycle keeps them alive after the server is gone.
struct server_context {
  http_server::config cfg;
  router routes;
  std::optional<host_policy> hosts; // made from cfg at construction
  /// Connections over the cap that may still ask for the health path.
  static constexpr std::size_t overflow_reserve = 32;
  std::shared_ptr<metrics_registry> metrics; // keeps the families below alive
  metrics_registry::family<metrics_registry::counter>* requests = nullptr;
  metrics_registry::family<metrics_registry::histogram>* latency = nullptr;
  metrics_registry::gauge* open_connections = nullptr;
  std::weak_ptr<boost::asio::io_context> ioc; // writers lock it to keep executors valid

  std::mutex mutex; // guards the fields below
  std::condition_variable all_closed;
  bool stopping = false;
  uint64_t next_id = 0;
  std::unordered_map<uint64_t, std::weak_ptr<connection>> open;

  /// How an accepted connection is served.
  enum class admit { normal, overflow, drop };
  /// Registers an accepted connection: normal under the cap (at the cap the longest-idle
  /// connection is told to close to make room), overflow (health only) when nothing is idle,
  /// drop once stopping or past the overflow reserve. `id` is set unless dropped.
  admit enroll(const std::shared_ptr<connection>& c, uint64_t& id);
  /// Unregisters a closed connection.
  void retire(uint64_t id);
};

/// Internal: one accepted TCP connection; every member function runs on its strand (the
/// socket's executor), writers and the server post onto it.
class connection : public std::enable_shared_from_this<connection> {
public:
  /// `socket` must use a strand executor.
  connection(boost::asio::ip::tcp::socket socket, std::shared_ptr<server_context> ctx);
  ~connection();

  /// Starts reading the first request.
  void start(uint64_t id);
  /// The strand.
  boost::asio::any_io_executor executor() { return socket_.get_executor(); }

  /// response_writer operations for request number `seq` (stale ones are ignored).
  void send(uint64_t seq, http_response r);
  void start_stream(uint64_t seq, unsigned status, std::string content_type,
                    response_writer::header_list headers);
  void write(uint64_t seq, std::string chunk);
  void finish(uint64_t seq);
  void add_disconnect_callback(uint64_t seq, std::function<void()> cb);
  void writer_dropped(uint64_t seq);

  /// Graceful stop: close if idle, else close after the current response.
  void begin_shutdown();
  /// At the connection cap: close if still idle (no byte of a next request), else nothing.
  void evict();
  /// Serve one request, only the health path (the server is at its connection cap).
  void set_overflow() { overflow_ = true; }
  /// Steady-clock ns since it has been idle (waiting for a request), 0 while busy; any thread.
  int64_t idle_since() const noexcept { return idle_since_.load(std::memory_order_relaxed); }
  /// Marks it as chosen for eviction; false when it already was. Any thread.
  bool claim_eviction() noexcept { return !evicting_.exchange(true); }
  bool evicting() const noexcept { return evicting_.load(); }
  /// Closes now, firing on_disconnect callbacks of an unfinished response.
  void force_close() { close(); }

private:
  enum class phase { reading, handling, idle, lingering, closed };
  enum class reply { none, streaming, complete };

  void read_header();
  void wait_for_request();
  void set_idle(bool idle);
  bool precheck(const http_request& req);
  std::string error_body(unsigned status, std::string_view message, std::string_view code) const;
  void on_header(boost::beast::error_code ec);
  void on_body(boost::beast::error_code ec);
  void on_read_error(boost::beast::error_code ec);
  void dispatch();
  void reply_error(unsigned status, std::string_view message, std::string_view code);
  void watch();
  void on_watch(boost::beast::error_code ec, std::size_t n);
  void arm_timer(std::chrono::milliseconds after);
  std::string head(unsigned status, std::string_view content_type,
                   const response_writer::header_list& headers, std::string_view framing) const;
  void queue(std::string bytes);
  void write_next();
  void on_written(boost::beast::error_code ec);
  void response_done();
  void linger();
  void drain();
  void close();
  void record(unsigned status);

  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<server_context> ctx_;
  uint64_t id_ = 0;
  bool enrolled_ = false;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::string remote_;

  phase phase_ = phase::reading;
  reply reply_ = reply::none;
  uint64_t seq_ = 0;      // number of the current request
  uint64_t timer_gen_ = 0; // invalidates waits of re-armed timers
  bool aborted_ = false;   // the current request ended by a disconnect
  bool watching_ = false;  // a disconnect-watch read is in flight
  bool writing_ = false;
  std::size_t in_flight_ = 0;    // strings of out_ the pending write sends
  std::size_t queued_bytes_ = 0; // bytes in out_, sent or not
  bool keep_alive_ = true;
  bool chunked_ = true;
  /// The request is a HEAD: its response carries the head (with the length the body would
  /// have) and never a body, or the client would read the body as the next response.
  bool head_only_ = false;
  bool linger_ = false;    // close by draining input first (request may be half read)
  bool shutdown_ = false;
  bool overflow_ = false;  // over the connection cap: one request, the health path only
  bool timed_out_ = false; // the header or body timer cancelled the read in flight: answer 408
  bool in_body_ = false;   // the header is in; the body is being read
  std::atomic<int64_t> idle_since_{0};
  std::atomic<bool> evicting_{false};
  std::string error_path_; // the request's path (for the error shape of built-in answers)
  std::string cors_origin_; // the Origin to answer with CORS headers, if allowed
  unsigned version_ = 11;
  unsigned status_ = 0;
  std::string route_;
  std::string method_;
  std::chrono::steady_clock::time_point started_;
  /// When the current request's header read began (its first bytes were in the buffer).
  std::chrono::steady_clock::time_point first_byte_;
  std::deque<std::string> out_;
  std::vector<std::function<void()>> on_disconnect_;
};

} // namespace deepinfer::actors::http
