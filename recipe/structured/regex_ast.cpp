#include "recipe/structured/regex_ast.hpp"

#include <algorithm>

namespace deepinfer::recipe::so {

std::vector<cp_range> normalize(std::vector<cp_range> r) {
  std::sort(r.begin(), r.end(), [](auto a, auto b) { return a.lo < b.lo; });
  std::vector<cp_range> out;
  for (auto x : r) {
    if (x.lo > x.hi)
      continue;
    if (!out.empty() && x.lo <= out.back().hi + 1)
      out.back().hi = std::max(out.back().hi, x.hi);
    else
      out.push_back(x);
  }
  // Surrogates are not characters: they never appear in UTF-8 text.
  std::vector<cp_range> res;
  for (auto x : out) {
    if (x.hi < 0xD800 || x.lo > 0xDFFF) {
      res.push_back(x);
      continue;
    }
    if (x.lo < 0xD800)
      res.push_back({x.lo, 0xD7FF});
    if (x.hi > 0xDFFF)
      res.push_back({0xE000, x.hi});
  }
  return res;
}

std::vector<cp_range> any_cp() { return {{0, 0xD7FF}, {0xE000, 0x10FFFF}}; }

std::vector<cp_range> complement(const std::vector<cp_range>& r) {
  std::vector<cp_range> out;
  std::uint32_t next = 0;
  for (auto x : r) {
    if (x.lo > next)
      out.push_back({next, x.lo - 1});
    next = x.hi + 1;
  }
  if (next <= 0x10FFFF)
    out.push_back({next, 0x10FFFF});
  return normalize(std::move(out));
}

rx rx::set(std::vector<cp_range> ranges, spelling sp) {
  rx r;
  r.k = kind::set;
  r.sp = sp;
  r.ranges = normalize(std::move(ranges));
  if (r.ranges.empty())
    return none();
  return r;
}

rx rx::lit(std::string_view text, spelling sp) {
  std::vector<rx> parts;
  for (std::size_t i = 0; i < text.size();) {
    auto b = static_cast<unsigned char>(text[i]);
    std::uint32_t c = b;
    std::size_t n = 1;
    if (b >= 0xF0) {
      c = b & 0x07u;
      n = 4;
    } else if (b >= 0xE0) {
      c = b & 0x0Fu;
      n = 3;
    } else if (b >= 0xC0) {
      c = b & 0x1Fu;
      n = 2;
    }
    if (i + n > text.size())
      n = 1, c = b;
    for (std::size_t j = 1; j < n; ++j)
      c = (c << 6) | (static_cast<unsigned char>(text[i + j]) & 0x3Fu);
    parts.push_back(cp(c, sp));
    i += n;
  }
  return seq(std::move(parts));
}

rx rx::seq(std::vector<rx> parts) {
  rx r;
  r.k = kind::seq;
  for (auto& p : parts) {
    if (p.k == kind::nothing)
      return none();
    if (p.k == kind::empty)
      continue;
    if (p.k == kind::seq)
      for (auto& q : p.kids)
        r.kids.push_back(std::move(q));
    else
      r.kids.push_back(std::move(p));
  }
  if (r.kids.empty())
    return eps();
  if (r.kids.size() == 1)
    return std::move(r.kids[0]);
  return r;
}

rx rx::alt(std::vector<rx> parts) {
  rx r;
  r.k = kind::alt;
  for (auto& p : parts)
    if (p.k != kind::nothing)
      r.kids.push_back(std::move(p));
  if (r.kids.empty())
    return none();
  if (r.kids.size() == 1)
    return std::move(r.kids[0]);
  return r;
}

rx rx::rep(rx part, std::uint32_t min, std::uint32_t max) {
  if (max != unbounded && min > max)
    return none();
  if (part.k == kind::nothing)
    return min == 0 ? eps() : none();
  if (part.k == kind::empty || max == 0)
    return eps();
  if (min == 1 && max == 1)
    return part;
  rx r;
  r.k = kind::rep;
  r.min = min;
  r.max = max;
  r.kids.push_back(std::move(part));
  return r;
}

rx json_ws(std::uint32_t max) {
  return rx::rep(rx::set({{' ', ' '}, {'\t', '\t'}, {'\n', '\n'}, {'\r', '\r'}}), 0, max);
}

} // namespace deepinfer::recipe::so
