#include "recipe/structured/byte_automaton.hpp"

#include <algorithm>
#include <cctype>

namespace deepinfer::recipe::so {

std::int32_t byte_nfa::add() {
  states_.emplace_back();
  return static_cast<std::int32_t>(states_.size()) - 1;
}

void byte_nfa::bytes_path(const std::vector<std::pair<std::uint8_t, std::uint8_t>>& seq,
                          std::int32_t from, std::int32_t to) {
  auto cur = from;
  for (std::size_t i = 0; i < seq.size(); ++i) {
    auto nxt = i + 1 == seq.size() ? to : add();
    states_[cur].edges.push_back({seq[i].first, seq[i].second, nxt});
    cur = nxt;
  }
}

namespace {
int utf8_len(std::uint32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }
void utf8_encode(std::uint32_t c, std::uint8_t* out) {
  switch (utf8_len(c)) {
  case 1: out[0] = static_cast<std::uint8_t>(c); break;
  case 2: out[0] = 0xC0 | (c >> 6); out[1] = 0x80 | (c & 0x3F); break;
  case 3: out[0] = 0xE0 | (c >> 12); out[1] = 0x80 | ((c >> 6) & 0x3F); out[2] = 0x80 | (c & 0x3F); break;
  default:
    out[0] = 0xF0 | (c >> 18); out[1] = 0x80 | ((c >> 12) & 0x3F);
    out[2] = 0x80 | ((c >> 6) & 0x3F); out[3] = 0x80 | (c & 0x3F);
  }
}
} // namespace

// Splits [lo, hi] into ranges whose UTF-8 encodings are byte-wise rectangles (as RE2 does).
void byte_nfa::utf8_range(std::uint32_t lo, std::uint32_t hi, std::int32_t from, std::int32_t to) {
  if (lo > hi)
    return;
  for (std::uint32_t edge : {0x7Fu, 0x7FFu, 0xFFFFu})
    if (lo <= edge && hi > edge) {
      utf8_range(lo, edge, from, to);
      utf8_range(edge + 1, hi, from, to);
      return;
    }
  const int n = utf8_len(lo);
  for (int i = 1; i < n; ++i) {
    const std::uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_range(lo, lo | m, from, to);
        utf8_range((lo | m) + 1, hi, from, to);
        return;
      }
      if ((hi & m) != m) {
        utf8_range(lo, (hi & ~m) - 1, from, to);
        utf8_range(hi & ~m, hi, from, to);
        return;
      }
    }
  }
  std::uint8_t a[4], b[4];
  utf8_encode(lo, a);
  utf8_encode(hi, b);
  std::vector<std::pair<std::uint8_t, std::uint8_t>> seq;
  for (int i = 0; i < n; ++i)
    seq.emplace_back(a[i], b[i]);
  bytes_path(seq, from, to);
}

byte_nfa::frag byte_nfa::build_set(const rx& r) {
  frag f{add(), add()};
  if (r.sp == spelling::raw) {
    for (auto x : r.ranges)
      utf8_range(x.lo, x.hi, f.start, f.end);
    return f;
  }
  // JSON string spelling.
  auto lit = [&](std::string_view s) {
    std::vector<std::pair<std::uint8_t, std::uint8_t>> seq;
    for (char c : s)
      seq.emplace_back(static_cast<std::uint8_t>(c), static_cast<std::uint8_t>(c));
    bytes_path(seq, f.start, f.end);
  };
  static const char* hex = "0123456789abcdef";
  for (auto x : r.ranges) {
    for (std::uint32_t c = x.lo; c <= std::min<std::uint32_t>(x.hi, 0x1F); ++c) {
      switch (c) {
      case '\b': lit("\\b"); break;
      case '\f': lit("\\f"); break;
      case '\n': lit("\\n"); break;
      case '\r': lit("\\r"); break;
      case '\t': lit("\\t"); break;
      default: break;
      }
      const std::uint8_t lo = static_cast<std::uint8_t>(hex[c & 15]);
      const std::uint8_t up = static_cast<std::uint8_t>(std::toupper(lo));
      std::vector<std::pair<std::uint8_t, std::uint8_t>> seq{
        {'\\', '\\'}, {'u', 'u'}, {'0', '0'}, {'0', '0'},
        {static_cast<std::uint8_t>(hex[c >> 4]), static_cast<std::uint8_t>(hex[c >> 4])}};
      auto mid = add();
      bytes_path(seq, f.start, mid);
      states_[mid].edges.push_back({lo, lo, f.end});
      if (up != lo)
        states_[mid].edges.push_back({up, up, f.end});
    }
    std::uint32_t lo = std::max<std::uint32_t>(x.lo, 0x20);
    const std::uint32_t hi = x.hi;
    for (std::uint32_t special : {0x22u, 0x2Fu, 0x5Cu}) {
      if (lo > hi || special < lo || special > hi)
        continue;
      utf8_range(lo, special - 1, f.start, f.end);
      if (special == 0x22)
        lit("\\\"");
      else if (special == 0x5C)
        lit("\\\\");
      else
        lit("/");  // never `\/`: one spelling per character keeps key exclusion exact
      lo = special + 1;
    }
    if (lo <= hi)
      utf8_range(lo, hi, f.start, f.end);
  }
  return f;
}

byte_nfa::frag byte_nfa::build(const rx& r, budget& b) {
  b.tick();
  b.states(states_.size());
  switch (r.k) {
  case rx::kind::empty: {
    frag f{add(), add()};
    states_[f.start].eps.push_back(f.end);
    return f;
  }
  case rx::kind::nothing: return {add(), add()};
  case rx::kind::set: return build_set(r);
  case rx::kind::seq: {
    auto first = build(r.kids[0], b);
    auto cur = first.end;
    for (std::size_t i = 1; i < r.kids.size(); ++i) {
      auto f = build(r.kids[i], b);
      states_[cur].eps.push_back(f.start);
      cur = f.end;
    }
    return {first.start, cur};
  }
  case rx::kind::alt: {
    frag f{add(), add()};
    for (auto& k : r.kids) {
      auto g = build(k, b);
      states_[f.start].eps.push_back(g.start);
      states_[g.end].eps.push_back(f.end);
    }
    return f;
  }
  case rx::kind::rep: {
    frag f{add(), add()};
    auto cur = f.start;
    for (std::uint32_t i = 0; i < r.min; ++i) {
      auto g = build(r.kids[0], b);
      states_[cur].eps.push_back(g.start);
      cur = g.end;
    }
    if (r.max == rx::unbounded) {
      auto g = build(r.kids[0], b);
      states_[cur].eps.push_back(g.start);
      states_[g.end].eps.push_back(cur);
      states_[cur].eps.push_back(f.end);
      return f;
    }
    for (std::uint32_t i = r.min; i < r.max; ++i) {
      states_[cur].eps.push_back(f.end);
      auto g = build(r.kids[0], b);
      states_[cur].eps.push_back(g.start);
      cur = g.end;
    }
    states_[cur].eps.push_back(f.end);
    return f;
  }
  }
  return {add(), add()};
}

} // namespace deepinfer::recipe::so
