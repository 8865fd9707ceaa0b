#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace deepinfer::actors {

/// The persistent block KV cache as the ranks use it (DESIGN §4.1): the hash chain, the CHECK
/// index and the block store under one root, shared by every rank of a process (thread-safe; no
/// CAF). Decode stores the full blocks of a finished sequence (prompt and output); prefill looks
/// up the longest reusable prefix (the hit policy's L1) and reads its blocks.
class prefix_cache {
public:
  struct config {
    /// Root directory of the block store (a shared filesystem on a cluster).
    std::string root;
    /// The model's fingerprint (config.json); keys of different models never meet.
    std::string fingerprint;
  };

  /// Opens (creating) the store; nullptr and `error` when the root is unusable.
  static std::shared_ptr<prefix_cache> open(const config& cfg, std::string* error);
  ~prefix_cache();

  /// A hit: `length` tokens (a multiple of 128) and their block buffers, in order.
  struct hit {
    int64_t length = 0;
    std::vector<std::vector<std::byte>> blocks;
  };

  /// The reusable stored prefix of a prompt (capped at L - 134 so the window can be rebuilt);
  /// blocks that fail to read shorten the hit.
  hit lookup(std::span<const int32_t> prompt);

  /// CHECK only (metadata, no block read; DESIGN §1 step 3): the hit length `lookup` would
  /// most likely give. The entrypoint's prefill router prices a request's quota with it.
  int64_t check(std::span<const int32_t> prompt);

  /// The chain key of the block that ends at position `end` of `tokens` (a positive multiple of
  /// 128 within them): how the SWA directory names the window ending there. nullopt otherwise.
  std::optional<std::pair<uint64_t, uint64_t>> key_at(std::span<const int32_t> tokens, int64_t end) const;

  /// Stores blocks [0, full_blocks) of `tokens`, asking `export_block(i)` only for blocks not
  /// yet stored. Returns how many were written.
  using export_fn = std::function<std::optional<std::vector<std::byte>>(int64_t)>;
  int64_t store(std::span<const int32_t> tokens, int64_t full_blocks, const export_fn& export_block);

private:
  struct impl;
  explicit prefix_cache(std::unique_ptr<impl> d);
  std::unique_ptr<impl> d_;
};

} // namespace deepinfer::actors
