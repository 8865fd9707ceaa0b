#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kv/block_key.hpp"
#include "kv/traffic_class.hpp"

namespace deepinfer::kv {

/// Writes blocks off the caller's thread (issue 17): a decode rank hands over a block's exported
/// bytes and steps on; one writer thread does the file work (temporary file, fsync when
/// configured, rename) in FIFO order. The queue is bounded in bytes: when full, `submit` refuses
/// instead of blocking the rank (the cache is a cache; the caller may offer the block again).
/// A submitted block stays `pending` until its write returned, and readers take its bytes from
/// here meanwhile (`pending_payload`), so a block is never invisible between its export and its
/// file. The destructor writes what is queued, then joins. Thread-safe.
class block_writer {
public:
  struct config {
    /// Payload bytes held at most (queued and being written); beyond it `submit` refuses.
    std::size_t max_queued_bytes = std::size_t{256} << 20;
  };
  /// The write itself, on the writer thread: its outcome (stored, failed) is the caller's to
  /// record before it returns, since the block stops being pending right after.
  using write_fn = std::function<void(const block_key&, std::span<const std::byte>, traffic_class)>;

  /// Starts the writer thread. `write` is required.
  block_writer(const config& cfg, write_fn write);
  ~block_writer();
  block_writer(const block_writer&) = delete;
  block_writer& operator=(const block_writer&) = delete;

  /// What `submit` did with a block.
  enum class submit_status : uint8_t {
    queued,          ///< it will be written
    already_pending, ///< the same key is queued or being written (its bytes are the same)
    queue_full,      ///< refused: `max_queued_bytes` would be exceeded
  };
  /// Queues `payload` (moved in: the caller's buffer may go at once) to be written under `key`.
  submit_status submit(const block_key& key, std::vector<std::byte> payload, traffic_class cls);

  /// True while `key` is queued or being written.
  bool pending(const block_key& key) const;
  /// The bytes of a pending block (what its file will hold as payload); null when not pending.
  std::shared_ptr<const std::vector<std::byte>> pending_payload(const block_key& key) const;

  /// Waits until nothing is pending (blocks submitted meanwhile are waited for too).
  void flush();

  /// Counts since start, and the bytes held now.
  struct counters {
    uint64_t queued = 0;
    uint64_t written = 0;
    uint64_t refused = 0;
    std::size_t held_bytes = 0;
  };
  counters stats() const;

private:
  struct job {
    block_key key;
    std::shared_ptr<const std::vector<std::byte>> payload;
    traffic_class cls = traffic_class::chatbot;
  };
  void run();

  config cfg_;
  write_fn write_;
  mutable std::mutex mtx_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<job> queue_;
  /// Every pending block (queued or being written), with its bytes.
  std::unordered_map<block_key, std::shared_ptr<const std::vector<std::byte>>, block_key_hash> pending_;
  counters counts_;
  bool stopping_ = false;
  /// Declared last: started once the members above exist, joined first.
  std::thread worker_;
};

} // namespace deepinfer::kv
