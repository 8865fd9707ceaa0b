#pragma once

#include <cstdint>
#include <span>

#include "engine/model/draft_head.hpp"

namespace deepinfer::engine {

/// OpenAI's Predicted Outputs: the drafts a request's `prediction` (the text the client expects
/// the answer to be, as token ids) offers after `output` (the request's output so far), verified
/// like the draft head's (rank_engine::verify_step), so the answer is the same with or without
/// it. Where the output is a prefix of the prediction, the prediction's next tokens; where the
/// output left it (an edit), from just after the output's last `resync_tokens` tokens' place in
/// the prediction (the occurrence nearest to where the output would be had nothing changed),
/// else nothing until they appear there. Stateless: a function of the two sequences, so a
/// request moved to another rank drafts what it would have drafted in place. Confidence 1 each;
/// `predicted` is set.
draft_proposal predicted_drafts(std::span<const int32_t> prediction, std::span<const int32_t> output);

/// How many trailing output tokens must match the prediction to pick it up again after an edit.
inline constexpr std::size_t resync_tokens = 3;

} // namespace deepinfer::engine
