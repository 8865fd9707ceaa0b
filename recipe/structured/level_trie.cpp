#include "recipe/structured/level_trie.hpp"

#include <stdexcept>

namespace deepinfer::recipe::so {

level_trie::level_trie(const byte_trie& t) {
  const auto n = t.size();
  if (n >= (1u << 24))
    throw std::length_error("level_trie: more than 2^24 trie nodes");
  pre_.reserve(n);
  pre_.push_back(0);
  link_.assign(1, 0);
  first_.resize(n, 0);
  nchild_.resize(n, 0);
  // Breadth-first: the queue is pre_ itself; a node's children are appended when it is reached.
  for (std::uint32_t k = 0; k < pre_.size(); ++k) {
    const auto p = pre_[k];
    first_[k] = static_cast<std::uint32_t>(pre_.size());
    for (auto c = p + 1; c < t.skip(p); c = t.skip(c)) {
      pre_.push_back(c);
      link_.push_back(k << 8 | t.byte(c));
    }
    nchild_[k] = static_cast<std::uint16_t>(pre_.size() - first_[k]);
  }
  tok_.resize(n);
  for (std::uint32_t k = 0; k < n; ++k) {
    const auto p = pre_[k];
    const auto nt = t.tokens_end(p) - t.tokens_begin(p);
    tok_[k] = nt == 0 ? -1 : *t.tokens_begin(p);
    if (nt > 1)
      multi_.push_back(k);
  }
}

} // namespace deepinfer::recipe::so
