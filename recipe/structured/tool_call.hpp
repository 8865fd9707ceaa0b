#pragma once

#include "recipe/structured/compile_error.hpp"
#include "recipe/structured/grammar.hpp"
#include "recipe/structured/json_schema.hpp"

#include <nlohmann/json.hpp>

#include <memory>

namespace deepinfer::recipe::so {

/// The grammar of a forced tool call in the model's DSML markup (spec deepseek-format.md §3.1
/// and §7): `spec` = {"tools": [{"name", "parameters"}...], "parallel": bool, "v41": bool}. The
/// output is `\n\n<DSML calls>\n` + one invoke (several when `parallel`) + `\n</DSML calls>`;
/// each invoke names one of the tools and lists its parameters in the schema's order, the
/// required ones always, each value a JSON value of its property's schema (`string="false"`) or,
/// for a string property, its raw text (`string="true"`: any text without the DSML token; an
/// `enum`/`const` of strings is kept; a string with minLength, maxLength, pattern or format is a
/// JSON string, `string="false"`, so that they are enforced). With `v41` the DSML marker is the tokenizer's one special
/// token (`dsml_code_point` in the vocabulary), else the V3.2 text `｜DSML｜`. Throws
/// `compile_error` for an unsupported parameter schema, or tools whose parameters use `$ref`
/// when there are several (each tool's refs are relative to its own parameters). `opts` spaces
/// the JSON values (the markup is exact).
std::shared_ptr<const grammar> compile_tool_calls(const nlohmann::ordered_json& spec, budget& b,
                                                  const json_options& opts = {});

} // namespace deepinfer::recipe::so
