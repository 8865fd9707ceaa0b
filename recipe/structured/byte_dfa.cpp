#include "recipe/structured/byte_automaton.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>

namespace deepinfer::recipe::so {

namespace {

// The states a closure has reached, kept across calls (reached: stamp == gen). A flag vector
// per call, one flag per NFA state, made determinizing large NFAs quadratic: one closure per
// DFA state and byte range, each clearing the whole NFA's flags.
struct closure_marks {
  std::vector<std::uint32_t> stamp;
  std::uint32_t gen = 0;
  void start(std::size_t n) {
    if (stamp.size() < n)
      stamp.resize(n, 0);
    if (++gen == 0) {
      std::fill(stamp.begin(), stamp.end(), 0u);
      gen = 1;
    }
  }
  bool mark(std::int32_t s) {
    auto& m = stamp[static_cast<std::size_t>(s)];
    if (m == gen)
      return false;
    m = gen;
    return true;
  }
};

void closure(const byte_nfa& nfa, std::vector<std::int32_t>& set) {
  thread_local closure_marks seen;
  thread_local std::vector<std::int32_t> stack;
  seen.start(nfa.states().size());
  stack.clear();
  for (auto s : set)
    if (seen.mark(s))
      stack.push_back(s);
  while (!stack.empty()) {
    auto s = stack.back();
    stack.pop_back();
    for (auto t : nfa.states()[s].eps)
      if (seen.mark(t)) {
        set.push_back(t);
        stack.push_back(t);
      }
  }
  std::sort(set.begin(), set.end());
}


} // namespace

byte_dfa byte_dfa::determinize(const byte_nfa& nfa, std::int32_t start, budget& b) {
  byte_dfa d;
  std::map<std::vector<std::int32_t>, std::int32_t> ids;
  std::vector<std::vector<std::int32_t>> sets;
  std::vector<std::int32_t> s0{start};
  closure(nfa, s0);
  ids.emplace(s0, 0);
  sets.push_back(std::move(s0));
  std::vector<std::vector<std::uint16_t>> tags;
  for (std::size_t i = 0; i < sets.size(); ++i) {
    b.tick();
    b.states(sets.size());
    const auto cur = sets[i];
    std::vector<std::uint16_t> t;
    std::vector<int> cuts{0, 256};
    for (auto s : cur) {
      const auto& st = nfa.states()[s];
      if (st.tag >= 0)
        t.push_back(static_cast<std::uint16_t>(st.tag));
      for (auto e : st.edges) {
        cuts.push_back(e.lo);
        cuts.push_back(e.hi + 1);
      }
    }
    std::sort(t.begin(), t.end());
    t.erase(std::unique(t.begin(), t.end()), t.end());
    tags.push_back(std::move(t));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    d.next_.resize((i + 1) * 256, -1);
    for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
      const int lo = cuts[c];
      std::vector<std::int32_t> tgt;
      for (auto s : cur)
        for (auto e : nfa.states()[s].edges)
          if (e.lo <= lo && lo <= e.hi)
            tgt.push_back(e.to);
      if (tgt.empty())
        continue;
      closure(nfa, tgt);
      tgt.erase(std::unique(tgt.begin(), tgt.end()), tgt.end());
      auto [it, fresh] = ids.emplace(tgt, static_cast<std::int32_t>(sets.size()));
      if (fresh)
        sets.push_back(tgt);
      for (int x = lo; x < cuts[c + 1]; ++x)
        d.next_[i * 256 + x] = it->second;
    }
  }
  d.accept_off_.assign(1, 0);
  for (auto& t : tags) {
    d.accept_.insert(d.accept_.end(), t.begin(), t.end());
    d.accept_off_.push_back(static_cast<std::uint32_t>(d.accept_.size()));
  }
  d.finish();
  return d;
}

