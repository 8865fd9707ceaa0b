#pragma once

#include "recipe/structured/compile_error.hpp"
#include "recipe/structured/grammar.hpp"

#include <nlohmann/json.hpp>

#include <memory>

namespace deepinfer::recipe::so {

/// Compiles a JSON Schema (draft 4 to 2020-12 keywords) to a grammar over the bytes of its
/// instances. Properties are read in the order the schema lists them (additional ones after);
/// whitespace is allowed before every token. Throws `compile_error` for an unsupported keyword,
/// a `$ref` it cannot resolve, a contradiction, or the budget.
std::shared_ptr<const grammar> compile_json_schema(const nlohmann::ordered_json& schema, budget& b);

/// The grammar of any JSON object, whatever its keys and values (`response_format: json_object`,
/// Responses `text.format: json_object`): the root is always `{...}`.
std::shared_ptr<const grammar> compile_json_object(budget& b);

} // namespace deepinfer::recipe::so
