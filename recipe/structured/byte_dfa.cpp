#include "recipe/structured/byte_automaton.hpp"
#include "recipe/structured/byte_classes.hpp"

#include <algorithm>
#include <deque>
#include <array>
#include <optional>
#include <unordered_map>

namespace deepinfer::recipe::so {

using detail::class_refiner;
using detail::mix;

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


struct vector_hash {
  std::size_t operator()(const std::vector<std::int32_t>& v) const noexcept {
    std::uint64_t h = v.size();
    for (auto x : v)
      h = mix(h, static_cast<std::uint32_t>(x));
    return static_cast<std::size_t>(h);
  }
};

} // namespace

void byte_dfa::set_classes(const std::array<std::uint8_t, 256>& cls, std::uint32_t nc) {
  cls_ = cls;
  nc_ = nc;
  rep_.fill(0);
  std::vector<bool> seen(nc, false);
  runs_.clear();
  for (int b = 0; b < 256; ++b) {
    if (!seen[cls[b]]) {
      seen[cls[b]] = true;
      rep_[cls[b]] = static_cast<std::uint8_t>(b);
    }
    if (b == 0 || cls[b] != cls[b - 1])
      runs_.push_back(static_cast<std::uint8_t>(b));
  }
}

byte_dfa byte_dfa::determinize(const byte_nfa& nfa, std::int32_t start, budget& b) {
  byte_dfa d;
  // The classes: ranges between every edge's ends.
  std::array<bool, 257> cut{};
  for (const auto& st : nfa.states())
    for (auto e : st.edges)
      cut[e.lo] = true, cut[static_cast<std::size_t>(e.hi) + 1] = true;
  std::array<std::uint8_t, 256> cls{};
  std::uint32_t nc = 0;
  for (int x = 0; x < 256; ++x) {
    if (x > 0 && cut[static_cast<std::size_t>(x)])
      ++nc;
    cls[static_cast<std::size_t>(x)] = static_cast<std::uint8_t>(nc);
  }
  ++nc;
  d.set_classes(cls, nc);
  std::unordered_map<std::vector<std::int32_t>, std::int32_t, vector_hash> ids;
  std::deque<std::vector<std::int32_t>> sets;
  std::vector<std::int32_t> s0{start};
  closure(nfa, s0);
  ids.emplace(s0, 0);
  sets.push_back(std::move(s0));
  std::vector<std::vector<std::uint16_t>> tags;
  std::vector<int> cuts;
  std::vector<std::int32_t> tgt;
  for (std::size_t i = 0; i < sets.size(); ++i) {
    b.tick();
    b.states(sets.size());
    const auto& cur = sets[i];
    std::vector<std::uint16_t> t;
    cuts.assign({0, 256});
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
    d.next_.resize((i + 1) * nc, -1);
    for (std::size_t c = 0; c + 1 < cuts.size(); ++c) {
      const int lo = cuts[c];
      tgt.clear();
      for (auto s : sets[i])
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
      // A state's ranges are unions of whole classes (its cuts are among the NFA's).
      for (std::uint32_t k = cls[static_cast<std::size_t>(lo)]; k <= cls[static_cast<std::size_t>(cuts[c + 1] - 1)]; ++k)
        d.next_[i * nc + k] = it->second;
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

void byte_dfa::finish(bool merge_classes) {
  const std::int32_t n = size();
  const std::size_t nc = nc_;
  // 1. distance to a final state over reversed edges (CSR, one entry per distinct edge);
  //    unreachable means dead.
  std::vector<std::int32_t> stamp(static_cast<std::size_t>(n), -1), cnt(static_cast<std::size_t>(n) + 1, 0);
  std::vector<std::pair<std::int32_t, std::int32_t>> edges;
  for (std::int32_t q = 0; q < n; ++q) {
    const auto* row = next_.data() + static_cast<std::size_t>(q) * nc;
    for (std::size_t c = 0; c < nc; ++c)
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
  // 2. renumber live states reachable from the start, in BFS order (classes in order, so as
  //    bytes in order would).
  std::vector<std::int32_t> id(static_cast<std::size_t>(n), -1), order;
  if (n > 0 && dist[0] >= 0) {
    id[0] = 0;
    order.push_back(0);
    for (std::size_t i = 0; i < order.size(); ++i) {
      const auto* row = next_.data() + static_cast<std::size_t>(order[i]) * nc;
      for (std::size_t c = 0; c < nc; ++c)
        if (auto t = row[c]; t >= 0 && dist[t] >= 0 && id[t] < 0) {
          id[t] = static_cast<std::int32_t>(order.size());
          order.push_back(t);
        }
    }
  }
  // Already live, reachable and in BFS order (products and counts build them so): keep the table.
  bool same = order.size() == static_cast<std::size_t>(n);
  for (std::size_t i = 0; same && i < order.size(); ++i)
    same = order[i] == static_cast<std::int32_t>(i);
  if (same) {
    dist_ = std::move(dist);
    if (merge_classes)
      merge_equal_classes();
    return;
  }
  std::vector<std::int32_t> next(order.size() * nc, -1);
  std::vector<std::uint32_t> off{0};
  std::vector<std::uint16_t> acc;
  dist_.assign(order.size(), 0);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto q = order[i];
    const auto* row = next_.data() + static_cast<std::size_t>(q) * nc;
    auto* out = next.data() + i * nc;
    for (std::size_t c = 0; c < nc; ++c)
      if (auto t = row[c]; t >= 0 && dist[t] >= 0)
        out[c] = id[t];
    for (auto a : accepts(q))
      acc.push_back(a);
    off.push_back(static_cast<std::uint32_t>(acc.size()));
    dist_[i] = dist[q];
  }
  accept_off_ = std::move(off);
  accept_ = std::move(acc);
  next_ = std::move(next);
  if (merge_classes)
    merge_equal_classes();
}

void byte_dfa::merge_equal_classes() {
  // 3. merge classes that no state tells apart (a class's column of targets is its identity),
  //    keeping ids in the order of their smallest byte.
  const std::size_t m = static_cast<std::size_t>(size());
  const std::size_t nc = nc_;
  auto& next = next_;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> by_hash;
  std::vector<std::uint32_t> merged(nc, 0), keep;
  std::vector<std::uint64_t> col(nc, 0x51ed27);
  for (std::size_t q = 0; q < m; ++q)  // row by row: the table is read in order
    for (std::size_t c = 0; c < nc; ++c)
      col[c] = mix(col[c], static_cast<std::uint32_t>(next[q * nc + c]));
  for (std::size_t c = 0; c < nc; ++c) {
    auto& cands = by_hash[col[c]];
    bool found = false;
    for (auto k : cands) {
      const auto kc = keep[k];
      bool same = true;
      for (std::size_t q = 0; q < m && same; ++q)
        same = next[q * nc + c] == next[q * nc + kc];
      if (same) {
        merged[c] = k, found = true;
        break;
      }
    }
    if (!found) {
      merged[c] = static_cast<std::uint32_t>(keep.size());
      cands.push_back(merged[c]);
      keep.push_back(static_cast<std::uint32_t>(c));
    }
  }
  if (keep.size() < nc) {
    std::vector<std::int32_t> packed(m * keep.size());
    for (std::size_t q = 0; q < m; ++q)
      for (std::size_t k = 0; k < keep.size(); ++k)
        packed[q * keep.size() + k] = next[q * nc + keep[k]];
    next = std::move(packed);
    std::array<std::uint8_t, 256> cls{};
    for (int b = 0; b < 256; ++b)
      cls[static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(merged[cls_[static_cast<std::size_t>(b)]]);
    set_classes(cls, static_cast<std::uint32_t>(keep.size()));
  }
}

std::string byte_dfa::shortest_from(std::int32_t q) const {
  std::string out;
  while (!is_final(q)) {
    for (std::uint32_t c = 0; c < nc_; ++c)
      if (auto t = step_class(q, c); t >= 0 && dist_[t] == dist_[q] - 1) {
        out.push_back(static_cast<char>(rep_[c]));
        q = t;
        break;
      }
  }
  return out;
}

byte_dfa byte_dfa::counted(const byte_dfa& unit, std::uint8_t open, std::uint8_t close, std::uint32_t min,
                           std::uint32_t max, budget& b, std::uint32_t max_ws) {
  // States: 0 = leading whitespace, 1 = end, then for each count k the unit's non-final states,
  // then (whitespace bounded) one state per whitespace byte read before `open`.
  std::vector<std::int32_t> inner(static_cast<std::size_t>(unit.size()), -1);
  std::int32_t m = 0;
  for (std::int32_t q = 0; q < unit.size(); ++q)
    if (!unit.is_final(q))
      inner[q] = m++;
  // The unit's classes, with the delimiters and whitespace in classes of their own.
  class_refiner r;
  r.by(unit.cls_);
  std::array<std::uint8_t, 256> special{};
  special[' '] = 1, special['\t'] = 2, special['\n'] = 3, special['\r'] = 4, special[open] = 5, special[close] = 6;
  r.by(special);
  byte_dfa d;
  const bool bounded = max != rx::unbounded;
  if (bounded && min > max)
    return d;  // no count fits: the empty language
  d.set_classes(r.cls, r.nc);
  const std::size_t nc = r.nc;
  // Built live, reachable and with its distances, so it needs no `finish` (a long counted
  // string is 10^4..10^5 states; renumbering copied them all): counts 0..full-1 hold the
  // unit's non-final states; bounded, count `max` is one state that can only close (entering
  // the unit there could never end); unbounded, count `min` loops to itself.
  const std::uint32_t full = bounded ? max : min + 1;
  const std::size_t body = 2 + static_cast<std::size_t>(full) * static_cast<std::size_t>(m) + (bounded ? 1 : 0);
  const std::size_t gap = max_ws == rx::unbounded ? 0 : max_ws;
  const std::size_t n = body + gap;
  b.states(n);
  std::vector<std::int32_t> next(n * nc, -1);
  // Leading whitespace: state 0 loops, or walks the gap states body .. body + gap - 1.
  for (std::size_t g = 0; g <= gap; ++g) {
    const std::size_t q = g == 0 ? 0 : body + g - 1;
    const auto to = gap == 0 ? (max_ws == 0 ? -1 : 0) : g < gap ? static_cast<std::int32_t>(body + g) : -1;
    for (std::uint8_t c : {' ', '\t', '\n', '\r'})
      next[q * nc + r.cls[c]] = to;
  }
  auto id = [&](std::uint32_t k, std::int32_t q) { return 2 + static_cast<std::int32_t>(k) * m + inner[q]; };
  const std::int32_t last = bounded ? 2 + static_cast<std::int32_t>(full) * m : -1;  // count max
  // Between units at count k (k = full, bounded: the last state).
  auto at = [&](std::uint32_t k) { return k == full ? (bounded ? last : id(min, 0)) : id(k, 0); };
  for (std::size_t g = 0; g <= gap; ++g)
    next[(g == 0 ? 0 : body + g - 1) * nc + r.cls[open]] = at(0);
  for (std::uint32_t k = 0; k < full; ++k) {
    b.tick();
    for (std::int32_t q = 0; q < unit.size(); ++q) {
      if (unit.is_final(q))
        continue;
      auto* row = next.data() + static_cast<std::size_t>(id(k, q)) * nc;
      for (std::size_t c = 0; c < nc; ++c) {
        auto t = unit.step(q, d.rep_[c]);
        if (t >= 0)
          row[c] = unit.is_final(t) ? at(k + 1) : id(k, t);
      }
    }
    if (k >= min)
      next[static_cast<std::size_t>(id(k, 0)) * nc + r.cls[close]] = 1;
  }
  if (bounded)
    next[static_cast<std::size_t>(last) * nc + r.cls[close]] = 1;
  // Distances: between units at count k, close (k >= min) or the shortest units up to min;
  // inside a unit, finish it first.
  const auto u0 = static_cast<std::int64_t>(unit.dist(0));
  auto between = [&](std::uint32_t k) {
    return static_cast<std::int32_t>(k >= min ? 1 : static_cast<std::int64_t>(min - k) * u0 + 1);
  };
  d.dist_.assign(n, 0);
  for (std::uint32_t k = 0; k < full; ++k)
    for (std::int32_t q = 0; q < unit.size(); ++q)
      if (!unit.is_final(q)) {
        const std::uint32_t after = bounded || k < min ? k + 1 : k;
        d.dist_[static_cast<std::size_t>(id(k, q))] =
            q == 0 ? between(k) : unit.dist(q) + between(after);
      }
  if (bounded)
    d.dist_[static_cast<std::size_t>(last)] = 1;
  d.dist_[1] = 0;
  d.dist_[0] = 1 + d.dist_[static_cast<std::size_t>(at(0))];
  for (std::size_t g = body; g < n; ++g)
    d.dist_[g] = d.dist_[0];
  d.next_ = std::move(next);
  d.accept_off_.assign(1, 0);
  for (std::size_t q = 0; q < n; ++q) {
    if (q == 1)
      d.accept_.push_back(0);
    d.accept_off_.push_back(static_cast<std::uint32_t>(d.accept_.size()));
  }
  return d;
}

std::optional<byte_dfa> byte_dfa::spaced_literal(std::span<const std::string> pieces, std::uint32_t max_ws) {
  auto is_ws = [](unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  // A gap is one state looping on whitespace, or (bounded) a chain of max_ws + 1 states.
  const std::size_t gap = max_ws == rx::unbounded ? 1 : static_cast<std::size_t>(max_ws) + 1;
  std::size_t n = 1;  // the final state
  for (auto& p : pieces) {
    // A piece that is empty or starts with whitespace would make a gap state nondeterministic.
    if (p.empty() || is_ws(static_cast<unsigned char>(p[0])))
      return std::nullopt;
    n += gap + p.size() - 1;
  }
  if (pieces.empty())
    return std::nullopt;
  // Classes: whitespace, each byte the pieces use, everything else.
  std::array<std::uint8_t, 256> ws{}, used{};
  for (int c : {' ', '\t', '\n', '\r'})
    ws[static_cast<std::size_t>(c)] = 1;
  for (auto& p : pieces)
    for (unsigned char c : p)
      used[c] = 1;
  std::array<std::uint8_t, 256> own{};
  std::uint32_t distinct = 0;
  for (int c = 0; c < 256; ++c)
    if (used[static_cast<std::size_t>(c)] != 0) {
      if (++distinct > 255)
        return std::nullopt;
      own[static_cast<std::size_t>(c)] = static_cast<std::uint8_t>(distinct);
    }
  class_refiner r;
  r.by(ws);
  r.by(own);
  byte_dfa d;
  d.set_classes(r.cls, r.nc);
  const std::size_t nc = r.nc;
  // States in order: each piece's gap states (whitespace loops, or moves down the chain), then
  // one state per byte after its first; the last piece's last byte goes to the final state.
  d.next_.assign(n * nc, -1);
  d.dist_.assign(n, 0);
  std::size_t left = 0;  // bytes of the pieces from the current one on
  for (auto& p : pieces)
    left += p.size();
  std::size_t q = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const auto first = static_cast<unsigned char>(pieces[i][0]);
    const std::size_t after = q + gap;  // the state after the piece's first byte
    for (std::size_t g = 0; g < gap; ++g) {
      const auto ws_to = max_ws == rx::unbounded ? static_cast<std::int32_t>(q) : g + 1 < gap ? static_cast<std::int32_t>(q + 1) : -1;
      for (int c : {' ', '\t', '\n', '\r'})
        d.next_[q * nc + r.cls[static_cast<std::size_t>(c)]] = ws_to;
      d.next_[q * nc + r.cls[first]] = static_cast<std::int32_t>(after);
      d.dist_[q] = static_cast<std::int32_t>(left);
      ++q;
    }
    --left;
    for (std::size_t k = 1; k < pieces[i].size(); ++k) {
      d.next_[q * nc + r.cls[static_cast<unsigned char>(pieces[i][k])]] = static_cast<std::int32_t>(q + 1);
      d.dist_[q] = static_cast<std::int32_t>(left--);
      ++q;
    }
  }
  d.accept_off_.assign(n + 1, 0);
  d.accept_off_[n] = 1;
  d.accept_.push_back(0);
  // No finish: every state is live and reached, each piece byte moves somewhere no other byte
  // does (so no two classes merge), and the distance to the end is the bytes of the pieces left
  // (whitespace is never needed). Unbounded, the numbering is breadth-first too.
  return d;
}

byte_dfa byte_dfa::of(const rx& r, budget& b) {
  byte_nfa nfa;
  auto f = nfa.build(r, b);
  nfa.states()[f.end].tag = 0;
  return determinize(nfa, f.start, b);
}

} // namespace deepinfer::recipe::so
