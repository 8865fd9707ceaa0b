#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "balancers/cost_model.hpp"
#include "engine/backends/backend_kind.hpp"
#include "engine/kernels/isa.hpp"
#include "engine/verify_cost.hpp"

namespace deepinfer::engine {

/// MODEL_DIR/cost_model.json: the fitted cost models of one model, one per engine setup (CPU
/// kernels, thread count and backend), since a fit on AVX-512 kernels says little about portable
/// ones, and one on the CPU nothing about a GPU.
/// `engine::cost_profile` writes it; ranks chunk with, and entrypoints price with, the entry of
/// the engine setup they run or price.
///
/// ```json
/// {"formula": "...", "unit": "ns",
///  "fits": [{"isa": "avx512", "threads": 1, "backend": "cpu", "samples": 27, "mean_rel_err": 0.06,
///            "a0": ..., "a1": ..., "a2": ..., "a3": ..., "f0": ..., "f1": ...,
///            "verify_steps": [[1, 1, 3.1e6, 1], [1, 2, 3.3e6, 1], ...]}]}
/// ```
/// `verify_steps`, for a model with a draft head: speculative steps as [sequences, rows, ns,
/// head proposing after it (1) or paused (0)] (`cost_profile::measure_verify`), the verify cost
/// curve `spec_planner` prices its drafts on.
class cost_model_file {
public:
  /// One fit and what it was measured on.
  struct entry {
    kernels::cpu_isa isa = kernels::cpu_isa::portable;
    int threads = 1;
    deepinfer::balancers::cost_model model;
    /// Chunks measured, and the fit's mean |predicted - measured| / measured over them.
    int samples = 0;
    double mean_rel_err = 0.0;
    /// Where the products ran (a file written before backends had no field: cpu).
    backend_kind backend = backend_kind::cpu;
    /// The verify cost curve (DESIGN §5.3): measured speculative steps; empty for a model
    /// without a draft head, or from a file written before the curve was kept.
    std::vector<verify_cost_point> verify_steps;
  };

  /// The file's name in a model directory.
  static constexpr const char* file_name = "cost_model.json";

  /// An empty file.
  cost_model_file() = default;

  /// Reads `path`; empty when absent, malformed or of an older layout (a single fit without its
  /// engine setup), so that the caller measures again.
  static cost_model_file load(const std::string& path);

  /// Parses what `to_json` writes; nullopt on malformed text.
  static std::optional<cost_model_file> from_json(const std::string& text);

  /// The fit for (isa, threads, backend); nullopt when there is none.
  std::optional<entry> find(kernels::cpu_isa isa, int threads, backend_kind backend = backend_kind::cpu) const;

  /// Adds the fit, replacing one of the same setup.
  void put(const entry& e);

  /// Every fit, in the order they were added.
  const std::vector<entry>& entries() const { return entries_; }

  std::string to_json() const;

  /// Writes `path` atomically (a temporary file renamed over it); an error text, empty on success.
  std::string save(const std::string& path) const;

private:
  std::vector<entry> entries_;
};

} // namespace deepinfer::engine
