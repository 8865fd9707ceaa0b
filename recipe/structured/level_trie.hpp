#pragma once

#include "recipe/structured/token_trie.hpp"

#include <cstdint>
#include <vector>

namespace deepinfer::recipe::so {

/// The vocabulary trie again, numbered breadth-first: a node's children are contiguous, and so
/// is each level. The cold mask walks it one level at a time, every node of a level in one
/// regular loop (state = the parent's state stepped by the node's byte): the steps of a level
/// do not depend on each other and the loop has no data-dependent branch, so it runs at the
/// loads' throughput instead of a depth-first walk's latency chain and mispredictions (which
/// wait for the parent's state, then branch on whether the child is alive, at each node). A
/// node is 8 bytes (`link`: parent and byte; its first token), so a whole walk streams ~2 MiB.
class level_trie {
public:
  level_trie() = default;
  /// Throws std::length_error past 2^24 nodes (the parent's field; ~10x a 128K vocabulary).
  explicit level_trie(const byte_trie& t);

  std::uint32_t size() const noexcept { return static_cast<std::uint32_t>(link_.size()); }
  std::uint32_t first_child(std::uint32_t i) const noexcept { return first_[i]; }
  std::uint32_t children(std::uint32_t i) const noexcept { return nchild_[i]; }
  /// Per node: parent << 8 | byte (the root's is 0).
  const std::uint32_t* links() const noexcept { return link_.data(); }
  /// Per node: the first token ending there (-1: none).
  const token_id* first_tokens() const noexcept { return tok_.data(); }
  /// Nodes where more than one token ends, ascending (their other tokens are in the preorder trie).
  const std::vector<std::uint32_t>& multi_token_nodes() const noexcept { return multi_; }
  /// The node's number in the preorder `byte_trie` (its tokens and subtree there).
  std::uint32_t preorder(std::uint32_t i) const noexcept { return pre_[i]; }

private:
  std::vector<std::uint32_t> link_;
  std::vector<token_id> tok_;
  std::vector<std::uint32_t> first_;
  std::vector<std::uint16_t> nchild_;
  std::vector<std::uint32_t> pre_;
  std::vector<std::uint32_t> multi_;
};

} // namespace deepinfer::recipe::so
