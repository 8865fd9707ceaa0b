#include "recipe/structured/lexer_class.hpp"

#include "recipe/structured/level_trie.hpp"
#include "recipe/structured/token_bits.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <unordered_map>

namespace deepinfer::recipe::so {

namespace {
// Scratch reused by every view this thread builds: a lexer state's view number is valid when
// its stamp is the current generation, so a view never clears (or allocates) a table the size
// of the whole lexer (a long counted string has 10^4..10^5 states, a view ~100).
struct view_scratch {
  std::vector<std::uint32_t> stamp;
  std::vector<std::int32_t> id;
  std::uint32_t gen = 0;
};

// A live node of the walk and the lexer state it is in.
struct live_node {
  std::uint32_t node;
  std::int32_t state;
};
constexpr std::uint32_t none = ~0u;

struct level_scan {
  std::uint32_t first = none;  // the first and last live node of the level (none: no live)
  std::uint32_t last = 0;
  std::size_t ends = 0;
  std::size_t tokens = 0;
};

// One level of the walk, nodes [lo, hi): a node's state is its parent's stepped by its byte's
// class. States are row offsets into `table` (state << shift), `dead` the dead row's. Branch-
// free (masks instead of ifs: whether a node is alive is data); a separate function so that
// its dozen pointers stay in registers. A node without a live token ORs into one of 64 spare
// words after the mask (one word for all would chain every such node through a store and a
// load of that word). Live final nodes are appended to `ends` from `ne` on. `State` is 16 bits
// when the table allows (half the per-node state array the walk writes and reads back).
template <class State>
level_scan scan_level(std::uint32_t lo, std::uint32_t hi, const std::uint32_t* __restrict link,
                      const token_id* __restrict tok, const std::uint8_t* __restrict cls,
                      const State* __restrict table, const std::uint8_t* __restrict fin, std::int32_t dead,
                      unsigned shift, State* __restrict st, live_node* __restrict ends,
                      std::uint64_t* __restrict bits, std::uint32_t spare, std::size_t ne) {
  level_scan r;
  std::uint32_t first = none, last = 0;
  std::size_t count = 0;
  for (std::uint32_t k = lo; k < hi; ++k) {
    const auto l = link[k];
    const std::int32_t s = table[st[l >> 8] + cls[l & 255u]];  // a row offset below 2^31 (2^15 in 16 bits)
    st[k] = s;
    const std::uint32_t live = static_cast<std::uint32_t>(s - dead) >> 31;  // s < dead
    first = std::min(first, k | (live - 1u));
    last = std::max(last, k & (0u - live));
    const auto tk = static_cast<std::uint32_t>(tok[k]);
    const std::uint32_t hit = live & ~(tk >> 31);
    const std::uint32_t m = 0u - hit;
    const std::uint32_t word = ((tk >> 6) & m) | ((spare + (k & 63u)) & ~m);
    bits[word] |= 1ull << (tk & 63u);
    count += hit;
    ends[ne] = {k, s};
    ne += fin[static_cast<std::uint32_t>(s) >> shift];
  }
  r.first = first;
  r.last = last;
  r.ends = ne;
  r.tokens = count;
  return r;
}

std::vector<live_node>& ends_buffer() {
  thread_local std::vector<live_node> b;
  return b;
}

// The view as a small table of `State` row offsets, then the level-by-level walk; returns how
// many live final nodes are in `ends_buffer()`.
template <class State, class Hook>
std::size_t walk(const byte_dfa& d, const lexer_view& view, const level_trie& lt, const byte_trie& t,
                 const std::array<std::uint8_t, 256>& cls, const std::array<std::uint8_t, 256>& class_byte,
                 std::uint32_t nclass, unsigned shift, const std::unordered_map<std::int32_t, std::int32_t>& id,
                 std::vector<std::uint64_t>& bits, std::size_t spare, std::size_t& count, Hook&& after_first_level) {
  const auto nv = static_cast<std::int32_t>(view.order.size());
  const std::int32_t dead = nv << shift;
  thread_local std::vector<State> table;
  thread_local std::vector<std::uint8_t> fin;
  table.assign(static_cast<std::size_t>(nv + 1) << shift, static_cast<State>(dead));
  fin.assign(static_cast<std::size_t>(nv + 1), 0);
  for (std::int32_t i = 0; i < nv; ++i) {
    const auto q = view.order[static_cast<std::size_t>(i)];
    fin[static_cast<std::size_t>(i)] = d.is_final(q) ? 1 : 0;
    if (static_cast<std::size_t>(i) >= view.expanded)
      continue;  // no token reads further (as in the view)
    for (std::uint32_t j = 0; j < nclass; ++j)
      if (const auto t = d.step(q, class_byte[j]); t >= 0)
        table[(static_cast<std::size_t>(i) << shift) + j] = static_cast<State>(id.at(t) << shift);
  }
  // Each node's state, written level by level: a level reads only its parents', written by the
  // level before (nodes outside a level's scanned range are never read). Live nodes whose state
  // is final go to `ends` (kept below when they have children: tokens below them may end the
  // lexeme there and continue with what follows it, their rests go into that state's group).
  // Both buffers are the trie's size, reused by this thread.
  thread_local std::vector<State> st;
  auto& ends_buf = ends_buffer();
  if (st.size() < lt.size())
    st.resize(lt.size());
  if (ends_buf.size() < lt.size())
    ends_buf.resize(lt.size());
  State* S = st.data();
  const auto& multi = lt.multi_token_nodes();
  auto mi = multi.begin();
  std::size_t ne = 0;
  S[0] = 0;
  // Each level scans from the first live parent's first child to the last one's last child.
  std::uint32_t lo = lt.first_child(0), hi = lo + lt.children(0);
  for (bool level1 = true; lo < hi; level1 = false) {
    const auto r = scan_level<State>(lo, hi, lt.links(), lt.first_tokens(), cls.data(), table.data(), fin.data(),
                                     dead, shift, S, ends_buf.data(), bits.data(),
                                     static_cast<std::uint32_t>(spare), ne);
    ne = r.ends;
    count += r.tokens;
    // The few nodes where several tokens end: their other tokens.
    for (mi = std::lower_bound(mi, multi.end(), lo); mi != multi.end() && *mi < hi; ++mi)
      if (S[*mi] != dead) {
        const auto p = lt.preorder(*mi);
        for (auto x = t.tokens_begin(p) + 1; x < t.tokens_end(p); ++x, ++count)
          bits[static_cast<std::size_t>(*x) >> 6] |= 1ull << (*x & 63);
      }
    auto first = r.first, last = r.last;
    if (level1 && first != none) {
      // Depth 1: nodes whose subtrees the hook takes (it kills them), then the live range again.
      after_first_level(lo, hi, S, static_cast<State>(dead), shift);
      first = none, last = 0;
      for (auto k = lo; k < hi; ++k)
        if (S[k] != static_cast<State>(dead)) {
          first = std::min(first, k);
          last = k;
        }
    }
    if (first == none)
      break;
    lo = lt.first_child(first);
    hi = lt.first_child(last) + lt.children(last);
  }
  return ne;
}
} // namespace

lexer_view::lexer_view(const byte_dfa& d, std::int32_t q, std::uint32_t depth) {
  thread_local view_scratch sc;
  if (sc.stamp.size() < static_cast<std::size_t>(d.size())) {
    sc.stamp.resize(static_cast<std::size_t>(d.size()), 0);
    sc.id.resize(static_cast<std::size_t>(d.size()), -1);
  }
  if (++sc.gen == 0) {
    std::fill(sc.stamp.begin(), sc.stamp.end(), 0u);
    sc.gen = 1;
  }
  std::vector<std::uint32_t> dist;
  sc.stamp[static_cast<std::size_t>(q)] = sc.gen;
  sc.id[static_cast<std::size_t>(q)] = 0;
  order.push_back(q);
  dist.push_back(0);
  std::uint64_t h = 0x5bd1e995;
  auto mix = [&](std::uint64_t v) { h = (h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2))) * 0xff51afd7ed558ccdull; };
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto s = order[i];
    mix(d.is_final(s) ? 1 : 0);
    if (dist[i] >= depth)
      continue;  // no token reads further
    expanded = i + 1;
    // Runs of bytes with one target, from the DFA's runs of one class (adjacent runs of
    // classes with the same target merge, so the runs do not depend on how classes are cut).
    const auto runs = d.runs();
    for (std::size_t ri = 0; ri < runs.size();) {
      const int c = runs[ri];
      const auto t = d.step(s, runs[ri]);
      std::size_t rj = ri + 1;
      while (rj < runs.size() && d.step(s, runs[rj]) == t)
        ++rj;
      const int e = rj < runs.size() ? runs[rj] : 256;
      if (t >= 0) {
        const auto ti = static_cast<std::size_t>(t);
        if (sc.stamp[ti] != sc.gen) {
          sc.stamp[ti] = sc.gen;
          sc.id[ti] = static_cast<std::int32_t>(order.size());
          order.push_back(t);
          dist.push_back(dist[i] + 1);
        }
        // Targets are numbered in byte order as before: a run is a range of bytes to one state.
        mix(static_cast<std::uint64_t>(c) << 40 | static_cast<std::uint64_t>(e) << 32 |
            static_cast<std::uint32_t>(sc.id[ti]));
      }
      if (e < 256)
        cuts[static_cast<std::size_t>(e) >> 6] |= 1ull << (e & 63);
      ri = rj;
    }
    mix(0xabcdef);
  }
  signature = h;
}

