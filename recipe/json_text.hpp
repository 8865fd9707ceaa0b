#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace deepinfer::recipe {

/// Appends `s` as the inside of a JSON string (no quotes), escaped exactly like Python's
/// `json.dumps(..., ensure_ascii=False)`: `\"` `\\` `\n` `\r` `\t` `\b` `\f`, other controls as
/// `\u00xx`, everything else (non-ASCII, `/`, U+2028) raw. Precondition: `s` is valid UTF-8.
void append_json_escaped(std::string& out, std::string_view s);

/// Appends `s` as a quoted JSON string (see `append_json_escaped`).
void append_json_string(std::string& out, std::string_view s);

/// Appends `v` serialised like Python's `json.dumps(v, ensure_ascii=False)`: separators `", "` and
/// `": "`, key order kept, floats as Python `repr` (`1.0`, `1e-05`, `1e+16`). Used for tool schemas,
/// response formats and non-string tool-call arguments (spec §2.8).
void append_python_json(std::string& out, const nlohmann::ordered_json& v);

/// `append_python_json` into a new string.
std::string python_json(const nlohmann::ordered_json& v);

} // namespace deepinfer::recipe
