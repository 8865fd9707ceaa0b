#include "engine/model/flops.hpp"

#include <algorithm>

namespace deepinfer::engine {

namespace {

struct parts {
  double gemm = 0;
  double other = 0;
};

double d(int64_t x) {
  return static_cast<double>(x);
}

parts attention_proj(const model_config& c) {
  const double h = c.hidden, q = d(c.heads) * c.head_dim, kv = d(c.kv_heads) * c.head_dim;
  return {2 * h * (q + 2 * kv) + 2 * q * h, 0};
}

parts moe(const model_config& c) {
  const double h = c.hidden, f = c.expert_ffn;
  const double experts = d(c.experts_per_token) + c.shared_experts;
  return {2 * h * c.routed_experts + experts * 3 * 2 * h * f, 0};
}

parts enc(const model_config& c, int64_t ctx) {
  auto a = attention_proj(c), m = moe(c);
  const double keys = d(std::min<int64_t>(ctx + 1, c.window));
  return {a.gemm + m.gemm, 4 * d(c.heads) * c.head_dim * keys};
}

parts dec(const model_config& c, int64_t ctx) {
  auto p = enc(c, ctx);
  const double h = c.hidden, q = d(c.heads) * c.head_dim;
  const double iq = d(c.index_heads) * c.index_dim;
  p.gemm += 2 * h * q + 2 * q * h + 2 * h * iq;
  const double keys = d(std::min<int64_t>(ctx + 1, c.index_topk));
  const double indexer = ctx + 1 > c.index_topk ? 2 * iq * d(ctx + 1) : 0;
  p.other += indexer + 4 * q * keys;
  return p;
}

parts total(const model_config& c, int64_t len, int64_t dec_tokens) {
  parts t;
  for (int64_t p = 0; p < len; ++p) {
    auto e = enc(c, p);
    t.gemm += c.encoder_layers * e.gemm;
    t.other += c.encoder_layers * e.other;
  }
  t.gemm += d(len) * flops::global_kv(c);
  for (int64_t p = std::max<int64_t>(0, len - dec_tokens); p < len; ++p) {
    auto x = dec(c, p);
    t.gemm += c.decoder_layers * x.gemm;
    t.other += c.decoder_layers * x.other;
  }
  t.gemm += flops::lm_head(c);
  return t;
}

} // namespace

double flops::encoder_layer(const model_config& c, int64_t ctx) {
  auto p = enc(c, ctx);
  return p.gemm + p.other;
}

double flops::decoder_layer(const model_config& c, int64_t ctx) {
  auto p = dec(c, ctx);
  return p.gemm + p.other;
}

double flops::global_kv(const model_config& c) {
  return 2.0 * c.hidden * (2.0 * c.kv_groups * c.kv_heads * c.head_dim + c.index_dim);
}

double flops::lm_head(const model_config& c) {
  return 2.0 * c.hidden * c.vocab_size;
}

double flops::prefill(const model_config& c, int64_t len, int64_t decoder_tokens) {
  auto t = total(c, len, decoder_tokens);
  return t.gemm + t.other;
}

double flops::prefill_gemm(const model_config& c, int64_t len, int64_t decoder_tokens) {
  return total(c, len, decoder_tokens).gemm;
}

} // namespace deepinfer::engine
