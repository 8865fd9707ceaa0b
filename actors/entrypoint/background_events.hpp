#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/http/response_writer.hpp"

namespace deepinfer::actors {

/// The SSE events of a background Responses turn, kept so a client can stream it again
/// (`GET /v1/responses/{id}?stream=true&starting_after=N`) while it runs and after it ended:
/// events in order (event k has `sequence_number` k, as the encoder numbers them), and the
/// listeners that follow it live. Thread-safe: the request actor appends, HTTP I/O threads
/// replay and disconnect.
class background_events : public std::enable_shared_from_this<background_events> {
public:
  /// Appends the events of one chunk of SSE bytes (whole events, `...\n\n` each) and sends them
  /// to every listener.
  void append(std::string_view chunk);
  /// The turn ended: every listener's stream ends, later replays end after the last event.
  void end();
  /// Starts `w`'s stream with the events after `starting_after` (-1: all); it follows the turn
  /// live until the turn ends or its client leaves.
  void replay(const std::shared_ptr<http::response_writer>& w, int64_t starting_after);
  std::size_t bytes() const;
  std::size_t size() const;
  bool ended() const;

private:
  struct listener {
    uint64_t id;
    std::shared_ptr<http::response_writer> writer;
  };
  void drop(uint64_t id);

  mutable std::mutex mtx_;
  std::vector<std::string> events_;
  std::size_t bytes_ = 0;
  bool ended_ = false;
  std::vector<listener> listeners_;
  uint64_t next_listener_ = 0;
};

/// The writer of a background turn: what the turn writes goes to `inner` (its create call's
/// stream, or nowhere) and into `events`; `send` and `finish` end the recording.
class recording_writer final : public http::response_writer {
public:
  recording_writer(std::shared_ptr<http::response_writer> inner, std::shared_ptr<background_events> events)
      : inner_(std::move(inner)), events_(std::move(events)) {}
  void send(http::http_response response) override;
  void start_stream(unsigned status, std::string content_type, header_list headers) override;
  void write(std::string chunk) override;
  void finish() override;
  void on_disconnect(std::function<void()> callback) override;

private:
  std::shared_ptr<http::response_writer> inner_;
  std::shared_ptr<background_events> events_;
};

} // namespace deepinfer::actors
