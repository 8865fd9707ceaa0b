#include "recipe/protocol/structured_fields.hpp"

#include <array>
#include <utility>

namespace deepinfer::recipe::request_common {

namespace {

namespace jr = json_reader;

/// `s` as a regex that matches exactly it (ECMA-262 syntax characters escaped).
std::string regex_literal(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (std::string_view{"\\^$.|?*+()[]{}/"}.find(ch) != std::string_view::npos)
      out += '\\';
    out += ch;
  }
  return out;
}

/// One constraint of kind `kind` (`json`, `regex`, `grammar` or `choice`) from `v`, found at `at`.
structured_outputs constraint_of(std::string_view kind, const json& v, const json_path& at) {
  structured_outputs out;
  if (kind == "json") {
    out.kind = structured_outputs::mode::json_schema;
    out.text = v.is_string() ? v.get<std::string>() : jr::object(v, at).dump();
  } else if (kind == "json_object") {
    if (!v.is_boolean() || !v.get<bool>())
      at.fail("Invalid value: 'json_object' is either true or absent.");
    out.kind = structured_outputs::mode::json_object;
  } else if (kind == "choice") {
    const auto& list = jr::array(v, at);
    if (list.empty())
      at.fail("Invalid value: 'choice' needs at least one string.");
    out.kind = structured_outputs::mode::regex;
    for (std::size_t i = 0; i < list.size(); ++i)
      out.text += (i ? "|" : "") + regex_literal(jr::string(list[i], at / i));
    out.text = "(" + out.text + ")";
  } else {
    out.kind = kind == "regex" ? structured_outputs::mode::regex : structured_outputs::mode::grammar;
    out.text = jr::string(v, at);
  }
  return out;
}

constexpr std::array<std::string_view, 5> kinds{"json", "regex", "choice", "grammar", "json_object"};

} // namespace

void parse_structured_outputs(conversation& c, const json& body, const json_path& root) {
  // 1. The current spelling: one object holding exactly one constraint.
  if (const json* so = jr::find(body, "structured_outputs")) {
    const auto at = root / "structured_outputs";
    jr::object(*so, at);
    int given = 0;
    for (auto kind : kinds)
      if (const json* v = jr::find(*so, kind)) {
        ++given;
        c.structured = constraint_of(kind, *v, at / kind);
      }
    c.compact_json = jr::opt_bool(*so, "disable_any_whitespace", at).value_or(false);
    if (jr::find(*so, "whitespace_pattern"))
      (at / "whitespace_pattern")
          .fail("Invalid value: 'whitespace_pattern' is not supported; JSON output allows a bounded run of "
                "whitespace between tokens, or none with 'disable_any_whitespace': true.");
    // Options alone (vLLM applies them to the request's response_format) are not a constraint.
    const bool options_only = given == 0 && c.compact_json && c.format;
    if (given > 1 || (given == 0 && !options_only))
      at.fail("Invalid value: 'structured_outputs' takes exactly one of 'json', 'regex', 'choice', 'grammar' or "
              "'json_object'.");
  }
  // 2. vLLM's older top-level spelling (before 0.10.2), which clients migrating from it still send.
  std::string guided_key;
  for (auto kind : kinds) {
    const auto key = "guided_" + std::string(kind);
    const json* v = jr::find(body, key);
    if (!v)
      continue;
    if (c.structured)
      (root / key).fail("Invalid value: give one structured-output constraint: '" + key + "' conflicts with '" +
                        (guided_key.empty() ? std::string("structured_outputs") : guided_key) + "'.");
    c.structured = constraint_of(kind, *v, root / key);
    guided_key = key;
  }
  if (jr::find(body, "guided_whitespace_pattern"))
    (root / "guided_whitespace_pattern")
        .fail("Invalid value: 'guided_whitespace_pattern' is not supported (JSON output allows a bounded run of "
              "whitespace between tokens); drop it, or send structured_outputs: {\"disable_any_whitespace\": true} "
              "for none.");
  if (c.structured && c.format)
    (root / (guided_key.empty() ? std::string("structured_outputs") : guided_key))
        .fail("Invalid value: give either a response format or '" +
              (guided_key.empty() ? std::string("structured_outputs") : guided_key) + "', not both.");
}

} // namespace deepinfer::recipe::request_common
