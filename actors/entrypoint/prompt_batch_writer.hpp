#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/http/response_writer.hpp"

namespace deepinfer::actors {

/// One client answer made of the answers of a batched Completions prompt's parts (one request
/// per prompt, `recipe::split_prompt_batch`): each part writes to its own writer (`part(i)`),
/// and this merges what they write into the client's writer. A body: every part's choices in
/// prompt order, index = prompt index x n + the choice's index, usage summed. A stream: the
/// parts' chunks as they come, their choice indices rewritten the same way, one usage chunk
/// (when asked for) and one `[DONE]` at the end. A part's error before any stream started is
/// the answer (the other parts are cancelled); after, it is an error event in the stream.
/// Thread-safe: the parts' request actors write concurrently.
class prompt_batch_writer : public std::enable_shared_from_this<prompt_batch_writer> {
public:
  /// `n`: each prompt's choices (the request's `n`).
  static std::shared_ptr<prompt_batch_writer> make(std::shared_ptr<http::response_writer> client, int parts, int n);
  /// The writer of part `i` (0-based, in prompt order).
  std::shared_ptr<http::response_writer> part(int i);

private:
  class part_writer;
  friend class part_writer;
  prompt_batch_writer(std::shared_ptr<http::response_writer> client, int parts, int n);
  void on_send(int i, http::http_response r);
  void on_start(int i);
  void on_write(int i, const std::string& chunk);
  void on_finish(int i);
  void on_part_disconnect(int i, std::function<void()> cb);
  void cancel_all_locked();
  void merge_and_send_locked();
  void end_stream_locked();
  nlohmann::ordered_json rewrite(int i, nlohmann::ordered_json chunk);

  std::mutex mtx_;
  std::shared_ptr<http::response_writer> client_;
  int parts_;
  int n_;
  bool answered_ = false;  // an error went out, or the merged body, or the stream ended
  bool streaming_ = false; // the client's stream is out
  int finished_ = 0;       // parts whose answer is complete
  std::vector<std::string> bodies_;
  std::vector<std::function<void()>> cancels_;
  std::vector<bool> cancelled_;
  nlohmann::ordered_json usage_;           // summed usage chunks of a stream
  nlohmann::ordered_json head_;            // the `id` and `created` every chunk and the body carry
  nlohmann::ordered_json last_chunk_head_; // id / object / created / model of a stream chunk
};

} // namespace deepinfer::actors
