#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/backends/backend.hpp"
#include "engine/ids.hpp"
#include "engine/kv_pool.hpp"
#include "engine/model/routed_experts.hpp"
#include "engine/model/weights.hpp"
#include "engine/swa_ring.hpp"

namespace deepinfer::engine {

/// The SWA state of one sequence: a ring per encoder and per decoder layer, and the replay
/// start of each stack (a query at i attends keys in [max(lo, i-127), i], DESIGN.md §5.2).
struct sequence_windows {
  std::vector<swa_ring> encoder;
  std::vector<swa_ring> decoder;
  int64_t encoder_lo = 0;
  int64_t decoder_lo = 0;

  /// Empty rings shaped for `c`.
  static sequence_windows make(const model_config& c);
};

/// The quantized indexer keys of one sequence's positions [0, count), in tiles of
/// `indexer::tile` keys (slots from count on hold zero keys). A sequence keeps one across its
/// forward calls, so a decode step quantizes only its new position instead of the whole context.
/// Valid while the block KV of those positions does not change (it is written once).
struct index_key_cache {
  int64_t count = 0;
  std::vector<uint8_t> codes;
  std::vector<float> scales;
};

/// Forgets the keys of positions [count, cache.count) (a rejected speculative draft wrote
/// them): their slots hold zero keys again and the next forward re-reads them from the pool.
void truncate_index_keys(index_key_cache& cache, int64_t count, int64_t index_dim);

/// One token row of a forward batch: which sequence, which absolute position. Rows of one
/// sequence are consecutive and ascending; their windows must end right before the first one.
/// `index` (optional) is the sequence's indexer key cache. `embedding` (optional, `hidden`
/// floats) replaces the row's token embedding: an image placeholder's vision embedding.
struct forward_row {
  sequence_id seq;
  int64_t pos = 0;
  sequence_windows* windows = nullptr;
  index_key_cache* index = nullptr;
  const float* embedding = nullptr;
};

/// The `ced_moe` forward pass (DESIGN.md §5.1) over a batch of rows, split by stage so prefill,
/// replay and decode compose them differently.
class ced_moe_forward {
public:
  ced_moe_forward(const model_weights& w, backend& b);

  /// Encoder layers: embeds `tokens` (one per row; a row's `embedding` instead when set) and writes the encoder output to `out`
  /// [rows x hidden]; pushes each layer's K/V into the rows' encoder rings.
  void encoder(std::span<const forward_row> rows, const int32_t* tokens, float* out);
  /// Projects the global KV + indexer key of each row from the encoder output into `pool`
  /// (precondition: the rows' positions are allocated).
  void global_kv(std::span<const forward_row> rows, const float* enc_out, kv_pool& pool);
  /// Decoder layers in place over `x` (encoder output in, final hidden state out); cross-attention
  /// reads global KV of positions <= each row's position from `pool`. With `last_rows_only`, the
  /// last layer finishes only the last row of each sequence (the one whose logits are taken):
  /// the other rows still push that layer's window K/V, but their final state is left undefined.
  void decoder(std::span<const forward_row> rows, float* x, const kv_pool& pool,
               bool last_rows_only = false);
  /// logits[r] = lm_head(norm(x[r])) for `n` rows into `out` [n x vocab].
  void logits(const float* x, int64_t n, float* out);

  const model_config& config() const { return w_.config(); }

  /// Hands every matrix the forward multiplies by to `backend::prepare_weight`, with the shape
  /// it is multiplied with (a rank does it at load). With external routed experts
  /// (`set_routed_experts`), the routed experts' matrices are left to their owner.
  void prepare_weights();

  /// Runs the routed experts of every MoE layer through `experts` (an expert-parallel group's
  /// member) instead of locally; nullptr: locally. Set between forwards; not owned.
  void set_routed_experts(routed_experts* experts) { external_experts_ = experts; }
  routed_experts* external_routed_experts() const { return external_experts_; }

  /// Calls `fn(w, n, k)` for every routed expert matrix of the model (w [n x k]).
  template <class Fn>
  void for_each_routed_matrix(Fn&& fn) const {
    const auto& c = config();
    const int64_t h = c.hidden, f = c.expert_ffn;
    auto each = [&](const moe_weights& m) {
      for (int64_t ex = 0; ex < c.routed_experts; ++ex) {
        fn(m.w1 + ex * f * h, f, h);
        fn(m.w3 + ex * f * h, f, h);
        fn(m.w2 + ex * h * f, h, f);
      }
    };
    for (const auto& l : w_.encoder)
      each(l.moe);
    for (const auto& l : w_.decoder)
      each(l.moe);
  }

