#include "balancers/decode_balancer.hpp"

#include <algorithm>

namespace deepinfer::balancers {

decode_balancer::decode_balancer(const config& cfg) : cfg_(cfg) {}

double decode_balancer::score(const rank_state& r, int64_t kv_len, double mean_requests, double mean_kv) {
  const double n = static_cast<double>(r.requests);
  const double kv = static_cast<double>(r.kv_tokens);
  const double len = static_cast<double>(kv_len);
  return (2.0 * n + 1.0) / (mean_requests * mean_requests) + (2.0 * kv * len + len * len) / (mean_kv * mean_kv);
}

std::optional<int> decode_balancer::choose(std::span<const rank_state> ranks, int64_t kv_len, int64_t reserve_len) const {
  reserve_len = std::max(reserve_len, kv_len);
  if (ranks.empty())
    return std::nullopt;
  double sum_n = 0.0;
  double sum_kv = 0.0;
  for (const auto& r : ranks) {
    sum_n += static_cast<double>(r.requests);
    sum_kv += static_cast<double>(r.kv_tokens);
  }
  // Means after placing the new request, so an empty cluster still has a scale.
  const double count = static_cast<double>(ranks.size());
  const double mean_n = (sum_n + 1.0) / count;
  const double mean_kv = std::max(1.0, (sum_kv + static_cast<double>(kv_len)) / count);
  std::optional<int> best;
  double best_score = 0.0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const auto& r = ranks[i];
    const int64_t capacity = r.kv_capacity > 0 ? r.kv_capacity : cfg_.max_kv_tokens;
    const int64_t held = std::max(r.kv_reserved, r.kv_tokens);
    if (r.requests + 1 > cfg_.max_batch || held + reserve_len > capacity)
      continue;
    const double s = score(r, kv_len, mean_n, mean_kv);
    if (!best || s < best_score) {
      best = static_cast<int>(i);
      best_score = s;
    }
  }
  return best;
}

} // namespace deepinfer::balancers
