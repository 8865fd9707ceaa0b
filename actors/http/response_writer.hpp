#pragma once

#include "actors/http/http_response.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace deepinfer::actors::http {

/// The answer side of one HTTP request. Every method is thread-safe and non-blocking: it queues
/// work onto the connection's strand, so a handler may answer from any thread, any time later.
///
/// Answer exactly once: either `send(...)`, or `start_stream(...)`, any number of `write(...)`,
/// then `finish()`. Calls out of that order, or after the client went away, are ignored (they are
/// not errors: a disconnect can race any reply). Dropping the last reference without answering
/// sends a 500 JSON error; dropping it mid-stream closes the connection (the client sees a
/// truncated stream), so a client never hangs.
class response_writer {
public:
  /// Extra header fields (name, value).
  using header_list = std::vector<std::pair<std::string, std::string>>;

  virtual ~response_writer() = default;

  /// Sends a complete response (Content-Length framing). required
  virtual void send(http_response response) = 0;

  /// Starts a streamed response: the status line and headers go out now, the body follows in
  /// `write` calls (chunked transfer encoding; on HTTP/1.0 raw bytes and close). required
  virtual void start_stream(unsigned status, std::string content_type, header_list headers = {}) = 0;

  /// Sends one chunk of a started stream right away (one SSE event, say). Empty chunks are
  /// skipped. required
  virtual void write(std::string chunk) = 0;

  /// Ends a started stream. required
  virtual void finish() = 0;

  /// Registers `callback` to run once if the client disconnects (or the server force-closes the
  /// connection) before the response is complete; it runs at once if that already happened.
  /// Callbacks run on an I/O thread: keep them short and non-blocking (e.g. send a cancel
  /// message). They never run after a complete response. required
  virtual void on_disconnect(std::function<void()> callback) = 0;

  /// Convenience: `send` with an OpenAI-shaped JSON error body (see openai_error.hpp); `type`
  /// defaults from the status.
  void send_error(unsigned status, std::string_view message, std::string_view code,
                  std::string_view type = {});

  /// Convenience: `send` a JSON body (already serialized) with the given status.
  void send_json(unsigned status, std::string body);
};

} // namespace deepinfer::actors::http