  /// CPU time spent per stage since construction, ns (of the thread that runs each part; with
  /// one backend thread, all of it), for benchmarks' breakdowns of a forward.
  struct stage_ns {
    std::atomic<int64_t> encoder_attention{0}, encoder_moe{0}, global_kv{0}, index_keys{0},
        decoder_attention{0}, index_scores{0}, top_k{0}, gathered_attention{0}, cross_attention{0},
        decoder_moe{0}, logits{0};
  };
  const stage_ns& stages() const { return stages_; }

  /// Computes the RoPE table up to `positions` now (a rank does it at load for its pool's
  /// capacity: tens of ms at 64K positions that the first long prompt would otherwise pay).
  void reserve_positions(int64_t positions);

private:
  /// Between two pieces of work: lets the expert-parallel group's other ranks that wait on this
  /// rank's experts have them now (routed_experts::serve_waiting; nothing without a group).
  void serve_group() {
    if (external_experts_ != nullptr)
      external_experts_->serve_waiting();
  }
  void self_attention(const attention_weights& a, std::span<const forward_row> rows, bool dec,
                      int layer, float* x);
  void cross_attention(const decoder_layer_weights& d, std::span<const forward_row> rows,
                       int layer, float* x, const kv_pool& pool);
  /// MoE layer `layer` (encoder layers first, then decoder) over n rows of x, in place.
  void moe(const moe_weights& m, int layer, int64_t n, float* x);
  /// The routed experts of one layer on this rank (the default `routed_experts`).
  void local_experts(const moe_weights& m, const float* xn, int64_t n, std::span<const expert_route> routes,
                     int top, float* out);

  /// The indexer keys of one sequence of a decoder batch (rows [first, first + rows)), quantized
  /// in tiles of `indexer::tile` keys (codes and scales, zero past ctx); gathered once for every
  /// layer (the indexer key is per token, not per layer).
  struct index_keys {
    int64_t first = 0, rows = 0, ctx = 0;
    /// The sequence's cache, or `own` for rows that bring none.
    index_key_cache* cache = nullptr;
    index_key_cache own;
  };
  void gather_index_keys(std::span<const forward_row> rows, const kv_pool& pool);
  std::vector<index_keys> index_keys_;

  /// cos/sin of every pair at `pos` (grown on demand; call `ensure_rope` before parallel code).
  const float* rope_at(int64_t pos) const { return rope_.data() + pos * config().head_dim; }
  void ensure_rope(std::span<const forward_row> rows);

  /// Work buffers reused from call to call (grow-only): a prefill's activations are hundreds of
  /// KB to MB per layer, and fresh vectors would be fresh pages each time (page faults and the
  /// kernel zeroing them cost ~10 % of a hot prefill). Each stage has its own, so stages never
  /// share one; none is zeroed (callers write before they read).
  enum class work : uint8_t {
    sa_xn, sa_q, sa_k, sa_v, sa_att,
    ca_xn, ca_q, ca_iq, ca_att,
    moe_xn, moe_logits, moe_out, moe_xe, moe_g, moe_u, moe_o,
    kv_xn, kv_k, kv_v, kv_ik, lm_xn,
    count
  };
  float* buffer(work w, int64_t floats);
  std::array<std::vector<float>, static_cast<std::size_t>(work::count)> work_;
  /// The key spans of `self_attention` (one per sequence of a batch), kept for their capacity.
  struct key_span {
    int64_t lo = 0, count = 0;
    std::vector<float> kt, v;
  };
  std::vector<key_span> spans_;
  /// The routed rows of each expert in `moe`, kept for their capacity.
  std::vector<std::vector<std::pair<int64_t, float>>> by_expert_;
  /// The gated MLPs of `local_experts`' call, one per expert with rows, kept for their capacity.
  std::vector<backend::expert_mlp> mlps_;
  /// Each row's routes in `moe` (top per row), kept for their capacity.
  std::vector<expert_route> routes_;
  routed_experts* external_experts_ = nullptr;

  stage_ns stages_;

  const model_weights& w_;
  backend& b_;
  /// The backend's kernels (norms, attention, indexer, top-k).
  const kernels::kernel_table& k_;
  std::vector<float> rope_;
};

} // namespace deepinfer::engine
