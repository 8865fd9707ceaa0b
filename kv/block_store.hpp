#pragma once

#include "kv/block_catalog.hpp"
#include "kv/block_key.hpp"
#include "kv/check_index.hpp"
#include "kv/clock.hpp"
#include "kv/gc.hpp"
#include "kv/hash_chain.hpp"
#include "kv/traffic_class.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace deepinfer::kv {

/// When a write reaches stable storage before it becomes visible.
enum class fsync_policy : uint8_t {
  none,          ///< rely on the page cache: survives a process crash, not a power loss
  file,          ///< fsync the block before the rename
  file_and_dir,  ///< and fsync the directory after it
};

/// Engine behind the asynchronous API. With io_uring, reads (the prefill fetch path) are one
/// readv per block on the ring; writes always run on the thread pool, because a write-once block
/// is mostly blocking metadata work (create, fsync, rename).
enum class io_backend : uint8_t {
  automatic,   ///< io_uring when built with liburing and the kernel allows it, else thread pool
  thread_pool, ///< blocking I/O on a pool of threads
  uring,       ///< io_uring; falls back to the thread pool when unavailable
};

/// Outcome of a block read.
enum class read_status : uint8_t { ok, not_found, buffer_too_small, corrupt, io_error };

/// Outcome of a block write.
enum class write_status : uint8_t { written, exists, io_error };

/// A read's status and payload size (the size is also set for `buffer_too_small`).
struct read_result {
  read_status status = read_status::not_found;
  std::size_t bytes = 0;
};

/// What `open` found on disk.
struct scan_report {
  std::size_t blocks = 0;
  uint64_t bytes = 0;
  /// Temporary files of dead writers that were removed.
  std::size_t debris_removed = 0;
  /// Block files with a bad header that were removed.
  std::size_t bad_removed = 0;
};

/// What `verify` found.
struct verify_report {
  std::size_t ok = 0;
  std::size_t corrupt = 0;
  std::size_t removed = 0;
};

/// Blocks as files under a root directory (DESIGN §4.1): `<root>/<fingerprint>/<hh>/<key>.kvb`,
/// write-once (temp file, optional fsync, rename), a checksummed header (`block_header`), reads
/// into caller buffers, sync and async. Several processes may share a root; a file appears under
/// its final name only when complete, and a reader that opened it keeps reading the same bytes
/// even if another process removes it. Thread-safe.
class block_store {
public:
  /// Where and how to store.
  struct config {
    std::filesystem::path root;
    model_fingerprint fingerprint;
    fsync_policy fsync = fsync_policy::file;
    std::shared_ptr<const clock> time = system_clock();
    io_backend backend = io_backend::automatic;
    /// Threads of the thread-pool backend (and of io_uring completion handling: 1).
    std::size_t io_threads = 4;
    /// Submission queue depth of the io_uring backend.
    unsigned uring_entries = 256;
    /// A read refreshes the file's mtime (the persisted last use) when it is older than this.
    int64_t touch_interval_ms = 3600LL * 1000;
    /// Temporary files older than this are debris even if their writer may live elsewhere.
    int64_t stale_tmp_ms = 600LL * 1000;
  };

  /// Completion of an async read; runs on an I/O thread.
  using read_callback = std::function<void(read_result)>;
  /// Completion of an async write; runs on an I/O thread.
  using write_callback = std::function<void(write_status)>;

  /// Opens (creating directories as needed) and scans the root; nullptr if the root is unusable.
  /// `index`, when given (it must outlive the store), is filled from the scan and kept current:
  /// local writes and blocks adopted from other processes are inserted, removals erased.
  static std::unique_ptr<block_store> open(const config& cfg, check_index* index = nullptr);

  ~block_store();
  block_store(const block_store&) = delete;
  block_store& operator=(const block_store&) = delete;

