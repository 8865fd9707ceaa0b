#pragma once

#include "actors/messages.hpp"
#include "engine/sampler.hpp"

namespace deepinfer::actors {

/// Appends one sampled token's log-probabilities to a batch's `out` (a rank calls it for each
/// token of a request that asked for logprobs: sampling_params::logprobs or top_logprobs > 0).
/// The first call sets `out.top_n` to `top_n`; alternatives the engine did not report are padded
/// with id -1, so every token has exactly top_n.
inline void append_logprobs(token_logprobs& out, const engine::sampled_token& t, int32_t top_n) {
  out.top_n = top_n;
  out.logprob.push_back(t.logprob);
  for (int32_t i = 0; i < top_n; ++i) {
    const bool have = static_cast<std::size_t>(i) < t.top.size();
    out.top_ids.push_back(have ? t.top[static_cast<std::size_t>(i)].first : -1);
    out.top_logprobs.push_back(have ? t.top[static_cast<std::size_t>(i)].second : 0.0f);
  }
}

} // namespace deepinfer::actors
