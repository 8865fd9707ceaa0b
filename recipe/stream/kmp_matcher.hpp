#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::recipe {

/// Knuth–Morris–Pratt matcher for one delimiter, fed a byte at a time. Its state (how many pattern
/// bytes the input currently ends with) survives chunk boundaries, so text already seen is never
/// scanned again; the held bytes are always `pattern().substr(0, state())`.
class kmp_matcher {
public:
  explicit kmp_matcher(std::string pattern);

  /// Advances by one byte and returns the new state; `state() == pattern().size()` is a match.
  /// After a match the caller calls `reset()`.
  std::size_t step(unsigned char c) noexcept {
    const auto& p = pattern_;
    std::size_t k = state_;
    while (k > 0 && static_cast<unsigned char>(p[k]) != c)
      k = fail_[k - 1];
    if (static_cast<unsigned char>(p[k]) == c)
      ++k;
    state_ = k;
    return k;
  }

  std::size_t state() const noexcept { return state_; }
  bool matched() const noexcept { return state_ == pattern_.size(); }
  void reset() noexcept { state_ = 0; }
  const std::string& pattern() const noexcept { return pattern_; }

private:
  std::string pattern_;
  std::vector<std::size_t> fail_;
  std::size_t state_ = 0;
};

} // namespace deepinfer::recipe
