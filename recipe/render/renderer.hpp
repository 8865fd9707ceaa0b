#pragma once

#include "recipe/base/expected.hpp"
#include "recipe/prompt_segment.hpp"
#include "recipe/protocol/api_error.hpp"
#include "recipe/protocol/conversation.hpp"
#include "recipe/render/special_table.hpp"
#include "recipe/render/template_version.hpp"

namespace deepinfer::recipe {

/// Renders a conversation into the DeepSeek prompt of `specials.version()` (spec §2–§3 for dsv32,
/// §7 for dsv41): BOS, then every message; client text as plain segments, template tokens as
/// special ids from `specials`.
///
/// Conventions fixed here (the spec leaves them open): request tools (unless `tool_choice` is
/// `none`) and the response format attach to the first system message, or to an empty system
/// message inserted first; OpenAI's `developer` role is a system prompt; multi-part text is joined
/// by "\n\n"; images become the V4.1 image placeholder token.
/// Fails with a 400 in the request's API when the template cannot express the request (an image
/// with `dsv32`, or with a tokenizer that has no image token).
expected<prompt_segments, api_error> render(const conversation& conv, const special_table& specials);

/// The text the model is expected to write for an assistant turn, as segments: (reasoning +
/// `</think>` when `thinking`) + content + DSML tool calls + EOS. The inverse of `stream_parser`;
/// used by tests and benchmarks to produce model output.
prompt_segments render_completion(const message& m, const special_table& specials, bool thinking);

/// The V4.1 numeric reasoning effort (1–100) for an API effort name; empty means the default.
int reasoning_effort_level(std::string_view effort);

} // namespace deepinfer::recipe
