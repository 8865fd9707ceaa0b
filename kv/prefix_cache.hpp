#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kv/block_key.hpp"
#include "kv/clock.hpp"
#include "kv/gc.hpp"
#include "kv/hash_chain.hpp"
#include "kv/swa_store.hpp"
#include "kv/traffic_class.hpp"

namespace deepinfer::kv {

/// The prefix cache as the ranks use it (DESIGN §4): the persistent block KV (hash chain, CHECK
/// index and block store under one root) and the process-local SWA snapshots, shared by every
/// rank of a process (thread-safe; no CAF). Decode stores the full blocks of a sequence (the
/// prompt's when its KV arrives, each output block as it fills, through `store_async`) and its
/// last snapshot when it ends; prefill stores its snapshot; lookup applies the hit policy (§4.3)
/// and reads the hit's blocks.
///
/// Every call that names tokens takes the request's `cache_salt` (its tenant's namespace, shared
/// when zero): keys are computed on the chain salted with it, so one tenant's blocks and
/// snapshots are invisible to another (issue 14); and the prompt's `images` (placeholder
/// positions and content keys, `hash_chain::with_images`), so a prefix with another image never
/// hits (issue 21). Empty: a text-only prompt.
class prefix_cache {
public:
  struct config {
    /// Root directory of the block store (a shared filesystem on a cluster).
    std::string root;
    /// The model's fingerprint (config.json); keys of different models never meet.
    std::string fingerprint;
    /// Threads reading hit blocks in parallel.
    std::size_t io_threads = 4;
    /// Blocking reads on `io_threads` (default) or io_uring. Hit blocks are mostly in the page
    /// cache: io_uring then copies every one inline on the one submitting thread, while the
    /// threads copy and checksum them on every core (a 234-block hit: ~10 ms vs ~4.5 ms on two
    /// cores). io_uring pays off for cold reads from a slow disk.
    bool use_io_uring = false;
    /// SWA snapshots: lifetime and memory cap (DESIGN §4.2: about 180 s).
    int64_t snapshot_ttl_ms = 180'000;
    uint64_t snapshot_memory_cap = 1ULL << 30;
    /// The store's lifecycle (DESIGN §4.1, `run_gc`): blocks expire by traffic class, and above
    /// the high watermark (bytes of block payloads) the least recently used go down to the low one.
    ttl_table ttl = {};
    uint64_t gc_low_watermark_bytes = std::numeric_limits<uint64_t>::max();
    uint64_t gc_high_watermark_bytes = std::numeric_limits<uint64_t>::max();
    /// fsync each block before it is visible (power-loss safety; the cache is a cache: off).
    bool fsync = false;
    /// The clock blocks age by (tests drive a manual one).
    std::shared_ptr<const clock> time = system_clock();
    /// Bytes of exported blocks `store_async` may hold before they are written; beyond it a
    /// block is refused (its caller offers it again later).
    std::size_t write_queue_bytes = std::size_t{256} << 20;
  };

  /// Opens (creating) the store; nullptr and `error` when the root is unusable.
  static std::shared_ptr<prefix_cache> open(const config& cfg, std::string* error);
  ~prefix_cache();

  /// A hit: `length` tokens (a multiple of 128, the hit policy's L1) with their block buffers, in
  /// order, and the SWA snapshot ending at `length` when one was found (the hit is then exact;
  /// without it the engine replays the last block's window).
  struct hit {
    int64_t length = 0;
    std::vector<std::vector<std::byte>> blocks;
    kv::swa_snapshot snapshot;
  };

  /// Where to look for a snapshot the local store lacks (another node's memory through the SWA
  /// directory); returns nullptr on a miss. Runs on the calling rank's thread, during `lookup`.
  using snapshot_source = std::function<kv::swa_snapshot(const kv::block_key& ends_at)>;
  /// Installs (or, with an empty function, removes) the remote snapshot source.
  void set_snapshot_source(snapshot_source source);

  /// The reusable stored prefix of a prompt (capped at L - 134 so the window can be rebuilt),
  /// its blocks read in parallel; blocks that fail to read shorten the hit (and drop the snapshot).
  hit lookup(std::span<const int32_t> prompt, kv::cache_salt salt = {}, std::span<const image_mark> images = {});

  /// `lookup` in two halves, so a prefill can start on the window while its blocks load: what
  /// the hit will be (CHECK, the hit policy, the SWA snapshot: metadata and memory only) ...
  struct hit_plan {
    int64_t length = 0;
    std::vector<kv::block_key> keys; ///< the blocks to read, in order
    kv::swa_snapshot snapshot;       ///< set when the hit is exact
  };
  /// With `cap_length` > 0 the hit policy caps the hit as for a prompt of that many tokens (a
  /// resubmission: its own prompt's length, prompt + generated tokens being `prompt`).
  hit_plan plan(std::span<const int32_t> prompt, int64_t cap_length = 0, kv::cache_salt salt = {},
                std::span<const image_mark> images = {});
  /// ... then its blocks, read in parallel; fewer than planned when one fails to read (the index
  /// was stale: the plan no longer holds).
  std::vector<std::vector<std::byte>> read(const hit_plan& plan);

