// The MoE block of ced_moe_forward: sigmoid router with bias, top-k, normalized weights times
// the scaling factor, routed experts (here, grouped by expert, or through an expert-parallel
// group's `routed_experts`), plus the shared experts.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/model/forward.hpp"
#include "engine/model/ops.hpp"

namespace deepinfer::engine {

void ced_moe_forward::moe(const moe_weights& m, int layer, int64_t n, float* x) {
  const auto& c = config();
  const int64_t h = c.hidden, e = c.routed_experts, f = c.expert_ffn, top = c.experts_per_token;
  float* xn = buffer(work::moe_xn, n * h);
  float* logits = buffer(work::moe_logits, n * e);
  serve_group();
  k_.rms_norm(x, n, h, m.norm, c.norm_eps, xn);
  b_.matmul(xn, n, h, m.router, e, logits);
  // 1. route: select by score + bias, weight by the score normalised over the selection; each
  // row's routes in ascending expert order (the combine order).
  routes_.resize(static_cast<std::size_t>(n * top));
  std::vector<int64_t> order(static_cast<std::size_t>(e));
  std::vector<float> score(static_cast<std::size_t>(e));
  for (int64_t r = 0; r < n; ++r) {
    k_.sigmoid(logits + r * e, e, score.data());
    for (int64_t i = 0; i < e; ++i)
      order[i] = i;
    std::partial_sort(order.begin(), order.begin() + top, order.end(), [&](int64_t a, int64_t b) {
      float sa = score[a] + m.router_bias[a], sb = score[b] + m.router_bias[b];
      return sa > sb || (sa == sb && a < b);
    });
    float sum = 0.0f;
    for (int64_t t = 0; t < top; ++t)
      sum += score[order[t]];
    std::sort(order.begin(), order.begin() + top);
    for (int64_t t = 0; t < top; ++t)
      routes_[r * top + t] = {static_cast<int32_t>(order[t]), score[order[t]] / sum * c.route_scale};
  }
  // 2. routed experts: every row's sum in ascending expert order.
  float* out = buffer(work::moe_out, n * h);
  std::fill(out, out + n * h, 0.0f);
  if (external_experts_ != nullptr)
    external_experts_->run(layer, xn, n, routes_, static_cast<int>(top), out);
  else
    local_experts(m, xn, n, routes_, static_cast<int>(top), out);
  // 3. shared experts (stacked into one wider MLP), then the residual.
  if (c.shared_experts > 0) {
    const int64_t sf = int64_t{c.shared_experts} * f;
    float* g = buffer(work::moe_g, n * std::max(f, sf));
    float* u = buffer(work::moe_u, n * std::max(f, sf));
    serve_group();
    b_.gated_mlp(xn, n, h, m.shared_w1, m.shared_w3, sf, m.shared_w2, out, true, g, u);
  }
  k_.axpy(x, out, 1.0f, n * h);
}

void ced_moe_forward::local_experts(const moe_weights& m, const float* xn, int64_t n,
                                    std::span<const expert_route> routes, int top, float* out) {
  const auto& c = config();
  const int64_t h = c.hidden, e = c.routed_experts, f = c.expert_ffn;
  auto& by_expert = by_expert_;
  by_expert.resize(static_cast<std::size_t>(e));
  for (auto& rows : by_expert)
    rows.clear();
  for (int64_t r = 0; r < n; ++r)
    for (int t = 0; t < top; ++t) {
      const auto& rt = routes[static_cast<std::size_t>(r * top + t)];
      by_expert[static_cast<std::size_t>(rt.expert)].emplace_back(r, rt.weight);
    }
  // Every expert's rows side by side, in ascending expert order, through the backend at once
  // (one round trip on a device); then each row's sum in ascending expert order.
  int64_t total = 0;
  for (const auto& rows : by_expert)
    total += static_cast<int64_t>(rows.size());
  const int64_t sf = int64_t{c.shared_experts} * f;
  float* xe = buffer(work::moe_xe, total * h);
  float* g = buffer(work::moe_g, std::max(total * f, n * sf));
  float* u = buffer(work::moe_u, std::max(total * f, n * sf));
  float* o = buffer(work::moe_o, total * h);
  mlps_.clear();
  int64_t at = 0;
  for (int64_t ex = 0; ex < e; ++ex) {
    const auto& rows = by_expert[ex];
    const auto ne = static_cast<int64_t>(rows.size());
    if (ne == 0)
      continue;
    for (int64_t i = 0; i < ne; ++i)
      std::memcpy(xe + (at + i) * h, xn + rows[i].first * h, sizeof(float) * h);
    mlps_.push_back({m.w1 + ex * f * h, m.w3 + ex * f * h, m.w2 + ex * h * f, ne});
    at += ne;
  }
  b_.gated_mlps(xe, h, f, mlps_, o, g, u);
  at = 0;
  for (int64_t ex = 0; ex < e; ++ex) {
    const auto& rows = by_expert[ex];
    for (std::size_t i = 0; i < rows.size(); ++i)
      k_.axpy(out + rows[i].first * h, o + (at + static_cast<int64_t>(i)) * h, rows[i].second, h);
    at += static_cast<int64_t>(rows.size());
  }
}

} // namespace deepinfer::engine
