#pragma once

#include <cstdint>
#include <functional>

namespace deepinfer::engine {

/// A sequence (one request's KV and state) on one rank.
struct sequence_id {
  uint64_t value = 0;
  friend bool operator==(sequence_id a, sequence_id b) { return a.value == b.value; }
};

/// A block of the paged KV pool.
struct block_id {
  uint32_t value = 0;
  friend bool operator==(block_id a, block_id b) { return a.value == b.value; }
};

} // namespace deepinfer::engine

template <>
struct std::hash<deepinfer::engine::sequence_id> {
  std::size_t operator()(deepinfer::engine::sequence_id x) const noexcept {
    return std::hash<uint64_t>{}(x.value);
  }
};
