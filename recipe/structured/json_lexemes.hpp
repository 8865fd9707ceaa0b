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
/// The content rx of a supported `format` (date, time, date-time, uuid, email, uri, ipv4,
/// hostname, ipv6 is not); nullopt for another.
std::optional<rx> format(std::string_view name);
/// Any JSON number.
rx any_number();
/// An integer in [lo, hi] (either side open), written without a fraction.
rx integer(std::optional<std::int64_t> lo, std::optional<std::int64_t> hi);
/// A decimal number (no exponent) in the range; bounds are integers, each inclusive or not.
rx number(std::optional<std::int64_t> lo, bool lo_excl, std::optional<std::int64_t> hi, bool hi_excl);

} // namespace json_lex
} // namespace deepinfer::recipe::so
