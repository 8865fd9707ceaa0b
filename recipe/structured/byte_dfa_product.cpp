#include "recipe/structured/byte_automaton.hpp"
#include "recipe/structured/byte_classes.hpp"

#include <algorithm>
#include <vector>

// Products of byte DFAs: intersections, differences and unions (split from byte_dfa.cpp).

namespace deepinfer::recipe::so {

using detail::class_refiner;
using detail::mix;

namespace {

// Pairs of states to ids by open addressing: a product has one state per pair, and a node-based
// map's allocation per state was most of its time on long counted strings.
class pair_ids {
public:
  /// The id of `key`, inserting `fresh` when absent (second: whether it was).
  std::pair<std::int32_t, bool> emplace(std::uint64_t key, std::int32_t fresh) {
    if ((size_ + 1) * 2 > keys_.size())
      grow();
    auto i = slot(key);
    for (; keys_[i] != empty; i = (i + 1) & (keys_.size() - 1))
      if (keys_[i] == key)
        return {vals_[i], false};
    keys_[i] = key, vals_[i] = fresh, ++size_;
    return {fresh, true};
  }

private:
  static constexpr std::uint64_t empty = ~0ull;  // no pair has it: a product's first state is >= 0
  std::size_t slot(std::uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ull) >> 32) & (keys_.size() - 1);
  }
  void grow() {
    std::vector<std::uint64_t> keys(std::max<std::size_t>(64, keys_.size() * 2), empty);
    std::vector<std::int32_t> vals(keys.size(), -1);
    keys.swap(keys_), vals.swap(vals_);
    for (std::size_t j = 0; j < keys.size(); ++j)
      if (keys[j] != empty) {
        auto i = slot(keys[j]);
        while (keys_[i] != empty)
          i = (i + 1) & (keys_.size() - 1);
        keys_[i] = keys[j], vals_[i] = vals[j];
      }
  }
  std::vector<std::uint64_t> keys_;
  std::vector<std::int32_t> vals_;
  std::size_t size_ = 0;
};

} // namespace

template <class Pair, class Final>
byte_dfa byte_dfa::product(const byte_dfa& a, const byte_dfa& b, budget& bud, Final fin) {
  byte_dfa d;
  if (a.empty())
    return d;
  class_refiner r;
  r.by(a.cls_);
  r.by(b.cls_);
  d.set_classes(r.cls, r.nc);
  const std::size_t nc = r.nc;
  auto key = [](std::int32_t qa, std::int32_t qb) {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(qa)) << 32 | static_cast<std::uint32_t>(qb);
  };
  pair_ids ids;
  std::vector<std::pair<std::int32_t, std::int32_t>> pairs{{0, b.empty() ? -1 : 0}};
  ids.emplace(key(pairs[0].first, pairs[0].second), 0);
  d.accept_off_.assign(1, 0);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    bud.tick();
    bud.states(pairs.size());
    auto [qa, qb] = pairs[i];
    d.next_.resize((i + 1) * nc, -1);
    for (std::size_t c = 0; c < nc; ++c) {
      const auto byte = d.rep_[c];
      auto ta = a.step(qa, byte);
      if (ta < 0)
        continue;
      auto tb = qb >= 0 ? b.step(qb, byte) : -1;
      if (!Pair::keep_dead && tb < 0)
        continue;
      auto [to, fresh] = ids.emplace(key(ta, tb), static_cast<std::int32_t>(pairs.size()));
      if (fresh)
        pairs.emplace_back(ta, tb);
      d.next_[i * nc + c] = to;
    }
    if (fin(qa, qb))
      for (auto t : a.accepts(qa))
        d.accept_.push_back(t);
    d.accept_off_.push_back(static_cast<std::uint32_t>(d.accept_.size()));
  }
  d.finish();
  return d;
}

namespace {
struct drop_dead {
  static constexpr bool keep_dead = false;
};
struct keep_dead_b {
  static constexpr bool keep_dead = true;
};
} // namespace

byte_dfa byte_dfa::intersect(const byte_dfa& a, const byte_dfa& b, budget& bud) {
  if (b.empty())
    return {};
  return product<drop_dead>(a, b, bud, [&](std::int32_t qa, std::int32_t qb) {
    return a.is_final(qa) && qb >= 0 && b.is_final(qb);
  });
}

byte_dfa byte_dfa::minus(const byte_dfa& a, const byte_dfa& b, budget& bud) {
  return product<keep_dead_b>(a, b, bud, [&](std::int32_t qa, std::int32_t qb) {
    return a.is_final(qa) && (qb < 0 || !b.is_final(qb));
  });
}

