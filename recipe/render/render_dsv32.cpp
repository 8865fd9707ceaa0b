// V3.2 prompt (spec §2–§3): no markers around system text, every user/tool run opens the answer.

#include "recipe/render/render_detail.hpp"

namespace deepinfer::recipe::render_detail {

/// Renders `msgs` with the V3.2 rules; false when the content cannot be expressed.
bool render_dsv32(segment_builder& b, const special_table& t, const conversation& conv,
                  const std::vector<flat_message>& msgs) {
  const auto v = template_version::dsv32;
  // Last-user index: the last user message (developer is folded into system here).
  long last_user = -1;
  for (std::size_t i = 0; i < msgs.size(); ++i)
    if (msgs[i].role == role::user)
      last_user = static_cast<long>(i);
  auto opener = [&](long i) {
    // The user that opens the current turn, or a tool run after it, lets the model think.
    b.special(conv.thinking && i >= last_user ? spelling::think_open : spelling::think_close);
  };
  b.special(spelling::bos);
  for (std::size_t idx = 0; idx < msgs.size(); ++idx) {
    const auto& f = msgs[idx];
    const long i = static_cast<long>(idx);
    const message* m = f.source;
    switch (f.role) {
      case role::system:
      case role::developer:
        if (!emit_system(b, t, v, conv, f))
          return false;
        break;
      case role::user:
        b.special(spelling::user);
        if (!emit_content(b, t, m))
          return false;
        b.special(spelling::assistant);
        opener(i);
        break;
      case role::assistant:
        if (!emit_assistant(b, t, *m, conv.thinking && i > last_user,
                            idx + 1 == msgs.size() ? continuation_of(conv) : continuation::none))
          return false;
        break;
      case role::tool: {
        const bool first = idx == 0 || msgs[idx - 1].role != role::tool;
        const bool last = idx + 1 == msgs.size() || msgs[idx + 1].role != role::tool;
        if (first)
          b.templ("\n\n<function_results>");
        b.templ("\n<result>");
        if (!emit_content(b, t, m))
          return false;
        b.templ("</result>");
        if (last) {
          b.templ("\n</function_results>\n\n");
          opener(i);
        }
        break;
      }
    }
  }
  return true;
}

} // namespace deepinfer::recipe::render_detail
