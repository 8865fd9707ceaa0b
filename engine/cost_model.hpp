#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace deepinfer::engine {

/// Predicted prefill step time (DESIGN.md §5.3): a chunk of q new tokens after c computed ones
/// costs `a0 + a1 q + a2 q c + a3 q^2` ns, and the step that finishes a prompt adds the decoder
/// pass, `f0 + f1 c` ns. Fitted by least squares from measured steps (`deepinfer-profile`).
class cost_model {
public:
  /// One measured chunk.
  struct sample {
    int64_t q = 0;
    int64_t c = 0;
    double ns = 0;
  };
  /// One measured finishing pass at context c.
  struct finish_sample {
    int64_t c = 0;
    double ns = 0;
  };

  double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  double f0 = 0, f1 = 0;

  /// Least-squares fit; nullopt when the samples cannot determine the coefficients.
  static std::optional<cost_model> fit(std::span<const sample> chunks,
                                       std::span<const finish_sample> finishes);
  /// Predicted ns of a chunk of q tokens at context c (plus the finish when `last`).
  double predict(int64_t q, int64_t c, bool last = false) const;
  /// The largest q in [0, cap] whose chunk fits `budget_ns` at context c (solving the quadratic);
  /// the finishing pass is counted when q == cap.
  int64_t max_tokens(int64_t c, double budget_ns, int64_t cap) const;

  std::string to_json() const;
  /// Parses `to_json` output; nullopt on malformed text.
  static std::optional<cost_model> from_json(const std::string& text);
  /// Reads `path` (e.g. MODEL_DIR/cost_model.json); nullopt when absent or malformed.
  static std::optional<cost_model> load(const std::string& path);
};

} // namespace deepinfer::engine