void byte_dfa::finish() {
  const std::int32_t n = size();
  // 1. distance to a final state over reversed edges (CSR, one entry per distinct edge);
  //    unreachable means dead.
  std::vector<std::int32_t> stamp(static_cast<std::size_t>(n), -1), cnt(static_cast<std::size_t>(n) + 1, 0);
  std::vector<std::pair<std::int32_t, std::int32_t>> edges;
  for (std::int32_t q = 0; q < n; ++q) {
    const auto* row = next_.data() + static_cast<std::size_t>(q) * 256;
    for (int c = 0; c < 256; ++c)
      if (auto t = row[c]; t >= 0 && stamp[t] != q) {
        stamp[t] = q;
        edges.emplace_back(t, q);
        ++cnt[static_cast<std::size_t>(t) + 1];
      }
  }
  for (std::int32_t q = 0; q < n; ++q)
    cnt[q + 1] += cnt[q];
  std::vector<std::int32_t> rev(edges.size());
  {
    auto pos = cnt;
    for (auto [t, q] : edges)
      rev[pos[t]++] = q;
  }
  std::vector<std::int32_t> dist(static_cast<std::size_t>(n), -1);
  std::vector<std::int32_t> queue;
  queue.reserve(static_cast<std::size_t>(n));
  for (std::int32_t q = 0; q < n; ++q)
    if (is_final(q))
      dist[q] = 0, queue.push_back(q);
  for (std::size_t h = 0; h < queue.size(); ++h) {
    const auto q = queue[h];
    for (auto i = cnt[q]; i < cnt[q + 1]; ++i)
      if (auto p = rev[i]; dist[p] < 0)
        dist[p] = dist[q] + 1, queue.push_back(p);
  }
  // 2. renumber live states reachable from the start, in BFS order.
  std::vector<std::int32_t> id(static_cast<std::size_t>(n), -1), order;
  if (n > 0 && dist[0] >= 0) {
    id[0] = 0;
    order.push_back(0);
    for (std::size_t i = 0; i < order.size(); ++i) {
      const auto* row = next_.data() + static_cast<std::size_t>(order[i]) * 256;
      for (int c = 0; c < 256; ++c)
        if (auto t = row[c]; t >= 0 && dist[t] >= 0 && id[t] < 0) {
          id[t] = static_cast<std::int32_t>(order.size());
          order.push_back(t);
        }
    }
  }
  std::vector<std::int32_t> next(order.size() * 256, -1);
  std::vector<std::uint32_t> off{0};
  std::vector<std::uint16_t> acc;
  dist_.assign(order.size(), 0);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto q = order[i];
    const auto* row = next_.data() + static_cast<std::size_t>(q) * 256;
    auto* out = next.data() + i * 256;
    for (int c = 0; c < 256; ++c)
      if (auto t = row[c]; t >= 0)
        out[c] = id[t];
    for (auto a : accepts(q))
      acc.push_back(a);
    off.push_back(static_cast<std::uint32_t>(acc.size()));
    dist_[i] = dist[q];
  }
  next_ = std::move(next);
  accept_off_ = std::move(off);
  accept_ = std::move(acc);
}

std::string byte_dfa::shortest_from(std::int32_t q) const {
  std::string out;
  while (!is_final(q)) {
    for (int c = 0; c < 256; ++c)
      if (auto t = step(q, static_cast<std::uint8_t>(c)); t >= 0 && dist_[t] == dist_[q] - 1) {
        out.push_back(static_cast<char>(c));
        q = t;
        break;
      }
  }
  return out;
}

byte_dfa byte_dfa::from_table(std::vector<std::int32_t> next, const std::vector<std::uint8_t>& final) {
  byte_dfa d;
  d.next_ = std::move(next);
  d.accept_off_.assign(1, 0);
  for (auto f : final) {
    if (f)
      d.accept_.push_back(0);
    d.accept_off_.push_back(static_cast<std::uint32_t>(d.accept_.size()));
  }
  d.finish();
  return d;
}

