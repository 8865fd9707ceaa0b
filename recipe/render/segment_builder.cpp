#include "recipe/render/segment_builder.hpp"

#include "recipe/log.hpp"
#include "recipe/base/assert.hpp"

#include <cstdlib>

namespace deepinfer::recipe {

void segment_builder::text(std::string_view s) {
  if (s.empty())
    return;
  if (!out_.empty() && !out_.back().is_special())
    out_.back().text += s;
  else
    out_.push_back(prompt_segment::plain(std::string(s)));
}

void segment_builder::templ(std::string_view s) {
  while (!s.empty()) {
    std::size_t best = std::string_view::npos;
    const std::pair<std::string, token_id>* hit = nullptr;
    for (const auto& e : specials_.entries()) {
      const auto at = s.find(e.first);
      if (at < best) {
        best = at;
        hit = &e;
      }
    }
    if (!hit) {
      text(s);
      return;
    }
    text(s.substr(0, best));
    out_.push_back(prompt_segment::special(hit->second, hit->first));
    s.remove_prefix(best + hit->first.size());
  }
}

void segment_builder::special(std::string_view spelling) {
  auto id = specials_.id(spelling);
  DEEPINFER_ASSERT(id.has_value(), "renderer placed unknown special token {}", spelling);
  out_.push_back(prompt_segment::special(*id, std::string(spelling)));
}

std::string to_text(const prompt_segments& segments) {
  std::size_t n = 0;
  for (const auto& s : segments)
    n += s.text.size();
  std::string out;
  out.reserve(n);
  for (const auto& s : segments)
    out += s.text;
  return out;
}

} // namespace deepinfer::recipe
