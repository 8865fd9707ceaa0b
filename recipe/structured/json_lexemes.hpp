#pragma once

#include "recipe/structured/regex_ast.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace deepinfer::recipe::so {

/// Byte-level spellings of JSON values, each with optional leading whitespace (the grammar puts
/// whitespace before lexemes only, so compact output is one path and no whitespace is ambiguous).
namespace json_lex {

/// `ws* body`, at most `max_ws` whitespace bytes.
rx lead(rx body, std::uint32_t max_ws = rx::unbounded);
/// One character of a JSON string in its canonical spelling (raw UTF-8; `\"`, `\\`, `\/`,
/// short escapes and `\u00XX` for controls).
rx string_char();
/// Any JSON string, any escapes (`\uXXXX` too).
rx any_string();
/// A string of `min..max` characters (max: `rx::unbounded` for none).
rx string_len(std::uint32_t min, std::uint32_t max);
/// A string whose decoded content matches `content` (an rx in `spelling::json`).
rx string_of(rx content);
/// The content rx of a string `format` JSON Schema or OpenAPI defines (JSON Schema's date, time,
/// date-time, duration, uuid, email, idn-email, uri, uri-reference, iri, iri-reference, ipv4,
/// ipv6, hostname, idn-hostname, json-pointer, relative-json-pointer, uri-template, regex;
/// OpenAPI's byte, binary, password), each the format's strings or a subset of them (ipv6
/// without an IPv4 tail or zone; regex: what ECMA-262 and Python both compile, groups at most 4
/// deep); nullopt for any other name. Such a format is an annotation and callers ignore it:
/// JSON Schema 2020-12 §7.2.3, "an implementation MUST NOT fail to validate ... due to an
/// unknown format attribute".
std::optional<rx> format(std::string_view name);
/// Whether `format(name)` has a value (without building it).
bool known_format(std::string_view name);
/// A language the strings of format `name` also lie in, where that is a count the format's rx
/// cannot carry (the intersection of the two automata is small, an rx of both would not be):
/// an e-mail address's local part is at most 64 characters (RFC 5321 §4.5.3.1.1), a host name
/// at most 253 (RFC 1034 §3.1). nullopt for the other formats. `json_format_dfa` applies it for the compiler and the validator both.
std::optional<rx> format_limit(std::string_view name);
/// Any JSON number.
rx any_number();
/// An integer in [lo, hi] (either side open), written without a fraction.
rx integer(std::optional<std::int64_t> lo, std::optional<std::int64_t> hi);
/// A bound of a number as written in the schema, exactly (a double's nearest value would move
/// `0.1` off the bound): its sign, integer digits (no leading zeros) and fraction digits (no
/// trailing zeros).
struct decimal {
  bool negative = false;
  std::string whole = "0";
  std::string frac;
  /// From a JSON number's text (`0.1`, `-2`, `1e-05`, `2.50E+3`); nullopt for anything else.
  static std::optional<decimal> parse(std::string_view text);
  /// -1, 0 or 1 as a is below, equal to or above b (exact, at any magnitude).
  static int compare(const decimal& a, const decimal& b);
};
/// The numbers (written without an exponent) above `d` (`above`; or below), `d` itself
/// too unless `exclusive`. A range is the intersection of two.
rx number_beyond(const decimal& d, bool above, bool exclusive);

} // namespace json_lex
} // namespace deepinfer::recipe::so
