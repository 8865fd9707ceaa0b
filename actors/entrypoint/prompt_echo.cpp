// The prompt in a choice's output, scored by its prefill (prefill_result::prompt_logprobs):
// legacy Completions' `echo` (the text starts with the prompt, and with `logprobs` so does its
// log-probability list, the first token null: what evaluation harnesses read a text's likelihood
// from) and vLLM's `prompt_logprobs` (Chat and legacy Completions, on the body).
#include <cmath>
#include <limits>

#include "actors/entrypoint/request_state.hpp"
#include "actors/entrypoint/serving_context.hpp"
#include "recipe/tokenizer/tokenizer.hpp"

namespace deepinfer::actors {

namespace {

/// A log-probability entry's token: its bytes, or vLLM's `token_id:N` (return_tokens_as_token_ids).
std::string spelling(const recipe::tokenizer& tok, int32_t id, bool as_ids) {
  return as_ids ? "token_id:" + std::to_string(id) : std::string(tok.token_bytes(id));
}

} // namespace

std::vector<recipe::token_logprob> logprob_entries(const recipe::tokenizer& tok, const std::vector<int32_t>& ids,
                                                   const token_logprobs& lp, bool as_ids) {
  std::vector<recipe::token_logprob> out(ids.size());
  const auto n = static_cast<std::size_t>(std::max(lp.top_n, 0));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    out[i].token = spelling(tok, ids[i], as_ids);
    out[i].logprob = lp.logprob[i];
    out[i].id = ids[i];
    out[i].rank = i < lp.rank.size() ? lp.rank[i] : 0;
    for (std::size_t k = i * n; k < (i + 1) * n && k < lp.top_ids.size(); ++k)
      if (lp.top_ids[k] >= 0)
        out[i].top.push_back({spelling(tok, lp.top_ids[k], as_ids), lp.top_logprobs[k], lp.top_ids[k]});
  }
  return out;
}

void keep_prompt_scores(request_pointer self, const token_logprobs& scores) {
  auto& st = self->state;
  if (scores.logprob.size() + 1 != st.prompt.size())
    return; // not scored (a resubmission), or not as asked: write_prompt_part fails the request
  const auto& tok = *st.ctx->tok;
  // The first token has nothing before it (NaN: null), then the scores.
  st.prompt_entries.clear();
  st.prompt_entries.reserve(st.prompt.size());
  recipe::token_logprob first;
  const bool as_ids = st.conv.sampling.return_tokens_as_token_ids;
  first.token = spelling(tok, st.prompt.front(), as_ids);
  first.id = st.prompt.front();
  first.logprob = std::numeric_limits<float>::quiet_NaN();
  st.prompt_entries.push_back(std::move(first));
  auto rest = logprob_entries(tok, std::vector<int32_t>(st.prompt.begin() + 1, st.prompt.end()), scores, as_ids);
  st.prompt_entries.insert(st.prompt_entries.end(), std::make_move_iterator(rest.begin()),
                           std::make_move_iterator(rest.end()));
}

bool write_prompt_part(request_pointer self, int i) {
  auto& st = self->state;
  auto& sm = sample(self, i);
  const bool echo = st.conv.prompt && st.conv.prompt->echo;
  const bool vllm = st.conv.sampling.vllm_prompt_logprobs >= 0;
  if ((!echo && !vllm) || sm.echoed)
    return true;
  sm.echoed = true;
  const auto& tok = *st.ctx->tok;
  const bool scored = vllm || sm.sampling.logprobs;
  if (scored && st.prompt_entries.size() != st.prompt.size()) {
    fail(self, 500, "the prefill did not score the prompt (prompt logprobs); please report this");
    return false;
  }
  if (vllm)
    sm.out->prompt_logprobs(recipe::prompt_logprobs_json(st.prompt_entries));
  if (!echo)
    return true;
  // The client's text as sent (vLLM's echo); token ids as the text they spell.
  std::string text;
  if (st.conv.prompt->is_ids)
    for (auto id : st.prompt)
      text += tok.token_bytes(id);
  else
    text = st.conv.prompt->text;
  auto chunk = sm.out->echo(text, sm.sampling.logprobs ? st.prompt_entries : std::vector<recipe::token_logprob>{},
                            sm.sampling.logprobs);
  if (st.streaming)
    st.writer->write(chunk);
  return true;
}

} // namespace deepinfer::actors
