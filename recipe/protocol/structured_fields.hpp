#pragma once

#include "recipe/protocol/conversation.hpp"
#include "recipe/protocol/json_reader.hpp"

namespace deepinfer::recipe::request_common {

/// vLLM's structured-output fields, taken on every API: `structured_outputs` (exactly one of
/// `json`, `regex`, `choice`, `grammar`) or their older top-level spellings `guided_json`,
/// `guided_regex`, `guided_choice`, `guided_grammar` (one of them). Sets `c.structured`; a
/// request that also has a response format (`c.format`, parsed before) or gives both spellings is
/// a 400, and so is `guided_whitespace_pattern`, which the compiler cannot honour.
void parse_structured_outputs(conversation& c, const json& body, const json_path& root);

} // namespace deepinfer::recipe::request_common
