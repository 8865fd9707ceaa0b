#pragma once

// Internal to the renderer: the message list both template versions start from.

#include "recipe/protocol/conversation.hpp"
#include "recipe/render/segment_builder.hpp"

#include <optional>
#include <string>
#include <vector>

namespace deepinfer::recipe::render_detail {

/// A message as the templates see it: developer folded into system, request-level tools and
/// response format attached.
struct flat_message {
  recipe::role role = recipe::role::user;
  const message* source = nullptr; // null for an inserted empty system message
  bool tools = false;
  bool format = false;
};

/// Builds the flat list (spec §2.6 "attach to the first system message").
std::vector<flat_message> flatten(const conversation& conv);

/// Appends a message body: text parts joined by "\n\n"; images as the image placeholder.
/// Returns false when an image cannot be expressed (no placeholder token).
bool emit_content(segment_builder& b, const special_table& t, const message* m);

/// A system message body: content, then "\n\n" + tools text and "\n\n" + response format when
/// attached. Returns false when the content cannot be expressed.
bool emit_system(segment_builder& b, const special_table& t, template_version v, const conversation& conv,
                 const flat_message& f);

/// An assistant turn: (reasoning + `</think>` when `with_reasoning`) + content + DSML calls + EOS.
/// `open`: the turn the answer continues (conversation::continue_final): no EOS, and for
/// `continuation::reasoning` only the reasoning, its `</think>` not written.
bool emit_assistant(segment_builder& b, const special_table& t, const message& m, bool with_reasoning,
                    continuation open = continuation::none);

/// Tools text of the version (spec §2.6 / §7) with one schema per line.
void emit_tools(segment_builder& b, template_version v, const conversation& conv);

/// `"\n\n## Response Format:..."` without the leading newlines.
void emit_format(segment_builder& b, const conversation& conv);

/// The DSML block of an assistant turn's calls, starting with "\n\n" (spec §3.1 / §7).
void emit_tool_calls(segment_builder& b, template_version v, const std::vector<tool_call>& calls);


} // namespace deepinfer::recipe::render_detail
