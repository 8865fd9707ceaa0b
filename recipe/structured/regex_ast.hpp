#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::recipe::so {

/// An inclusive range of Unicode code points.
struct cp_range {
  std::uint32_t lo = 0;
  std::uint32_t hi = 0;
};

/// How a set of code points is spelled in bytes.
enum class spelling : std::uint8_t {
  /// UTF-8 of the code point itself.
  raw,
  /// Inside a JSON string: UTF-8, except `"`, `\` and controls, which are escaped (`\"`, `\\`,
  /// `\n`..., `\u00XX`).
  json,
};

/// A regular expression over code points (the common form of JSON Schema strings, `pattern`,
/// formats, literals and EBNF terminals), lowered to bytes by `byte_nfa`.
struct rx {
  enum class kind : std::uint8_t { empty, nothing, set, seq, alt, rep };
  kind k = kind::empty;
  spelling sp = spelling::raw;
  std::vector<cp_range> ranges;  // kind::set, sorted and disjoint
  std::vector<rx> kids;          // seq, alt: the parts; rep: one
  std::uint32_t min = 0;         // rep
  std::uint32_t max = 0;         // rep; `unbounded` for no limit

  static constexpr std::uint32_t unbounded = 0xffffffffu;

  /// Matches the empty string only.
  static rx eps() { return {}; }
  /// Matches nothing.
  static rx none() { rx r; r.k = kind::nothing; return r; }
  /// One code point of `ranges` (normalized here), spelled `sp`.
  static rx set(std::vector<cp_range> ranges, spelling sp = spelling::raw);
  /// One code point.
  static rx cp(std::uint32_t c, spelling sp = spelling::raw) { return set({{c, c}}, sp); }
  /// The code points of UTF-8 `text`, each spelled `sp`.
  static rx lit(std::string_view text, spelling sp = spelling::raw);
  static rx seq(std::vector<rx> parts);
  static rx alt(std::vector<rx> parts);
  static rx rep(rx part, std::uint32_t min, std::uint32_t max);
  static rx opt(rx part) { return rep(std::move(part), 0, 1); }
  static rx star(rx part) { return rep(std::move(part), 0, unbounded); }
  static rx plus(rx part) { return rep(std::move(part), 1, unbounded); }
};

/// Any code point (U+0000..U+10FFFF without surrogates).
std::vector<cp_range> any_cp();
/// The complement of sorted disjoint `r` within `any_cp()`.
std::vector<cp_range> complement(const std::vector<cp_range>& r);
/// Sorts and merges.
std::vector<cp_range> normalize(std::vector<cp_range> r);

/// JSON whitespace, zero or more (`[ \t\n\r]*`).
rx json_ws(std::uint32_t max = rx::unbounded);

} // namespace deepinfer::recipe::so
