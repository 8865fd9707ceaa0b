#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "balancers/cost_model.hpp"
#include "engine/cost_model_file.hpp"
#include "engine/kernels/isa.hpp"
#include "engine/verify_cost.hpp"

namespace deepinfer::engine {

class rank_engine;

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
    /// Most rows (sequences + drafts) of a verify step measured, for a model with a draft head;
    /// the planner prices steps past it by the slope of the last ones measured.
    int64_t max_verify_rows = 384;
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

  /// Loads the model and measures it now: prefill chunks, and for a model with a draft head the
  /// verify cost curve (`measure_verify`).
  static result measure(const std::string& model_dir, const config& cfg);

  /// The verify cost curve of `engine` (which drafts): speculative steps of 1 to `max_rows`
  /// rows (row counts 1.25 apart) made of as few sequences as the rows need (every draft the head
  /// proposes), and steps of one row per sequence up to `max_plain_rows`, with the head and paused:
  /// a sequence costs more than a draft row (its window's keys, its draft head pass), so a plan's
  /// cost depends on both, and a rank that drafts nothing saves the head's pass by pausing it.
  /// Each step runs twice (rows ascending, then descending) and its faster time is kept. Sequences
  /// of 16 random tokens verify random drafts, the head's proposals after each step included;
  /// they are freed after. Ordered by rows, then sequences. About three seconds of one core on
  /// the tiny model.
  static std::vector<verify_cost_point> measure_verify(rank_engine& engine, int64_t max_rows,
                                                       int64_t max_plain_rows = max_plain_verify_rows);
  static constexpr int64_t max_plain_verify_rows = 64;

  /// The fit for this setup from MODEL_DIR/cost_model.json, measured and added to the file first
  /// when it has none (or, for a model with a draft head, when its fit has no verify curve). Processes of one host take turns (a lock file beside it), so two nodes
  /// starting together neither measure each other's load nor both profile.
  static result ensure(const std::string& model_dir, const config& cfg);
};

} // namespace deepinfer::engine
