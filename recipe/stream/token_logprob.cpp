#include "recipe/stream/token_logprob.hpp"

namespace deepinfer::recipe {

namespace {

nlohmann::ordered_json bytes_json(const std::string& s) {
  auto a = nlohmann::ordered_json::array();
  for (const unsigned char c : s)
    a.push_back(static_cast<int>(c));
  return a;
}

} // namespace

nlohmann::ordered_json logprobs_json(std::span<const token_logprob> entries) {
  auto content = nlohmann::ordered_json::array();
  for (const auto& e : entries) {
    auto top = nlohmann::ordered_json::array();
    for (const auto& a : e.top)
      top.push_back({{"token", a.token}, {"logprob", a.logprob}, {"bytes", bytes_json(a.token)}});
    content.push_back({{"token", e.token}, {"logprob", e.logprob}, {"bytes", bytes_json(e.token)}, {"top_logprobs", top}});
  }
  return content;
}

std::vector<token_logprob> text_logprobs::take(const stream_event& e) {
  std::vector<token_logprob> out;
  if (e.type == stream_event::kind::content && !e.text.empty())
    out.swap(held_);
  else if (e.type != stream_event::kind::content)
    held_.clear();
  all_.insert(all_.end(), out.begin(), out.end());
  return out;
}

} // namespace deepinfer::recipe
