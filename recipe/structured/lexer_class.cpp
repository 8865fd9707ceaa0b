#include "recipe/structured/lexer_class.hpp"

#include <map>

namespace deepinfer::recipe::so {

lexer_view::lexer_view(const byte_dfa& d, std::int32_t q, std::uint32_t depth) {
  std::unordered_map<std::int32_t, std::int32_t> id;
  std::vector<std::uint32_t> dist;
  id.emplace(q, 0);
  order.push_back(q);
  dist.push_back(0);
  std::uint64_t h = 0x5bd1e995;
  auto mix = [&](std::uint64_t v) { h = (h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2))) * 0xff51afd7ed558ccdull; };
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto s = order[i];
    fin.push_back(d.is_final(s) ? 1 : 0);
    mix(fin.back());
    next.resize((i + 1) * 256, -1);
    if (dist[i] >= depth)
      continue;  // no token reads further
    const auto* row = d.row(s);
    for (int c = 0; c < 256; ++c) {
      const auto t = row[c];
      if (t < 0)
        continue;
      auto [it, fresh] = id.emplace(t, static_cast<std::int32_t>(order.size()));
      if (fresh) {
        order.push_back(t);
        dist.push_back(dist[i] + 1);
      }
      next[i * 256 + c] = it->second;
      mix(static_cast<std::uint64_t>(c) << 32 | static_cast<std::uint32_t>(it->second));
    }
    mix(0xabcdef);
  }
  signature = h;
}

std::shared_ptr<const lexer_class> lexer_class::make(const std::vector<std::int32_t>& next,
                                                     const std::vector<std::uint8_t>& fin, const vocabulary& v) {
  const std::int32_t q = 0;
  auto c = std::make_shared<lexer_class>();
  const auto& t = v.trie();
  std::vector<std::int32_t> st(t.max_depth() + 1u, -1);
  std::vector<std::uint8_t> path(t.max_depth() + 1u, 0);
  st[0] = q;
  std::vector<std::uint64_t> bits(v.mask_words(), 0);
  std::size_t count = 0;
  std::map<std::int32_t, byte_trie> groups;
  const std::uint32_t n = t.size();
  const auto* nd = t.nodes();
  const std::int32_t* table = next.data();
  const std::uint8_t* finals = fin.data();
  for (std::uint32_t i = 1; i < n;) {
    const auto x = nd[i];
    const auto s = table[static_cast<std::size_t>(st[x.depth - 1u]) * 256u + x.byte];
    if (s < 0) {
      i = x.skip;
      continue;
    }
    st[x.depth] = s;
    if (x.ntok != 0)
      for (auto p = t.tokens_begin(i); p != t.tokens_end(i); ++p, ++count)
        bits[static_cast<std::size_t>(*p) >> 6] |= 1ull << (*p & 63);
    if (finals[s] && x.skip > i + 1) {
      // Tokens below i may end this lexeme here and continue with what follows it.
      auto& g = groups[s];
      const auto d = x.depth;
      for (std::uint32_t j = i + 1; j < x.skip; ++j) {
        path[nd[j].depth] = nd[j].byte;
        for (auto p = t.tokens_begin(j); p != t.tokens_end(j); ++p)
          g.add(std::string_view{reinterpret_cast<const char*>(path.data()) + d + 1,
                                 static_cast<std::size_t>(nd[j].depth - d)}, *p);
      }
    }
    ++i;
  }
  if (count > 2048) {
    c->dense = std::move(bits);
    c->bytes += c->dense.size() * 8;
  } else {
    for (std::size_t w = 0; w < bits.size(); ++w)
      for (auto b = bits[w]; b != 0; b &= b - 1)
        c->sparse.push_back(static_cast<token_id>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(b))));
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

std::shared_ptr<const lexer_class> lexer_class_cache::get(const lexer_view& view, const vocabulary& v) {
  const std::uint64_t key = view.signature;
  {
    std::lock_guard lock{mutex_};
    if (auto it = map_.find(key); it != map_.end())
      return it->second;
  }
  auto c = lexer_class::make(view.next, view.fin, v);
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
