#include "recipe/protocol/prompt_batch.hpp"

#include <nlohmann/json.hpp>

namespace deepinfer::recipe {

prompt_batch split_prompt_batch(std::string_view body, std::size_t max_prompts) {
  prompt_batch out;
  // Cheap refusal first: most bodies have no list of prompts.
  if (body.find('[') == std::string_view::npos)
    return out;
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return out;
  auto it = j.find("prompt");
  if (it == j.end() || !it->is_array() || it->size() < 2 || !((*it)[0].is_string() || (*it)[0].is_array()))
    return out; // one prompt, a token list, or something the parse reports
  if (it->size() > max_prompts) {
    api_error e;
    e.api = api_kind::completions;
    e.message = "Invalid 'prompt': " + std::to_string(it->size()) + " prompts in one request; at most " +
                std::to_string(max_prompts) + " are served together. Split the list over several requests.";
    e.param = "prompt";
    out.error = std::move(e);
    return out;
  }
  if (auto n = j.find("n"); n != j.end() && n->is_number_integer() && n->get<int64_t>() >= 1 && n->get<int64_t>() <= 128)
    out.n = static_cast<int>(n->get<int64_t>());
  auto prompts = std::move(*it);
  out.bodies.reserve(prompts.size());
  for (auto& p : prompts) {
    *it = std::move(p);
    out.bodies.push_back(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return out;
}

} // namespace deepinfer::recipe