  /// Gives a hit's block buffers back once the engine has imported them: later lookups read
  /// into them instead of zero-filling fresh ones (34 MB for a 30K-token hit, a few ms of TTFT).
  /// Keeps at most `spare_limit` buffers. Thread-safe.
  void recycle(std::vector<std::vector<std::byte>> blocks);
  static constexpr std::size_t spare_limit = 256;
  /// Allocates (and touches) spare buffers of `bytes` until there are `count` (at most
  /// `spare_limit`): the host staging area a hit's blocks are read into, ready before the first
  /// hit (a fresh 30K-token hit otherwise faults in 34 MB on its way). Thread-safe.
  void reserve(std::size_t count, std::size_t bytes);

  /// What CHECK found: the hit policy's L1 and the chain key of the block ending there (how the
  /// SWA directory names the window ending at L1; nullopt when L1 is 0).
  struct check_result {
    int64_t length = 0;
    std::optional<block_key> key;
  };

  /// CHECK only (metadata, no block read; DESIGN §1 step 3): the hit length `lookup` would
  /// most likely give. The entrypoint prices a request's quota with it and asks the SWA
  /// directory for the key.
  check_result check(std::span<const int32_t> prompt, int64_t cap_length = 0, kv::cache_salt salt = {},
                     std::span<const image_mark> images = {});

  /// The chain key of the block that ends at position `end` of `tokens` (a positive multiple of
  /// 128 within them): how the SWA directory names the window ending there. nullopt otherwise.
  std::optional<block_key> key_at(std::span<const int32_t> tokens, int64_t end,
                                  kv::cache_salt salt = {}, std::span<const image_mark> images = {}) const;

  /// Stores blocks [0, full_blocks) of `tokens` on the caller's thread, asking `export_block(i)`
  /// only for blocks not yet stored or queued by `store_async`. Returns how many were written.
  using export_fn = std::function<std::optional<std::vector<std::byte>>(int64_t)>;
  int64_t store(std::span<const int32_t> tokens, int64_t full_blocks, const export_fn& export_block,
                kv::cache_salt salt = {}, traffic_class cls = traffic_class::chatbot,
                std::span<const image_mark> images = {});

  /// `store` without the file work on the caller's thread (issue 17): blocks [from, full_blocks)
  /// of `tokens` that are neither stored nor queued are exported here (`export_block(i)`, on the
  /// caller's thread, which owns the engine: the bytes are copied out) and written by the cache's
  /// writer thread, with fsync when configured. A queued block counts as stored for `check`,
  /// `plan`, `lookup` and `read` (its bytes are read from the queue) from the moment this
  /// returns. From 0, the leading stored run is found as CHECK finds it (a block another process
  /// wrote is not exported again). Returns the first block not handled: `full_blocks`, or the one
  /// that failed to export or found the queue full (offer it again from there later).
  int64_t store_async(std::span<const int32_t> tokens, int64_t from, int64_t full_blocks,
                      const export_fn& export_block, kv::cache_salt salt = {},
                      traffic_class cls = traffic_class::chatbot, std::span<const image_mark> images = {});
  /// Waits until every block `store_async` queued is written (tests, benchmarks).
  void flush_writes();
  /// Blocks `store_async` queued, wrote and refused (queue full) since open.
  struct write_counts {
    uint64_t queued = 0;
    uint64_t written = 0;
    uint64_t refused = 0;
  };
  write_counts writes() const;

  /// One lifecycle pass over the store (the kvstore node's GC worker runs it periodically):
  /// expired blocks go, then the least recently used while above the high watermark; CHECK
  /// forgets them first. One pass at a time (callers serialize; concurrent calls wait).
  gc_report run_gc();
  /// Bytes of block payloads in the store (what the watermarks compare).
  uint64_t stored_bytes();
  /// Block writes that failed since the store opened (the disk full, an I/O error).
  uint64_t failed_writes();
  /// Whether a write found the disk full since the last `run_gc` (which then makes room).
  bool space_pressure() const;

  /// Keeps the SWA snapshot of `tokens` ending at position `end` (a positive multiple of 128 not
  /// past the tokens), keyed by the key of block end / 128 - 1. False when refused.
  bool store_snapshot(std::span<const int32_t> tokens, int64_t end, std::vector<std::byte> snapshot,
                      kv::cache_salt salt = {}, std::span<const image_mark> images = {});

  /// The snapshot ending at `key` in this process's memory (no remote source); null if absent.
  kv::swa_snapshot local_snapshot(const kv::block_key& key) const;

  /// Called with the key of every snapshot `store_snapshot` keeps (to record it in the SWA
  /// directory). Runs on the storing rank's thread.
  using snapshot_listener = std::function<void(const kv::block_key& ends_at)>;
  void set_snapshot_listener(snapshot_listener listener);

  /// Snapshots held in this process's memory.
  std::size_t snapshots() const;

private:
  struct impl;
  explicit prefix_cache(std::unique_ptr<impl> d);
  std::unique_ptr<impl> d_;
};

} // namespace deepinfer::kv
