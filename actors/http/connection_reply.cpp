#include "actors/http/connection.hpp"

#include "actors/http/openai_error.hpp"
#include "actors/log.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/http/status.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

// The reply side of a connection, what its response_writer drives: response framing
// (Content-Length, chunked, HTTP/1.0 raw streams), disconnect callbacks, graceful shutdown, and
// the output queue that serializes writes on the strand.

namespace deepinfer::actors::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

namespace {

// Bounded so one write never builds a huge iovec (Linux caps it at 1024 anyway).
constexpr std::size_t max_gather = 64;

} // namespace

std::string connection::head(unsigned status, std::string_view content_type,
                             const response_writer::header_list& headers, std::string_view framing) const {
  std::string h = "HTTP/1.1 " + std::to_string(status) + " ";
  auto reason = bhttp::obsolete_reason(bhttp::int_to_status(status));
  h.append(reason.data(), reason.size());
  h += "\r\nServer: deepinfer\r\n";
  if (!content_type.empty()) {
    h += "Content-Type: ";
    h += content_type;
    h += "\r\n";
  }
  h += framing;
  h += keep_alive_ ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  if (!cors_origin_.empty())
    h += "Access-Control-Allow-Origin: " + cors_origin_ + "\r\nVary: Origin\r\nAccess-Control-Expose-Headers: Retry-After\r\n";
  for (const auto& [name, value] : headers)
    h += name + ": " + value + "\r\n";
  h += "\r\n";
  return h;
}

void connection::send(uint64_t seq, http_response r) {
  if (seq != seq_ || phase_ != phase::handling || reply_ != reply::none)
    return;
  reply_ = reply::complete;
  status_ = r.status;
  auto bytes = head(r.status, r.content_type, r.headers, "Content-Length: " + std::to_string(r.body.size()) + "\r\n");
  if (!head_only_)
    bytes += r.body;
  queue(std::move(bytes));
}

void connection::start_stream(uint64_t seq, unsigned status, std::string content_type,
                              response_writer::header_list headers) {
  if (seq != seq_ || phase_ != phase::handling || reply_ != reply::none)
    return;
  reply_ = reply::streaming;
  status_ = status;
  // HTTP/1.0 has no chunked encoding: the body ends where the connection does.
  chunked_ = version_ >= 11;
  if (!chunked_)
    keep_alive_ = false;
  queue(head(status, content_type, headers, chunked_ ? "Transfer-Encoding: chunked\r\n" : ""));
}

void connection::write(uint64_t seq, std::string chunk) {
  if (seq != seq_ || phase_ != phase::handling || reply_ != reply::streaming || chunk.empty() || head_only_)
    return;
  // A client that stops reading must not make the server buffer a whole generation: cut it,
  // which fires on_disconnect so the request gets cancelled upstream.
  if (queued_bytes_ + chunk.size() > ctx_->cfg.stream_buffer_limit_bytes) {
    log().warn("http conn={} req={} client too slow: {} bytes unsent; closing", id_, seq, queued_bytes_);
    return close();
  }
  if (!chunked_)
    return queue(std::move(chunk));
  char size[20];
  int len = std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
  std::string framed;
  framed.reserve(chunk.size() + static_cast<std::size_t>(len) + 2);
  framed.append(size, static_cast<std::size_t>(len)).append(chunk).append("\r\n");
  queue(std::move(framed));
}

void connection::finish(uint64_t seq) {
  if (seq != seq_ || phase_ != phase::handling || reply_ != reply::streaming)
    return;
  reply_ = reply::complete;
  if (chunked_ && !head_only_)
    queue("0\r\n\r\n");
  else if (!writing_ && out_.empty())
    response_done();
}

void connection::add_disconnect_callback(uint64_t seq, std::function<void()> cb) {
  if (seq == seq_ && phase_ == phase::closed && aborted_)
    return cb(); // it already happened
  if (seq != seq_ || phase_ != phase::handling || reply_ == reply::complete)
    return; // that request is over (or its response is fully queued)
  on_disconnect_.push_back(std::move(cb));
}

void connection::writer_dropped(uint64_t seq) {
  if (seq != seq_ || phase_ != phase::handling)
    return;
  if (reply_ == reply::none) {
    log().error("http conn={} req={} handler dropped the request without answering", id_, seq);
    http_response r;
    r.status = 500;
    r.body = openai_error("the server dropped the request without answering", "server_error", "internal_error");
    send(seq, std::move(r));
  } else if (reply_ == reply::streaming) {
    log().error("http conn={} req={} stream abandoned unfinished; closing", id_, seq);
    close();
  }
}

void connection::begin_shutdown() {
  shutdown_ = true;
  if (phase_ == phase::handling) {
    keep_alive_ = false; // announced as Connection: close if the head is not out yet
    return;
  }
  if (phase_ != phase::lingering)
    close();
}

void connection::queue(std::string bytes) {
  if (phase_ == phase::closed)
    return;
  queued_bytes_ += bytes.size();
  out_.push_back(std::move(bytes));
  if (!writing_)
    write_next();
}

void connection::write_next() {
  // Everything queued so far goes out in one gather write: a burst of SSE chunks costs one
  // syscall, not one per chunk. The strings stay put in out_ until the write completes.
  writing_ = true;
  in_flight_ = std::min(out_.size(), max_gather);
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(in_flight_);
  for (std::size_t i = 0; i < in_flight_; ++i)
    buffers.push_back(asio::buffer(out_[i]));
  asio::async_write(socket_, buffers,
                    [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_written(ec); });
}

void connection::on_written(beast::error_code ec) {
  writing_ = false;
  if (phase_ == phase::closed)
    return;
  if (ec) {
    log().debug("http conn={} write failed: {}", id_, ec.message());
    return close();
  }
  for (std::size_t i = 0; i < in_flight_; ++i)
    queued_bytes_ -= out_[i].size();
  out_.erase(out_.begin(), out_.begin() + static_cast<std::ptrdiff_t>(in_flight_));
  in_flight_ = 0;
  if (!out_.empty())
    write_next();
  else if (phase_ == phase::handling && reply_ == reply::complete)
    response_done();
}

} // namespace deepinfer::actors::http
