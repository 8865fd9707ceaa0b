#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "balancers/cost_model.hpp"
#include "engine/cost_model_file.hpp"
#include "engine/kernels/isa.hpp"

namespace deepinfer::engine {

/// Measures a model's prefill steps on this machine and fits its cost model (DESIGN §5.3), for
/// one engine setup (CPU kernels, threads). `deepinfer-mkmodel` runs it after writing a model,
/// `caf-launch` before serving one whose MODEL_DIR/cost_model.json lacks this setup, and
/// `deepinfer-profile` on demand.
///
/// A profile prefills three prompts (max_context / 4, / 2, and max_context tokens) in chunks of
/// 32, 128, 512 and 1024 tokens (the order alternating, so each size is measured at several
/// contexts), timing every chunk and each finishing pass: every computed token is a sample, so
/// the tiny model's default profile takes about a second of one core.
class cost_profile {
public:
  /// What to measure.
  struct config {
    /// Engine threads and CPU kernels, as the ranks that will use the fit run them (nullopt:
    /// the best this CPU runs).
    int threads = 1;
    std::optional<kernels::cpu_isa> isa;
    /// Longest prompt measured (tokens).
    int64_t max_context = 4096;
    /// Where the products run: a CUDA node's ranks are priced and chunked by the device's fit.
    backend_kind backend = backend_kind::cpu;
  };

  /// A fit, or why there is none.
  struct result {
    /// The fit and the setup it was measured on; nullopt on an error.
    std::optional<cost_model_file::entry> fit;
    /// The measured steps (empty when `ensure` read the fit from the file).
    std::vector<deepinfer::balancers::cost_model::sample> chunks;
    std::vector<deepinfer::balancers::cost_model::finish_sample> finishes;
    /// Why there is no fit (empty when there is one).
    std::string error;
    /// A fit that could not be kept in the model directory (read-only, full disk).
    std::string warning;
  };

  /// Loads the model and measures it now.
  static result measure(const std::string& model_dir, const config& cfg);

  /// The fit for this setup from MODEL_DIR/cost_model.json, measured and added to the file first
  /// when it has none. Processes of one host take turns (a lock file beside it), so two nodes
  /// starting together neither measure each other's load nor both profile.
  static result ensure(const std::string& model_dir, const config& cfg);
};

} // namespace deepinfer::engine
