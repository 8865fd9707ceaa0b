#include "engine/predicted_drafts.hpp"

#include <algorithm>

namespace deepinfer::engine {

draft_proposal predicted_drafts(std::span<const int32_t> prediction, std::span<const int32_t> output) {
  draft_proposal p;
  p.predicted = true;
  const std::size_t n = prediction.size(), m = output.size();
  std::size_t from = n; // where the drafts start in the prediction; n: none
  if (m <= n && std::equal(output.begin(), output.end(), prediction.begin())) {
    from = m;
  } else if (m >= resync_tokens) {
    // The tail's occurrences; the one whose end is nearest the output's length wins (ties: the
    // earlier), as an edit moves the rest of the text by about what it inserted or removed.
    const auto tail = output.subspan(m - resync_tokens);
    std::size_t best_gap = SIZE_MAX;
    for (auto it = prediction.begin();;) {
      it = std::search(it, prediction.end(), tail.begin(), tail.end());
      if (it == prediction.end())
        break;
      const auto end = static_cast<std::size_t>(it - prediction.begin()) + resync_tokens;
      const auto gap = end > m ? end - m : m - end;
      if (gap < best_gap) {
        best_gap = gap;
        from = end;
      }
      ++it;
    }
  }
  for (std::size_t i = from; i < n && p.count < max_draft_positions; ++i) {
    p.tokens[p.count] = prediction[i];
    p.confidence[p.count] = 1.0f;
    ++p.count;
  }
  return p;
}

} // namespace deepinfer::engine
