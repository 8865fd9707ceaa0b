// Legacy Completions' `echo`: a choice's text starts with the prompt, and with `logprobs` so does
// its log-probability list (the prompt's first token has none: null), the prompt scored by its
// prefill (prefill_result::prompt_logprobs). What evaluation harnesses read a text's likelihood
// from.
#include <cmath>
#include <limits>

#include "actors/entrypoint/request_state.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

namespace deepinfer::actors {

std::vector<recipe::token_logprob> logprob_entries(const recipe::tokenizer& tok, const std::vector<int32_t>& ids,
                                                   const token_logprobs& lp) {
  std::vector<recipe::token_logprob> out(ids.size());
  const auto n = static_cast<std::size_t>(std::max(lp.top_n, 0));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    out[i].token = tok.token_bytes(ids[i]);
    out[i].logprob = lp.logprob[i];
    for (std::size_t k = i * n; k < (i + 1) * n && k < lp.top_ids.size(); ++k)
      if (lp.top_ids[k] >= 0)
        out[i].top.push_back({std::string(tok.token_bytes(lp.top_ids[k])), lp.top_logprobs[k]});
  }
  return out;
}

bool echo_prompt(request_pointer self, int i) {
  auto& st = self->state;
  auto& sm = sample(self, i);
  if (!st.conv.prompt || !st.conv.prompt->echo || sm.echoed)
    return true;
  sm.echoed = true;
  const auto& tok = *st.ctx->tok;
  // The client's text as sent (vLLM's echo); token ids as the text they spell.
  std::string text;
  if (st.conv.prompt->is_ids)
    for (auto id : st.prompt)
      text += tok.token_bytes(id);
  else
    text = st.conv.prompt->text;
  std::vector<recipe::token_logprob> entries;
  if (sm.sampling.logprobs && !st.prompt.empty()) {
    if (st.prompt_scores.logprob.size() + 1 != st.prompt.size()) {
      fail(self, 500, "the prefill did not score the prompt ('echo' with 'logprobs'); please report this");
      return false;
    }
    entries.reserve(st.prompt.size());
    recipe::token_logprob first;
    first.token = tok.token_bytes(st.prompt.front());
    first.logprob = std::numeric_limits<float>::quiet_NaN(); // nothing before it: null
    entries.push_back(std::move(first));
    auto rest = logprob_entries(tok, std::vector<int32_t>(st.prompt.begin() + 1, st.prompt.end()), st.prompt_scores);
    entries.insert(entries.end(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
  }
  auto chunk = sm.out->echo(text, entries, sm.sampling.logprobs);
  if (st.streaming)
    st.writer->write(chunk);
  return true;
}

} // namespace deepinfer::actors
