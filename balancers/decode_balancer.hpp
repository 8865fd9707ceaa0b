#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace deepinfer::balancers {

/// Decode router of DESIGN §6.2: one router over every rank of every decode instance, balancing
/// request count (batch size) and total KV length (attention cost) together.
///
/// The choice greedily minimises the growth of `sum_r (n_r / n_mean)^2 + (kv_r / kv_mean)^2`, the
/// vector load-balancing objective. Adding a request of KV length L to rank r grows it by
/// `(2 n_r + 1) / n_mean^2 + (2 kv_r L + L^2) / kv_mean^2`: for a short request the count term
/// dominates (few requests win, even with a large KV total), for a long one the KV term does
/// (small KV total wins). Stateless; the caller owns the rank states.
class decode_balancer {
public:
  struct config {
    int64_t max_batch = 256;              ///< requests a rank may hold
    int64_t max_kv_tokens = 16'000'000;   ///< KV tokens a rank may hold when its state does not say
  };

  /// One decode rank as the router sees it.
  struct rank_state {
    int64_t requests = 0;
    int64_t kv_tokens = 0;
    /// KV tokens this rank's pool holds (its blocks x tokens per block); 0: `max_kv_tokens`.
    int64_t kv_capacity = 0;
    /// KV tokens its requests may reach (each one's prompt + max_tokens): a rank takes a
    /// request only if this still fits its pool, so no sequence it accepted runs out of KV.
    int64_t kv_reserved = 0;
  };

  explicit decode_balancer(const config& cfg);

  /// The rank for a request whose KV length is `kv_len` now and may reach `reserve_len`
  /// (0: `kv_len`); nullopt when no rank has room. Ties go to the lowest index.
  std::optional<int> choose(std::span<const rank_state> ranks, int64_t kv_len, int64_t reserve_len = 0) const;

  /// The objective growth of adding `kv_len` to `r` given the means (exposed for tests).
  static double score(const rank_state& r, int64_t kv_len, double mean_requests, double mean_kv);

private:
  config cfg_;
};

} // namespace deepinfer::balancers
