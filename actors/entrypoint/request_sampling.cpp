// The engine's sampling settings of a request (sampling_params), from what its API asked for.
#include "actors/entrypoint/request_prepare.hpp"

#include <algorithm>

#include "actors/entrypoint/serving_context.hpp"
#include "recipe/protocol/api_ids.hpp"
#include "recipe/render/renderer.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

namespace deepinfer::actors {

std::vector<std::vector<int32_t>> bad_word_ids(const recipe::tokenizer& tok, const std::vector<std::string>& words) {
  // vLLM's rule: each word as written (leading spaces dropped), and again after a space when that
  // spells it with another first token and as many tokens (the word inside a sentence).
  std::vector<std::vector<int32_t>> out;
  for (const auto& w : words) {
    const auto bare = w.substr(std::min(w.size(), w.find_first_not_of(' ')));
    auto ids = tok.encode(bare);
    if (ids.empty())
      continue;
    auto spaced = tok.encode(" " + bare);
    const bool other = !spaced.empty() && spaced.front() != ids.front() && spaced.size() == ids.size();
    out.push_back(std::move(ids));
    if (other)
      out.push_back(std::move(spaced));
  }
  return out;
}

void sampling_from_request(const entrypoint::context& ctx, const recipe::conversation& conv,
                           engine::sampling_params& sampling) {
  sampling.temperature = static_cast<float>(conv.sampling.temperature.value_or(0.0));
  sampling.top_p = static_cast<float>(conv.sampling.top_p.value_or(1.0));
  sampling.top_k = static_cast<int32_t>(conv.sampling.top_k.value_or(0));
  sampling.min_p = static_cast<float>(conv.sampling.min_p.value_or(0.0));
  // An unseeded request draws its own seed (once: a resubmission continues the same stream).
  sampling.seed = conv.sampling.seed ? static_cast<uint64_t>(*conv.sampling.seed) : recipe::random_seed();
  // ignore_eos (vLLM): EOS is no stop for the ranks, and no text for the parser.
  sampling.stop_ids = conv.sampling.ignore_eos ? std::vector<int32_t>{} : std::vector<int32_t>{ctx.eos};
  // vLLM's stop_token_ids stop the ranks too (and min_tokens holds them back like EOS).
  for (auto id : conv.sampling.stop_token_ids)
    if (std::find(sampling.stop_ids.begin(), sampling.stop_ids.end(), id) == sampling.stop_ids.end())
      sampling.stop_ids.push_back(id);
  sampling.allowed_ids = conv.sampling.allowed_token_ids;
  sampling.bad_words = bad_word_ids(*ctx.tok, conv.sampling.bad_words);
  if (!conv.sampling.prediction.empty()) {
    // Predicted Outputs: no more of it than an answer can hold (the context).
    sampling.prediction = ctx.tok->encode(conv.sampling.prediction);
    if (static_cast<int64_t>(sampling.prediction.size()) > ctx.cfg.context_limit)
      sampling.prediction.resize(static_cast<std::size_t>(ctx.cfg.context_limit));
  }
  sampling.presence_penalty = static_cast<float>(conv.sampling.presence_penalty.value_or(0.0));
  sampling.frequency_penalty = static_cast<float>(conv.sampling.frequency_penalty.value_or(0.0));
  sampling.repetition_penalty = static_cast<float>(conv.sampling.repetition_penalty.value_or(1.0));
  sampling.min_tokens = static_cast<int32_t>(conv.sampling.min_tokens.value_or(0));
  for (auto [id, bias] : conv.sampling.logit_bias)
    sampling.logit_bias.emplace_back(id, static_cast<float>(bias));
  sampling.logprobs = conv.sampling.logprobs;
  sampling.top_logprobs = static_cast<int32_t>(conv.sampling.top_logprobs);
  sampling.prompt_logprobs =
    static_cast<int32_t>(std::max(conv.sampling.prompt_logprobs, conv.sampling.vllm_prompt_logprobs));
  // (Not when the answer continues a message's text: the reasoning is closed already.)
  if (conv.thinking && conv.thinking_budget && recipe::continuation_of(conv) != recipe::continuation::content)
    if (auto end = ctx.specials->id(recipe::spelling::think_close)) {
      sampling.thinking_budget = static_cast<int32_t>(*conv.thinking_budget);
      sampling.thinking_end = *end;
    }
}

} // namespace deepinfer::actors
