#include "recipe/tokenizer/bpe_model.hpp"

#include <limits>
#include <queue>

namespace deepinfer::recipe {

namespace {
constexpr std::uint32_t no_rank = std::numeric_limits<std::uint32_t>::max();
// Pieces up to this many bytes use the array scan below; longer ones the priority queue, whose
// per-merge cost does not grow with the piece.
constexpr std::size_t short_piece = 96;
} // namespace

bpe_model::bpe_model(const token_id (&byte_ids)[256], const std::vector<merge>& merges) {
  for (int i = 0; i < 256; ++i)
    byte_ids_[i] = byte_ids[i];
  int bits = 4;
  while ((std::size_t{1} << bits) < merges.size() * 2 + 16)
    ++bits;
  slots_.assign(std::size_t{1} << bits, slot{empty_key, 0, 0});
  mask_ = slots_.size() - 1;
  shift_ = 64 - bits;
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const auto& m = merges[r];
    const std::uint64_t key =
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(m.left)) << 32) | static_cast<std::uint32_t>(m.right);
    std::size_t i = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
    while (slots_[i].key != empty_key && slots_[i].key != key)
      i = (i + 1) & mask_;
    // HF keeps the last duplicate of a pair (it builds a HashMap from the list in order).
    slots_[i] = slot{key, static_cast<std::uint32_t>(r), m.merged};
  }
}

void bpe_model::encode_piece(std::string_view piece, std::vector<token_id>& out) const {
  const std::size_t n = piece.size();
  if (n == 0)
    return;
  if (n == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  if (n > short_piece) {
    encode_long(piece, out);
    return;
  }
  // Symbols live in a compact array; rank[i] is the merge rank of (sym[i], sym[i+1]).
  token_id sym[short_piece];
  std::uint32_t rank[short_piece];
  token_id merged[short_piece];
  std::size_t len = n;
  for (std::size_t i = 0; i < n; ++i)
    sym[i] = byte_ids_[static_cast<unsigned char>(piece[i])];
  auto update = [&](std::size_t i) {
    const slot* s = find(sym[i], sym[i + 1]);
    rank[i] = s ? s->rank : no_rank;
    merged[i] = s ? s->merged : 0;
  };
  for (std::size_t i = 0; i + 1 < len; ++i)
    update(i);
  while (len > 1) {
    std::size_t best = 0;
    std::uint32_t best_rank = rank[0];
    for (std::size_t i = 1; i + 1 < len; ++i)
      if (rank[i] < best_rank) {
        best_rank = rank[i];
        best = i;
      }
    if (best_rank == no_rank)
      break;
    sym[best] = merged[best];
    for (std::size_t i = best + 1; i + 1 < len; ++i) {
      sym[i] = sym[i + 1];
      rank[i] = rank[i + 1];
      merged[i] = merged[i + 1];
    }
    --len;
    if (best + 1 < len)
      update(best);
    if (best > 0)
      update(best - 1);
  }
  out.insert(out.end(), sym, sym + len);
}

void bpe_model::encode_long(std::string_view piece, std::vector<token_id>& out) const {
  // HF's algorithm: a min-heap of (rank, position); stale entries are skipped when the pair now
  // at that position would not produce the same token.
  const std::size_t n = piece.size();
  std::vector<token_id> sym(n);
  std::vector<std::int32_t> prev(n), next(n);
  for (std::size_t i = 0; i < n; ++i) {
    sym[i] = byte_ids_[static_cast<unsigned char>(piece[i])];
    prev[i] = static_cast<std::int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<std::int32_t>(i + 1) : -1;
  }
  struct entry {
    std::uint32_t rank;
    std::uint32_t pos;
    token_id merged;
    bool operator>(const entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<entry, std::vector<entry>, std::greater<entry>> heap;
  auto push = [&](std::int32_t i) {
    if (i < 0 || next[static_cast<std::size_t>(i)] < 0)
      return;
    if (const slot* s = find(sym[static_cast<std::size_t>(i)], sym[static_cast<std::size_t>(next[static_cast<std::size_t>(i)])]))
      heap.push(entry{s->rank, static_cast<std::uint32_t>(i), s->merged});
  };
  for (std::size_t i = 0; i + 1 < n; ++i)
    push(static_cast<std::int32_t>(i));
  std::vector<bool> dead(n, false);
  while (!heap.empty()) {
    const entry top = heap.top();
    heap.pop();
    const std::size_t i = top.pos;
    if (dead[i] || next[i] < 0)
      continue;
    const auto j = static_cast<std::size_t>(next[i]);
    const slot* s = find(sym[i], sym[j]);
    if (s == nullptr || s->merged != top.merged)
      continue;
    sym[i] = top.merged;
    dead[j] = true;
    next[i] = next[j];
    if (next[j] >= 0)
      prev[static_cast<std::size_t>(next[j])] = static_cast<std::int32_t>(i);
    push(prev[i]);
    push(static_cast<std::int32_t>(i));
  }
  for (std::int32_t i = 0; i >= 0; i = next[static_cast<std::size_t>(i)])
    out.push_back(sym[static_cast<std::size_t>(i)]);
}

} // namespace deepinfer::recipe
