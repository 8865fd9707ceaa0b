#pragma once

// The engine's forward-stage counters as the engine benches read them: milliseconds per stage,
// subtracted between two reads.

#include <atomic>
#include <cstdint>

#include "engine/rank_engine.hpp"

namespace deepinfer::bench {

// Milliseconds per forward stage between two reads of the counters.
struct stage_ms {
  static constexpr int count = 11;
  double v[count]{};
  static constexpr const char* names[count] = {"encoder attention (with its projections)", "encoder MoE", "global KV",
                                               "indexer keys", "decoder self-attention", "indexer scores", "top-k",
                                               "gathered attention", "cross-attention (all of the above three)",
                                               "decoder MoE", "lm_head"};
};

inline stage_ms read_stages(const engine::rank_engine& e) {
  const auto& s = e.forward_stages();
  const std::atomic<int64_t>* c[stage_ms::count] = {&s.encoder_attention, &s.encoder_moe, &s.global_kv,
                                                    &s.index_keys, &s.decoder_attention, &s.index_scores, &s.top_k,
                                                    &s.gathered_attention, &s.cross_attention, &s.decoder_moe,
                                                    &s.logits};
  stage_ms out;
  for (int i = 0; i < stage_ms::count; ++i)
    out.v[i] = static_cast<double>(c[i]->load()) / 1e6;
  return out;
}

} // namespace deepinfer::bench