byte_dfa byte_dfa::counted(const byte_dfa& unit, std::uint8_t open, std::uint8_t close, std::uint32_t min,
                           std::uint32_t max, budget& b) {
  // States: 0 = leading whitespace, 1 = end, then for each count k the unit's non-final states.
  std::vector<std::int32_t> inner(static_cast<std::size_t>(unit.size()), -1);
  std::int32_t m = 0;
  for (std::int32_t q = 0; q < unit.size(); ++q)
    if (!unit.is_final(q))
      inner[q] = m++;
  const std::uint32_t copies = max == rx::unbounded ? min + 1 : max + 1;
  const std::size_t n = 2 + static_cast<std::size_t>(copies) * static_cast<std::size_t>(m);
  b.states(n);
  std::vector<std::int32_t> next(n * 256, -1);
  std::vector<std::uint8_t> fin(n, 0);
  fin[1] = 1;
  for (std::uint8_t c : {' ', '\t', '\n', '\r'})
    next[c] = 0;
  auto id = [&](std::uint32_t k, std::int32_t q) { return 2 + static_cast<std::int32_t>(k) * m + inner[q]; };
  next[open] = id(0, 0);
  for (std::uint32_t k = 0; k < copies; ++k) {
    b.tick();
    const bool last = k + 1 == copies;
    for (std::int32_t q = 0; q < unit.size(); ++q) {
      if (unit.is_final(q))
        continue;
      auto* row = next.data() + static_cast<std::size_t>(id(k, q)) * 256;
      for (int c = 0; c < 256; ++c) {
        auto t = unit.step(q, static_cast<std::uint8_t>(c));
        if (t < 0)
          continue;
        if (!unit.is_final(t))
          row[c] = id(k, t);
        else if (!last)
          row[c] = id(k + 1, 0);
        else if (max == rx::unbounded)
          row[c] = id(k, 0);
      }
    }
    if (k >= min)
      next[static_cast<std::size_t>(id(k, 0)) * 256 + close] = 1;
  }
  return from_table(std::move(next), fin);
}

byte_dfa byte_dfa::of(const rx& r, budget& b) {
  byte_nfa nfa;
  auto f = nfa.build(r, b);
  nfa.states()[f.end].tag = 0;
  return determinize(nfa, f.start, b);
}

template <class Pair, class Final>
byte_dfa byte_dfa::product(const byte_dfa& a, const byte_dfa& b, budget& bud, Final fin) {
  byte_dfa d;
  if (a.empty())
    return d;
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> ids;
  std::vector<std::pair<std::int32_t, std::int32_t>> pairs{{0, b.empty() ? -1 : 0}};
  ids.emplace(pairs[0], 0);
  d.accept_off_.assign(1, 0);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    bud.tick();
    bud.states(pairs.size());
    auto [qa, qb] = pairs[i];
    d.next_.resize((i + 1) * 256, -1);
    for (int c = 0; c < 256; ++c) {
      auto ta = a.step(qa, static_cast<std::uint8_t>(c));
      if (ta < 0)
        continue;
      auto tb = qb >= 0 ? b.step(qb, static_cast<std::uint8_t>(c)) : -1;
      if (!Pair::keep_dead && tb < 0)
        continue;
      auto [it, fresh] = ids.emplace(std::pair{ta, tb}, static_cast<std::int32_t>(pairs.size()));
      if (fresh)
        pairs.emplace_back(ta, tb);
      d.next_[i * 256 + c] = it->second;
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
  byte_nfa nfa;
  const auto start = nfa.add();
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& p = *parts[i];
    const auto base = static_cast<std::int32_t>(nfa.states().size());
    for (std::int32_t q = 0; q < p.size(); ++q)
      nfa.add();
    for (std::int32_t q = 0; q < p.size(); ++q) {
      auto& st = nfa.states()[base + q];
      if (p.is_final(q))
        st.tag = static_cast<std::int32_t>(i);
      for (int c = 0; c < 256;) {
        auto t = p.step(q, static_cast<std::uint8_t>(c));
        int e = c;
        while (e + 1 < 256 && p.step(q, static_cast<std::uint8_t>(e + 1)) == t)
          ++e;
        if (t >= 0)
          st.edges.push_back({static_cast<std::uint8_t>(c), static_cast<std::uint8_t>(e), base + t});
        c = e + 1;
      }
    }
    if (p.size() > 0)
      nfa.states()[start].eps.push_back(base);
  }
  return determinize(nfa, start, b);
}

} // namespace deepinfer::recipe::so
