#pragma once

#include "recipe/structured/compile_error.hpp"
#include "recipe/structured/grammar.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>

namespace deepinfer::recipe::so {

/// How a JSON output may be spaced.
struct json_options {
  /// The most bytes of whitespace in a row between two tokens (nullopt: any number; 0: compact
  /// output). A sampled model with nothing to stop it can spend its whole output on whitespace
  /// the grammar allows (vLLM's `disable_any_whitespace` and XGrammar's `max_whitespace_cnt`
  /// exist for that).
  std::optional<std::uint32_t> max_whitespace;
};

/// Compiles a JSON Schema (draft 4 to 2020-12 keywords) to a grammar over the bytes of its
/// instances. Properties are read in the order the schema lists them (additional ones after);
/// whitespace is allowed before every token. Throws `compile_error` for an unsupported keyword,
/// a `$ref` it cannot resolve, a contradiction, or the budget.
std::shared_ptr<const grammar> compile_json_schema(const nlohmann::ordered_json& schema, budget& b,
                                                   const json_options& opts = {});

/// The grammar of any JSON object, whatever its keys and values (`response_format: json_object`,
/// Responses `text.format: json_object`): the root is always `{...}`.
std::shared_ptr<const grammar> compile_json_object(budget& b, const json_options& opts = {});

} // namespace deepinfer::recipe::so
