#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/model/model_config.hpp"

namespace deepinfer::engine {

/// Writes seeded random `ced_moe` models (the weights `deepinfer-mkmodel` produces).
class random_model {
public:
  /// Called after each tensor with bytes written so far and the total.
  using progress_fn = std::function<void(uint64_t done, uint64_t total)>;

  /// Writes `dir/config.json` (with the fingerprint filled in) and `dir/model.safetensors` for
  /// `c` with weights drawn from `seed`; creates `dir`. The same (config, seed) always gives the
  /// same bytes. Returns an empty string on success, else the error.
  static std::string write(const model_config& c, uint64_t seed, const std::string& dir,
                           const progress_fn& progress = {});
};

} // namespace deepinfer::engine
