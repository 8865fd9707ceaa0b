#include "recipe/stream/kmp_matcher.hpp"

namespace deepinfer::recipe {

kmp_matcher::kmp_matcher(std::string pattern) : pattern_(std::move(pattern)), fail_(pattern_.size(), 0) {
  // fail_[i]: length of the longest proper border of pattern_[0..i].
  for (std::size_t i = 1, k = 0; i < pattern_.size(); ++i) {
    while (k > 0 && pattern_[i] != pattern_[k])
      k = fail_[k - 1];
    if (pattern_[i] == pattern_[k])
      ++k;
    fail_[i] = k;
  }
}

} // namespace deepinfer::recipe