byte_dfa byte_dfa::unite(const std::vector<const byte_dfa*>& parts, budget& b) {
  // A state is the list of the parts still alive and their states, (part << 32 | state) sorted
  // by part: with many parts (an object's keys) most are dead after a few bytes, so a state
  // costs its live parts, not all of them.
  byte_dfa d;
  class_refiner r;
  std::vector<std::uint64_t> s0;
  for (std::size_t i = 0; i < parts.size(); ++i)
    if (!parts[i]->empty()) {
      r.by(parts[i]->cls_);
      s0.push_back(static_cast<std::uint64_t>(i) << 32);
    }
  if (s0.empty())
    return d;
  d.set_classes(r.cls, r.nc);
  const std::size_t nc = r.nc;
  std::vector<std::uint64_t> flat;   // every state's list, back to back
  std::vector<std::size_t> begin{0};
  std::vector<std::uint64_t> hashes;
  // Open addressing over state ids (-1: empty), at most half full: a state costs no allocation.
  std::vector<std::int32_t> slots(64, -1);
  auto hash_of = [](const std::uint64_t* p, std::size_t len) {
    std::uint64_t h = len;
    for (std::size_t k = 0; k < len; ++k)
      h = mix(h, p[k]);
    return h ^ (h >> 29);
  };
  auto intern = [&](const std::vector<std::uint64_t>& s) {
    const auto h = hash_of(s.data(), s.size());
    auto mask = slots.size() - 1;
    for (auto i = static_cast<std::size_t>(h) & mask;; i = (i + 1) & mask) {
      const auto id = slots[i];
      if (id < 0)
        break;
      const auto u = static_cast<std::size_t>(id);
      if (hashes[u] == h && begin[u + 1] - begin[u] == s.size() && std::equal(s.begin(), s.end(), flat.data() + begin[u]))
        return id;
    }
    const auto id = static_cast<std::int32_t>(hashes.size());
    flat.insert(flat.end(), s.begin(), s.end());
    begin.push_back(flat.size());
    hashes.push_back(h);
    if (hashes.size() * 2 > slots.size()) {
      slots.assign(slots.size() * 2, -1);
      mask = slots.size() - 1;
      for (std::size_t u = 0; u < hashes.size(); ++u) {
        auto i = static_cast<std::size_t>(hashes[u]) & mask;
        while (slots[i] >= 0)
          i = (i + 1) & mask;
        slots[i] = static_cast<std::int32_t>(u);
      }
    } else {
      auto i = static_cast<std::size_t>(h) & mask;
      while (slots[i] >= 0)
        i = (i + 1) & mask;
      slots[i] = id;
    }
    return id;
  };
  intern(s0);
  // A state with one live part (most of them: past the first bytes, keys part ways) is found
  // by (part, state) directly, without hashing its list.
  std::vector<std::vector<std::int32_t>> single(parts.size());
  auto lookup = [&](const std::vector<std::uint64_t>& s) {
    if (s.size() != 1)
      return intern(s);
    auto& memo = single[static_cast<std::size_t>(s[0] >> 32)];
    if (memo.empty())
      memo.assign(static_cast<std::size_t>(parts[static_cast<std::size_t>(s[0] >> 32)]->size()), -1);
    auto& id = memo[static_cast<std::size_t>(s[0] & 0xffffffffu)];
    if (id < 0)
      id = intern(s);
    return id;
  };
  d.accept_off_.assign(1, 0);
  std::vector<std::uint64_t> cur, nxt;
  for (std::size_t i = 0; i + 1 < begin.size(); ++i) {
    b.tick();
    b.states(begin.size() - 1);
    cur.assign(flat.begin() + static_cast<std::ptrdiff_t>(begin[i]), flat.begin() + static_cast<std::ptrdiff_t>(begin[i + 1]));
    // Distance to a final state: the nearest part's (a union's string is any part's).
    std::int32_t dist = -1;
    for (auto e : cur) {
      const auto part = static_cast<std::size_t>(e >> 32);
      const auto q = static_cast<std::int32_t>(e & 0xffffffffu);
      if (parts[part]->is_final(q))
        d.accept_.push_back(static_cast<std::uint16_t>(part));
      if (const auto pd = parts[part]->dist(q); dist < 0 || pd < dist)
        dist = pd;
    }
    d.dist_.push_back(dist);
    d.accept_off_.push_back(static_cast<std::uint32_t>(d.accept_.size()));
    d.next_.resize((i + 1) * nc, -1);
    for (std::size_t c = 0; c < nc; ++c) {
      const auto byte = d.rep_[c];
      nxt.clear();
      for (auto e : cur) {
        const auto part = e >> 32;
        if (auto t = parts[static_cast<std::size_t>(part)]->step(static_cast<std::int32_t>(e & 0xffffffffu), byte); t >= 0)
          nxt.push_back(part << 32 | static_cast<std::uint32_t>(t));
      }
      if (!nxt.empty())
        d.next_[i * nc + c] = lookup(nxt);
    }
  }
  // No finish: every state is live (each part's states are), reached from the start, numbered
  // in the order finish would number them (states in order, targets by class), and the
  // refinement of the parts' classes is exact (every part state is in some tuple).
  return d;
}

} // namespace deepinfer::recipe::so