namespace {
// A view's byte classes (the ranges between its cuts) and the shift that makes a state's row
// offset (state << shift).
struct view_classes {
  std::array<std::uint8_t, 256> cls{};
  std::array<std::uint8_t, 256> class_byte{};
  std::uint32_t nclass = 0;
  unsigned shift = 0;
  explicit view_classes(const lexer_view& view) {
    for (int b = 0; b < 256; ++b) {
      if (b == 0 || (view.cuts[static_cast<std::size_t>(b) >> 6] >> (b & 63) & 1u) != 0)
        class_byte[nclass++] = static_cast<std::uint8_t>(b);
      cls[static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(nclass - 1);
    }
    while ((1u << shift) < nclass)
      ++shift;
  }
};

std::unordered_map<std::int32_t, std::int32_t> view_ids(const lexer_view& view) {
  std::unordered_map<std::int32_t, std::int32_t> id;
  id.reserve(view.order.size() * 2);
  for (std::size_t i = 0; i < view.order.size(); ++i)
    id.emplace(view.order[i], static_cast<std::int32_t>(i));
  return id;
}

// A depth-1 node whose subtree a memo entry gives, and how its entry's states map to the view's.
struct covered_node {
  std::uint8_t byte;
  std::shared_ptr<const subtree_memo::entry> entry;
  const std::vector<std::int32_t>* sub_order;  // the depth-1 view's lexer states
};
} // namespace

std::shared_ptr<const lexer_class> lexer_class::make(const byte_dfa& d, const lexer_view& view, const vocabulary& v,
                                                     subtree_memo* memo) {
  auto c = std::make_shared<lexer_class>();
  const auto& t = v.trie();
  const auto& lt = v.levels();
  const std::size_t spare = v.mask_words();
  std::vector<std::uint64_t> bits(spare + 64, 0);
  std::size_t count = 0;
  // The view as a small table: view states by byte class (the ranges between the view's cuts,
  // ~50 for a string in a union with key literals), plus a dead state whose row is dead. The
  // walk reads the lexer's own rows nowhere.
  const view_classes vc{view};
  const auto& cls = vc.cls;
  const auto& class_byte = vc.class_byte;
  const auto nclass = vc.nclass;
  const auto shift = vc.shift;
  const auto nv = static_cast<std::int32_t>(view.order.size());
  const auto id = view_ids(view);
  // Depth 1: a live node whose state's own view has a memo entry is not walked below; its
  // entry's tokens and ends are added after the walk.
  std::vector<covered_node> covered;
  std::deque<lexer_view> sub_views;
  auto take_level1 = [&](std::uint32_t lo, std::uint32_t hi, auto* S, auto dead, unsigned sh) {
    if (memo == nullptr || t.max_depth() < 2)
      return;
    std::unordered_map<std::int32_t, std::pair<std::shared_ptr<const subtree_memo::entry>, const lexer_view*>> by_state;
    for (auto k = lo; k < hi; ++k) {
      if (S[k] == dead)
        continue;
      const auto vs = static_cast<std::int32_t>(S[k] >> sh);
      auto it = by_state.find(vs);
      if (it == by_state.end()) {
        const auto& sv = sub_views.emplace_back(d, view.order[static_cast<std::size_t>(vs)], t.max_depth() - 1u);
        bool build = false;
        auto e = memo->find(sv.signature, build);
        if (!e && build) {
          e = subtree_memo::make(d, sv, v);
          memo->put(sv.signature, e);
        }
        it = by_state.emplace(vs, std::pair{std::move(e), &sv}).first;
      }
      if (it->second.first) {
        covered.push_back({static_cast<std::uint8_t>(lt.links()[k] & 255u), it->second.first, &it->second.second->order});
        S[k] = dead;
      }
    }
  };
  const bool narrow = (static_cast<std::size_t>(nv + 1) << shift) < (1u << 15);
  std::size_t ne = 0;
  if (narrow)
    ne = walk<std::uint16_t>(d, view, lt, t, cls, class_byte, nclass, shift, id, bits, spare, count, take_level1);
  else
    ne = walk<std::int32_t>(d, view, lt, t, cls, class_byte, nclass, shift, id, bits, spare, count, take_level1);
  std::stable_sort(covered.begin(), covered.end(),
                   [](const covered_node& x, const covered_node& y) { return x.entry.get() < y.entry.get(); });
  // Ends: (view state, preorder node) of live final nodes with children, walked or kept.
  std::vector<std::pair<std::int32_t, std::uint32_t>> ends;
  {
    const live_node* E = ends_buffer().data();
    for (std::size_t k = 0; k < ne; ++k)
      if (lt.children(E[k].node) != 0)
        ends.emplace_back(E[k].state >> shift, lt.preorder(E[k].node));
  }
  // Kept tokens: an entry that covers most of its tokens here is ORed in as its whole mask less
  // the first bytes it does not cover (a word-wise OR instead of ~10^5 bit sets); else token
  // by token.
  std::vector<std::uint64_t> whole;
  for (std::size_t k = 0; k < covered.size();) {
    const auto* e = covered[k].entry.get();
    std::array<bool, 256> here{};
    std::size_t n = 0, end = k;
    for (; end < covered.size() && covered[end].entry.get() == e; ++end) {
      const auto b = covered[end].byte;
      here[b] = true;
      n += e->tok_off[b + 1u] - e->tok_off[b];
      for (auto i = e->end_off[b]; i < e->end_off[b + 1u]; ++i)
        ends.emplace_back(id.at((*covered[end].sub_order)[e->ends[i].first]), e->ends[i].second);
    }
    count += n;
    auto set_byte = [&](std::uint64_t* m, int b, bool on) {
      for (auto i = e->tok_off[static_cast<std::size_t>(b)]; i < e->tok_off[static_cast<std::size_t>(b) + 1u]; ++i) {
        const auto tk = e->tokens[i];
        if (on)
          m[static_cast<std::size_t>(tk) >> 6] |= 1ull << (tk & 63);
        else
          m[static_cast<std::size_t>(tk) >> 6] &= ~(1ull << (tk & 63));
      }
    };
    if (!e->all.empty() && 2 * n > e->tokens.size()) {
      whole = e->all;
      for (int b = 0; b < 256; ++b)
        if (!here[static_cast<std::size_t>(b)])
          set_byte(whole.data(), b, false);
      for (std::size_t w = 0; w < whole.size(); ++w)
        bits[w] |= whole[w];
    } else {
      for (int b = 0; b < 256; ++b)
        if (here[static_cast<std::size_t>(b)])
          set_byte(bits.data(), b, true);
    }
    k = end;
  }
  std::map<std::int32_t, byte_trie> groups;
  std::vector<std::uint8_t> path(t.max_depth() + 1u, 0);
  for (const auto& [state, i] : ends) {
    auto& g = groups[state];
    const auto dep = t.depth(i);
    for (std::uint32_t j = i + 1; j < t.skip(i); ++j) {
      path[t.depth(j)] = t.byte(j);
      for (auto p = t.tokens_begin(j); p != t.tokens_end(j); ++p)
        g.add(std::string_view{reinterpret_cast<const char*>(path.data()) + dep + 1,
                               static_cast<std::size_t>(t.depth(j) - dep)}, *p);
    }
  }
  bits.resize(spare);
  if (count > 2048) {
    c->dense = std::move(bits);
    c->bytes += c->dense.size() * 8;
  } else {
    c->sparse = token_ids(bits);
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

std::shared_ptr<const subtree_memo::entry> subtree_memo::find(std::uint64_t sig, bool& build) {
  std::lock_guard lock{mutex_};
  if (auto it = map_.find(sig); it != map_.end())
    return it->second;
  if (seen_.size() > (1u << 20))
    seen_.clear();  // a bound on the sightings kept; a view seen again after this is counted anew
  build = ++seen_[sig] >= 2;
  return nullptr;
}

void subtree_memo::put(std::uint64_t sig, std::shared_ptr<const entry> e) {
  std::lock_guard lock{mutex_};
  if (bytes_ + e->bytes() > max_bytes_) {
    map_.clear();
    bytes_ = 0;
  }
  if (map_.emplace(sig, e).second)
    bytes_ += e->bytes();
}

std::shared_ptr<const subtree_memo::entry> subtree_memo::make(const byte_dfa& d, const lexer_view& view,
                                                              const vocabulary& v) {
  // The view's table (as the walk's, 32-bit states, dead = nv), then below each first byte a
  // depth-first walk from the view's first state over the preorder trie.
  const view_classes vc{view};
  const auto nv = static_cast<std::int32_t>(view.order.size());
  const auto id = view_ids(view);
  const std::size_t nc = vc.nclass;
  std::vector<std::int32_t> table(static_cast<std::size_t>(nv + 1) * nc, nv);
  std::vector<std::uint8_t> fin(static_cast<std::size_t>(nv + 1), 0);
  for (std::int32_t i = 0; i < nv; ++i) {
    const auto q = view.order[static_cast<std::size_t>(i)];
    fin[static_cast<std::size_t>(i)] = d.is_final(q) ? 1 : 0;
    if (static_cast<std::size_t>(i) >= view.expanded)
      continue;
    for (std::size_t j = 0; j < nc; ++j)
      if (const auto to = d.step(q, vc.class_byte[j]); to >= 0)
        table[static_cast<std::size_t>(i) * nc + j] = id.at(to);
  }
  const auto& t = v.trie();
  auto e = std::make_shared<entry>();
  std::array<std::uint32_t, 256> child{};
  child.fill(0);
  for (std::uint32_t j = 1; j < t.size(); j = t.skip(j))
    child[t.byte(j)] = j;
  std::vector<std::int32_t> st(static_cast<std::size_t>(t.max_depth()) + 1u, 0);
  // Written through raw pointers into buffers the size of the vocabulary (no per-node vector
  // growth), then copied out at their size.
  thread_local std::vector<token_id> tok_buf;
  thread_local std::vector<std::pair<std::uint32_t, std::uint32_t>> end_buf;
  const std::size_t ntokens = static_cast<std::size_t>(t.tokens_end(t.size() - 1) - t.tokens_begin(0));
  if (tok_buf.size() < ntokens)
    tok_buf.resize(ntokens);
  if (end_buf.size() < t.size())
    end_buf.resize(t.size());
  token_id* TK = tok_buf.data();
  auto* EN = end_buf.data();
  std::size_t ntk = 0, nen = 0;
  const auto* P = t.nodes();  // skip, byte, depth (capped at 255) and token count in 8 bytes a node
  const bool deep = t.max_depth() > 255;
  for (int b = 0; b < 256; ++b) {
    e->tok_off[static_cast<std::size_t>(b)] = static_cast<std::uint32_t>(ntk);
    e->end_off[static_cast<std::size_t>(b)] = static_cast<std::uint32_t>(nen);
    const auto p = child[static_cast<std::size_t>(b)];
    if (p == 0)
      continue;
    st[1] = 0;
    for (std::uint32_t k = p + 1, end = P[p].skip; k < end;) {
      const auto n = P[k];
      const std::uint32_t dep = deep ? t.depth(k) : n.depth;
      const auto to = table[static_cast<std::size_t>(st[dep - 1u]) * nc + vc.cls[n.byte]];
      if (to == nv) {
        k = n.skip;
        continue;
      }
      st[dep] = to;
      if (n.ntok == 1) {
        TK[ntk++] = *t.tokens_begin(k);
      } else if (n.ntok != 0) {
        for (auto x = t.tokens_begin(k); x != t.tokens_end(k); ++x)
          TK[ntk++] = *x;
      }
      if (fin[static_cast<std::size_t>(to)] != 0 && n.skip > k + 1)
        EN[nen++] = {static_cast<std::uint32_t>(to), k};
      ++k;
    }
  }
  e->tok_off[256] = static_cast<std::uint32_t>(ntk);
  e->end_off[256] = static_cast<std::uint32_t>(nen);
  e->tokens.assign(TK, TK + ntk);
  e->ends.assign(EN, EN + nen);
  if (ntk > 8192) {
    e->all.assign(v.mask_words(), 0);
    for (std::size_t i = 0; i < ntk; ++i)
      e->all[static_cast<std::size_t>(TK[i]) >> 6] |= 1ull << (TK[i] & 63);
  }
  return e;
}

std::shared_ptr<const lexer_class> lexer_class_cache::get(const byte_dfa& d, const lexer_view& view,
                                                          const vocabulary& v) {
  const std::uint64_t key = view.signature;
  {
    std::lock_guard lock{mutex_};
    if (auto it = map_.find(key); it != map_.end())
      return it->second;
  }
  auto c = lexer_class::make(d, view, v, &memo_);
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
