#pragma once

#include <cstdint>
#include <vector>

namespace deepinfer::engine {

/// The sliding-window K/V of one attention layer of one sequence (DESIGN.md §4.2): the last
/// `slots` positions (window 128 + 6 for speculative rollback), indexed by absolute position.
class swa_ring {
public:
  /// Ring geometry.
  struct config {
    int64_t slots = 134;
    int64_t width = 0; ///< Floats of K (and of V) per position.
  };

  explicit swa_ring(const config& cfg);

  /// Stores position `pos`; precondition: pos == end() (positions arrive in order).
  void push(int64_t pos, const float* k, const float* v);
  /// Forgets everything and starts empty at `pos` (for a window that begins mid-sequence).
  void reset(int64_t pos);
  /// Drops positions [end, end()) (a rejected speculative draft), keeping the ones before;
  /// precondition: begin() <= end <= end(). The spare slots beyond the window are what keep a
  /// full window behind `end` after up to ring - window - 1 positions are dropped.
  void truncate(int64_t end);
  /// K / V of `pos`; precondition: begin() <= pos < end().
  const float* k(int64_t pos) const { return k_.data() + (pos % config_.slots) * config_.width; }
  const float* v(int64_t pos) const { return v_.data() + (pos % config_.slots) * config_.width; }
  /// First held position and one past the last.
  int64_t begin() const { return end_ - count_; }
  int64_t end() const { return end_; }
  const config& geometry() const { return config_; }

private:
  config config_;
  std::vector<float> k_, v_;
  int64_t end_ = 0;
  int64_t count_ = 0;
};

} // namespace deepinfer::engine
