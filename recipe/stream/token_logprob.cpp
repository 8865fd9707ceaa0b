#include "recipe/stream/token_logprob.hpp"

#include <cmath>
#include <string>

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

nlohmann::ordered_json prompt_logprobs_json(std::span<const token_logprob> entries) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& e : entries) {
    if (std::isnan(e.logprob)) {
      out.push_back(nullptr);
      continue;
    }
    auto at = nlohmann::ordered_json::object();
    at[std::to_string(e.id)] = {{"logprob", e.logprob}, {"rank", e.rank}, {"decoded_token", e.token}};
    for (std::size_t k = 0; k < e.top.size(); ++k)
      if (const auto key = std::to_string(e.top[k].id); !at.contains(key))
        at[key] = {{"logprob", e.top[k].logprob}, {"rank", static_cast<std::int64_t>(k) + 1},
                   {"decoded_token", e.top[k].token}};
    out.push_back(std::move(at));
  }
  return out;
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