  /// Stores `payload` under `key` unless already stored (write-once).
  write_status write(const block_key& key, std::span<const std::byte> payload, traffic_class cls);

  /// Reads the payload of `key` into `out` and verifies it. `corrupt` blocks are removed.
  read_result read(const block_key& key, std::span<std::byte> out);

  /// Queues a read; `out` must stay valid until `done` runs. `done` runs on an I/O thread, or
  /// on the caller's thread when the block is missing before any I/O was queued.
  void read_async(const block_key& key, std::span<std::byte> out, read_callback done);

  /// Queues a write; `payload` must stay valid until `done` runs.
  void write_async(const block_key& key, std::span<const std::byte> payload, traffic_class cls,
                   write_callback done);

  /// True if the block's file exists (one `stat`); the CHECK revalidation probe.
  bool exists(const block_key& key) const;

  /// Payload size of a stored block (catalog, else header); `nullopt` if not stored.
  std::optional<std::size_t> payload_size(const block_key& key) const;

  /// Removes a block unless a reader holds it; true if removed.
  bool remove(const block_key& key);

  /// Writes that failed since the store opened (disk full, permissions, I/O errors).
  uint64_t failed_writes() const noexcept { return failed_writes_.load(std::memory_order_relaxed); }
  /// True once after a write failed for lack of space (ENOSPC, EDQUOT): the GC should make
  /// room now, whatever its watermarks say (other files may fill the disk, and the store's own
  /// byte count omits what the filesystem rounds up).
  bool take_space_pressure() noexcept { return space_pressure_.exchange(false); }
  bool space_pressure() const noexcept { return space_pressure_.load(); }

  /// Reads and verifies every block file; removes corrupt ones when `remove_corrupt`.
  verify_report verify(bool remove_corrupt);

  /// The metadata: sizes, LRU order, pins.
  block_catalog& catalog() { return catalog_; }

  /// What `open` found.
  const scan_report& scan() const { return scan_; }

  /// Deletes a block's file; for `gc`.
  gc::remover remover();

  /// `exists` as a `check_index` probe.
  check_index::probe probe() const;

  /// Path of a block's file.
  std::filesystem::path path_of(const block_key& key) const;

  /// The backend actually in use (never `automatic`).
  io_backend backend() const { return backend_; }

  /// The configuration.
  const config& cfg() const { return cfg_; }

private:
  struct async_engine;

  explicit block_store(const config& cfg);
  bool prepare();
  void rescan();
  void start_async();
  bool read_async_uring(const block_key& key, std::span<std::byte> out, read_callback& done);
  bool unlink_block(const block_key& key);
  bool remember(const block_meta& meta);
  void forget_missing(const block_key& key);
  std::filesystem::path tmp_path(const block_key& key);
  read_result read_open_file(int fd, const block_key& key, std::span<std::byte> out,
                             std::optional<traffic_class>& cls);
  read_result finish_read(const block_key& key, std::span<const std::byte> header,
                          std::span<std::byte> out, std::size_t got, std::optional<traffic_class>& cls);
  void after_read(int fd, const block_key& key, const read_result& result, bool known,
                  std::optional<traffic_class> cls);

  config cfg_;
  std::filesystem::path dir_;
  block_catalog catalog_;
  check_index* index_ = nullptr;
  scan_report scan_;
  io_backend backend_ = io_backend::thread_pool;
  std::unique_ptr<async_engine> async_;
  void write_failed(const block_key& key, const char* what, int err);

  std::atomic<uint64_t> tmp_seq_{0};
  std::string host_;
  std::atomic<uint64_t> failed_writes_{0};
  std::atomic<bool> space_pressure_{false};
  /// Failed writes are logged one at a time at most every 10 s (a full disk fails every
  /// block): the first at once, then how many failed since.
  std::atomic<int64_t> last_failure_log_ms_{-1};
  std::atomic<uint64_t> failures_unlogged_{0};
};

} // namespace deepinfer::kv
