#pragma once

#include <cstdint>

#include "engine/model/model_config.hpp"

namespace deepinfer::engine {

/// Multiply-add counts (x2 = FLOPs) of the `ced_moe` forward by formula, for roofline figures,
/// the bounded/exact comparison and the simulator's cost model.
class flops {
public:
  /// FLOPs of one encoder layer for one token with `ctx` earlier positions.
  static double encoder_layer(const model_config& c, int64_t ctx);
  /// FLOPs of one decoder layer for one token at context `ctx` (indexer + top-k cross-attention).
  static double decoder_layer(const model_config& c, int64_t ctx);
  /// FLOPs of the global KV + indexer key projection for one token.
  static double global_kv(const model_config& c);
  /// FLOPs of the lm_head for one row.
  static double lm_head(const model_config& c);
  /// FLOPs of a prefill of `len` tokens from scratch whose decoder runs over the last
  /// `decoder_tokens` positions (128 bounded, `len` for a full run).
  static double prefill(const model_config& c, int64_t len, int64_t decoder_tokens);
  /// Of the above, the FLOPs in matrix products (what sgemm runs).
  static double prefill_gemm(const model_config& c, int64_t len, int64_t decoder_tokens);
};

} // namespace deepinfer::engine
