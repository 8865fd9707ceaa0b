#pragma once

#include <chrono>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace deepinfer::recipe::so {

/// Why a constraint could not be compiled. Thrown inside the compiler only and turned into an
/// error value by `compiler::compile` (the edge, like JSON decoding elsewhere in recipe/).
struct compile_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The compile budget: a wall-clock deadline and a cap on automaton states.
class budget {
public:
  budget(std::chrono::microseconds limit, std::size_t max_states)
    : at_(std::chrono::steady_clock::now() + limit), max_states_(max_states) {}
  /// No deadline and no cap: for automata whose size is bounded by parts a compile already
  /// admitted, built where nothing may throw (while a mask is computed).
  static budget unbounded() { return {std::chrono::hours{24}, std::numeric_limits<std::size_t>::max()}; }

  /// Throws `compile_error` once the deadline has passed (checked every 256 calls).
  void tick() {
    if ((++ticks_ & 255u) == 0 && std::chrono::steady_clock::now() > at_)
      throw compile_error("compile timeout");
  }
  /// The state cap.
  std::size_t max_states() const noexcept { return max_states_; }
  /// Throws when an automaton grows past the state cap.
  void states(std::size_t n) const {
    if (n > max_states_)
      throw compile_error("automaton too large (" + std::to_string(n) + " states)");
  }

private:
  std::chrono::steady_clock::time_point at_;
  std::size_t max_states_;
  std::size_t ticks_ = 0;
};

} // namespace deepinfer::recipe::so
