#include "engine/model/forward.hpp"

#include <algorithm>
#include <cstring>

#include "engine/model/ops.hpp"
#include "engine/model/stage_timer.hpp"

namespace deepinfer::engine {

sequence_windows sequence_windows::make(const model_config& c) {
  sequence_windows w;
  swa_ring::config rc{c.ring, int64_t{c.kv_heads} * c.head_dim};
  w.encoder.assign(static_cast<std::size_t>(c.encoder_layers), swa_ring(rc));
  w.decoder.assign(static_cast<std::size_t>(c.decoder_layers), swa_ring(rc));
  return w;
}

ced_moe_forward::ced_moe_forward(const model_weights& w, backend& b)
    : w_(w), b_(b), k_(b.kernels()) {}

float* ced_moe_forward::buffer(work w, int64_t floats) {
  auto& v = work_[static_cast<std::size_t>(w)];
  if (static_cast<int64_t>(v.size()) < floats)
    v.resize(static_cast<std::size_t>(floats));
  return v.data();
}

void ced_moe_forward::ensure_rope(std::span<const forward_row> rows) {
  int64_t need = 0;
  for (const auto& r : rows)
    need = std::max(need, r.pos + 1);
  reserve_positions(need);
}

void ced_moe_forward::reserve_positions(int64_t need) {
  const int64_t d = config().head_dim;
  // Grow geometrically so a long decode does not recompute the table every step.
  const auto have = static_cast<int64_t>(rope_.size()) / d;
  if (need <= have)
    return;
  need = std::max(need, 2 * have);
  rope_.resize(static_cast<std::size_t>(need * d));
  ops::rope_angles(have, need - have, d, config().rope_theta, rope_.data() + have * d);
}

void ced_moe_forward::prepare_weights() {
  const auto& c = config();
  const int64_t h = c.hidden, qd = int64_t{c.heads} * c.head_dim;
  const int64_t kvd = int64_t{c.kv_heads} * c.head_dim, f = c.expert_ffn;
  // The shapes of the calls in attention.cpp, moe.cpp and global_kv below.
  auto attention = [&](const attention_weights& a) {
    b_.prepare_weight(a.wq, qd, h);
    b_.prepare_weight(a.wk, kvd, h);
    b_.prepare_weight(a.wv, kvd, h);
    b_.prepare_weight(a.wo, h, qd);
  };
  auto moe = [&](const moe_weights& m) {
    b_.prepare_weight(m.router, c.routed_experts, h);
    for (int64_t ex = 0; ex < (external_experts_ ? 0 : c.routed_experts); ++ex) {
      b_.prepare_weight(m.w1 + ex * f * h, f, h);
      b_.prepare_weight(m.w3 + ex * f * h, f, h);
      b_.prepare_weight(m.w2 + ex * h * f, h, f);
    }
    if (c.shared_experts > 0) {
      const int64_t sf = int64_t{c.shared_experts} * f;
      b_.prepare_weight(m.shared_w1, sf, h);
      b_.prepare_weight(m.shared_w3, sf, h);
      b_.prepare_weight(m.shared_w2, h, sf);
    }
  };
  for (const auto& l : w_.encoder) {
    attention(l.attn);
    moe(l.moe);
  }
  b_.prepare_weight(w_.global.wk, c.kv_groups * kvd, h);
  b_.prepare_weight(w_.global.wv, c.kv_groups * kvd, h);
  b_.prepare_weight(w_.global.wik, c.index_dim, h);
  for (const auto& l : w_.decoder) {
    attention(l.attn);
    b_.prepare_weight(l.cross_wq, qd, h);
    b_.prepare_weight(l.index_wq, int64_t{c.index_heads} * c.index_dim, h);
    b_.prepare_weight(l.cross_wo, h, qd);
    moe(l.moe);
  }
}

void ced_moe_forward::encoder(std::span<const forward_row> rows, const int32_t* tokens,
                              float* out) {
  const auto& c = config();
  const int64_t n = static_cast<int64_t>(rows.size()), h = c.hidden;
  ensure_rope(rows);
  for (int64_t r = 0; r < n; ++r)
    std::memcpy(out + r * h, rows[r].embedding ? rows[r].embedding : w_.embed + int64_t{tokens[r]} * h,
                sizeof(float) * h);
  for (int l = 0; l < c.encoder_layers; ++l) {
    const auto& lw = w_.encoder[static_cast<std::size_t>(l)];
    {
      stage_timer t{stages_.encoder_attention};
      self_attention(lw.attn, rows, false, l, out);
    }
    stage_timer t{stages_.encoder_moe};
    moe(lw.moe, l, n, out);
  }
}

void ced_moe_forward::global_kv(std::span<const forward_row> rows, const float* enc_out,
                                kv_pool& pool) {
  const auto& c = config();
  const int64_t n = static_cast<int64_t>(rows.size()), h = c.hidden;
  const int64_t kvd = int64_t{c.kv_heads} * c.head_dim, g = c.kv_groups;
  stage_timer timer{stages_.global_kv};
  float* xn = buffer(work::kv_xn, n * h);
  float* k = buffer(work::kv_k, n * g * kvd);
  float* v = buffer(work::kv_v, n * g * kvd);
  float* ik = buffer(work::kv_ik, n * c.index_dim);
  ensure_rope(rows);
  k_.rms_norm(enc_out, n, h, w_.global.norm, c.norm_eps, xn);
  const backend::product kv[] = {{w_.global.wk, g * kvd, k}, {w_.global.wv, g * kvd, v},
                                 {w_.global.wik, c.index_dim, ik}};
  b_.matmul_shared_input(xn, n, h, kv);
  for (int64_t r = 0; r < n; ++r) {
    float* kr = k + r * g * kvd;
    ops::rope(kr, g * c.kv_heads, c.head_dim, rope_at(rows[r].pos));
    // Row layout: [group][K | V][kv_heads x head_dim], then the indexer key.
    float* dst = pool.row(rows[r].seq, rows[r].pos);
    for (int64_t gi = 0; gi < g; ++gi) {
      std::memcpy(dst + (2 * gi) * kvd, kr + gi * kvd, sizeof(float) * kvd);
      std::memcpy(dst + (2 * gi + 1) * kvd, v + (r * g + gi) * kvd, sizeof(float) * kvd);
    }
    k_.index_key_record(ik + r * c.index_dim, c.index_dim, reinterpret_cast<uint8_t*>(dst + 2 * g * kvd));
  }
}

void ced_moe_forward::decoder(std::span<const forward_row> rows, float* x, const kv_pool& pool,
                              bool last_rows_only) {
  const auto& c = config();
  const int64_t n = static_cast<int64_t>(rows.size());
  ensure_rope(rows);
  {
    stage_timer t{stages_.index_keys};
    gather_index_keys(rows, pool);
  }
  for (int l = 0; l < c.decoder_layers; ++l) {
    const auto& lw = w_.decoder[static_cast<std::size_t>(l)];
    {
      stage_timer t{stages_.decoder_attention};
      self_attention(lw.attn, rows, true, l, x);
    }
    if (!last_rows_only || l + 1 < c.decoder_layers) {
      {
        stage_timer t{stages_.cross_attention};
        cross_attention(lw, rows, l, x, pool);
      }
      stage_timer t{stages_.decoder_moe};
      moe(lw.moe, c.encoder_layers + l, n, x);
      continue;
    }
    // The last layer's output feeds nothing but the logits: finish one row per sequence (each
    // row's result is independent of the others in the call, so this changes no bit of it).
    std::vector<forward_row> last;
    std::vector<int64_t> at;
    for (int64_t r = 0; r < n; ++r)
      if (r + 1 == n || !(rows[r + 1].seq == rows[r].seq)) {
        last.push_back(rows[r]);
        at.push_back(r);
      }
    const auto m = static_cast<int64_t>(last.size());
    std::vector<float> xs(static_cast<std::size_t>(m * c.hidden));
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(xs.data() + i * c.hidden, x + at[i] * c.hidden, sizeof(float) * c.hidden);
    for (int64_t g = 0; g < m; ++g) { // one row per key group now
      index_keys_[static_cast<std::size_t>(g)].first = g;
      index_keys_[static_cast<std::size_t>(g)].rows = 1;
    }
    {
      stage_timer t{stages_.cross_attention};
      cross_attention(lw, last, l, xs.data(), pool);
    }
    {
      stage_timer t{stages_.decoder_moe};
      moe(lw.moe, c.encoder_layers + l, m, xs.data());
    }
    for (int64_t i = 0; i < m; ++i)
      std::memcpy(x + at[i] * c.hidden, xs.data() + i * c.hidden, sizeof(float) * c.hidden);
  }
}

void ced_moe_forward::logits(const float* x, int64_t n, float* out) {
  const auto& c = config();
  stage_timer timer{stages_.logits};
  float* xn = buffer(work::lm_xn, n * c.hidden);
  k_.rms_norm(x, n, c.hidden, w_.final_norm, c.norm_eps, xn);
  b_.matmul(xn, n, c.hidden, w_.lm_head, c.vocab_size, out);
}

} // namespace deepinfer::engine
