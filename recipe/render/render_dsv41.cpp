// V4.1 prompt (spec §7, following the adapted reference encoder): `<｜System｜>` marker, tool
// results folded into user turns as <tool_result> blocks, generation opener after user turns.

#include "recipe/render/render_detail.hpp"

#include "recipe/render/renderer.hpp"

#include <algorithm>
#include <string>

namespace deepinfer::recipe::render_detail {

namespace {

// A V4.1 message after folding: a user turn is a list of user messages and tool results.
struct turn {
  recipe::role role;
  const flat_message* single = nullptr;      // system / assistant
  std::vector<const message*> parts;         // user turn: user messages and tool results in order
};

std::vector<turn> fold(const std::vector<flat_message>& msgs) {
  std::vector<turn> out;
  const message* last_calls = nullptr; // the last assistant with tool calls, for result order
  for (const auto& f : msgs) {
    if (f.role == role::user || f.role == role::tool) {
      if (out.empty() || out.back().role != role::user)
        out.push_back({role::user, nullptr, {}});
      out.back().parts.push_back(f.source);
    } else {
      out.push_back({f.role, &f, {}});
      if (f.role == role::assistant && !f.source->tool_calls.empty())
        last_calls = f.source;
    }
    // Sort the tool results of the turn just extended by the order of the calls they answer
    // (stable; unknown ids sort first, as the reference's default index 0 does).
    if (f.role == role::tool && last_calls) {
      auto& parts = out.back().parts;
      std::vector<std::size_t> slots;
      std::vector<const message*> results;
      for (std::size_t k = 0; k < parts.size(); ++k)
        if (parts[k]->role == role::tool) {
          slots.push_back(k);
          results.push_back(parts[k]);
        }
      auto order = [&](const message* r) {
        for (std::size_t c = 0; c < last_calls->tool_calls.size(); ++c)
          if (last_calls->tool_calls[c].id == r->tool_call_id)
            return c;
        return std::size_t{0};
      };
      std::stable_sort(results.begin(), results.end(),
                       [&](const message* a, const message* b) { return order(a) < order(b); });
      for (std::size_t k = 0; k < slots.size(); ++k)
        parts[slots[k]] = results[k];
    }
  }
  return out;
}

} // namespace

/// Renders `msgs` with the V4.1 rules; false when the content cannot be expressed.
bool render_dsv41(segment_builder& b, const special_table& t, const conversation& conv,
                  const std::vector<flat_message>& msgs) {
  const auto v = template_version::dsv41;
  const auto turns = fold(msgs);
  const bool tools_anywhere = std::any_of(msgs.begin(), msgs.end(), [](const auto& f) { return f.tools; });
  // With tools in the prompt nothing is dropped: every turn keeps its reasoning.
  const bool drop = !tools_anywhere;
  long last_user = -1; // user turns, and system messages after the first position
  for (std::size_t i = 0; i < turns.size(); ++i)
    if (turns[i].role == role::user || (turns[i].role == role::system && i > 0))
      last_user = static_cast<long>(i);
  const int effort = reasoning_effort_level(conv.reasoning_effort);

  b.special(spelling::bos);
  for (std::size_t idx = 0; idx < turns.size(); ++idx) {
    const auto& tn = turns[idx];
    const long i = static_cast<long>(idx);
    const bool is_last = idx + 1 == turns.size();
    if (idx == 0 && (conv.thinking || tn.role == role::system))
      b.special(spelling::system);
    if (idx == 0 && conv.thinking)
      b.templ("Reasoning Effort: " + std::to_string(effort) +
              " (range 1-100, the higher the value, the more thorough the reasoning)\n\n");
    switch (tn.role) {
      case role::system:
      case role::developer:
        if (idx > 0)
          b.special(spelling::system);
        if (!emit_system(b, t, v, conv, *tn.single))
          return false;
        break;
      case role::user:
      case role::tool:
        b.special(spelling::user);
        for (std::size_t k = 0; k < tn.parts.size(); ++k) {
          if (k > 0)
            b.text("\n\n");
          const message* p = tn.parts[k];
          if (p->role == role::tool)
            b.templ("<tool_result>");
          if (!emit_content(b, t, p))
            return false;
          if (p->role == role::tool)
            b.templ("</tool_result>");
        }
        break;
      case role::assistant:
        if (!emit_assistant(b, t, *tn.single->source, conv.thinking && (!drop || i > last_user),
                            is_last ? continuation_of(conv) : continuation::none))
          return false;
        break;
    }
    if (is_last && tn.role == role::assistant && continuation_of(conv) != continuation::none)
      break; // the answer continues that message: no new turn
    // The generation opener follows a turn that ends the prompt or precedes an assistant turn.
    if (!is_last && turns[idx + 1].role != role::assistant)
      continue;
    if (tn.role == role::user || (tn.role == role::system && idx > 0) ||
        (is_last && (tn.role == role::system || tn.role == role::assistant))) {
      b.special(spelling::assistant);
      const bool open = conv.thinking && (!drop || i >= last_user);
      b.special(open ? spelling::think_open : spelling::think_close);
    }
  }
  return true;
}

} // namespace deepinfer::recipe::render_detail
