#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine/huge_buffer.hpp"
#include "engine/ids.hpp"

namespace deepinfer::engine {

/// What `allocate` gave a sequence: its whole block table after the call.
struct kv_allocation {
  std::vector<block_id> blocks;
  int64_t tokens = 0; ///< Capacity now covered (blocks x tokens_per_block).
};

/// The paged block pool of global KV (DESIGN.md §4.1): fixed-size blocks of `tokens_per_block`
/// token rows, a block table per sequence, and ref counts so a shared prefix is stored once.
/// The scheduler asks; the pool answers "does not fit" with `std::nullopt`.
class kv_pool {
public:
  /// Pool geometry.
  struct config {
    int64_t blocks = 1024;
    int64_t floats_per_token = 0;
    int64_t tokens_per_block = 128;
  };

  explicit kv_pool(const config& cfg);

  /// Grows `seq`'s table to cover `n_tokens` token rows. Returns the table, or nullopt (and changes
  /// nothing) when the free blocks do not suffice.
  std::optional<kv_allocation> allocate(sequence_id seq, int64_t n_tokens);
  /// Appends an existing block to `seq`'s table, taking a reference (prefix sharing). Precondition:
  /// the table holds only full blocks.
  void append_shared(sequence_id seq, block_id b);
  /// Drops `seq`'s table and its references; blocks whose count reaches zero become free.
  void free(sequence_id seq);
  /// Takes / drops one reference on a block (pinned blocks are never reused).
  void pin(block_id b);
  void unpin(block_id b);
  /// A fresh block holding nothing, with ref count 1 (owned by the caller until it unpins or
  /// appends it); nullopt when the pool is full.
  std::optional<block_id> take_block();

  /// The row of token `pos` of `seq` (precondition: allocated).
  float* row(sequence_id seq, int64_t pos);
  const float* row(sequence_id seq, int64_t pos) const;
  /// The first row of block `b`.
  float* block_data(block_id b) { return data_.data() + int64_t{b.value} * block_floats_; }
  const float* block_data(block_id b) const {
    return data_.data() + int64_t{b.value} * block_floats_;
  }

  /// `seq`'s block table (empty when unknown).
  const std::vector<block_id>& table(sequence_id seq) const;
  int32_t ref_count(block_id b) const { return refs_[b.value]; }
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
  const config& geometry() const { return config_; }

private:
  config config_;
  int64_t block_floats_;
  huge_buffer data_;
  std::vector<int32_t> refs_;
  std::vector<block_id> free_;
  std::unordered_map<sequence_id, std::vector<block_id>> tables_;
};

} // namespace deepinfer::engine
