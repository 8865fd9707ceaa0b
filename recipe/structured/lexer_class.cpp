#include "recipe/structured/lexer_class.hpp"

#include <map>

namespace deepinfer::recipe::so {

std::shared_ptr<const lexer_class> lexer_class::make(const byte_dfa& dfa, std::int32_t q, const vocabulary& v) {
  auto c = std::make_shared<lexer_class>();
  const auto& t = v.trie();
  std::vector<std::int32_t> st(t.max_depth() + 1, -1);
  std::vector<std::uint8_t> path(t.max_depth() + 1, 0);
  st[0] = q;
  std::vector<token_id> whole;
  std::map<std::int32_t, byte_trie> groups;
  const std::uint32_t n = t.size();
  for (std::uint32_t i = 1; i < n;) {
    const auto d = t.depth(i);
    const auto s = dfa.step(st[d - 1], t.byte(i));
    if (s < 0) {
      i = t.skip(i);
      continue;
    }
    st[d] = s;
    whole.insert(whole.end(), t.tokens_begin(i), t.tokens_end(i));
    if (dfa.is_final(s) && t.skip(i) > i + 1) {
      // Tokens below i may end this lexeme here and continue with what follows it.
      auto& g = groups[s];
      for (std::uint32_t j = i + 1; j < t.skip(i); ++j) {
        path[t.depth(j)] = t.byte(j);
        for (auto p = t.tokens_begin(j); p != t.tokens_end(j); ++p)
          g.add(std::string_view{reinterpret_cast<const char*>(path.data()) + d + 1,
                                 static_cast<std::size_t>(t.depth(j) - d)}, *p);
      }
    }
    ++i;
  }
  if (whole.size() > 2048) {
    c->dense.assign(v.mask_words(), 0);
    for (auto id : whole)
      c->dense[static_cast<std::size_t>(id) >> 6] |= 1ull << (id & 63);
    c->bytes += c->dense.size() * 8;
  } else {
    c->sparse = std::move(whole);
    c->bytes += c->sparse.size() * 4;
  }
  for (auto& [fs, trie] : groups) {
    trie.build();
    c->bytes += trie.bytes();
    c->groups.push_back({fs, std::move(trie)});
  }
  c->bytes += 64;
  return c;
}

std::shared_ptr<const lexer_class> lexer_class_cache::get(const byte_dfa& dfa, std::int32_t q, const vocabulary& v) {
  const std::uint64_t key = dfa.hash() ^ (static_cast<std::uint64_t>(q) * 0x9E3779B97F4A7C15ull);
  {
    std::lock_guard lock{mutex_};
    if (auto it = map_.find(key); it != map_.end())
      return it->second;
  }
  auto c = lexer_class::make(dfa, q, v);
  std::lock_guard lock{mutex_};
  if (bytes_ + c->bytes > max_bytes_) {
    map_.clear();
    bytes_ = 0;
  }
  auto [it, fresh] = map_.emplace(key, c);
  if (fresh)
    bytes_ += c->bytes;
  return it->second;
}

std::size_t lexer_class_cache::bytes() const {
  std::lock_guard lock{mutex_};
  return bytes_;
}

} // namespace deepinfer::recipe::so
