#include "balancers/sim/hit_policy.hpp"

#include <algorithm>

namespace deepinfer::balancers::sim {

int64_t hit_policy::l1(int64_t prompt_len, int64_t stored_blocks) {
  const int64_t cap = prompt_len - swa_ring;
  if (cap < block_tokens)
    return 0;
  return std::min(stored_blocks, cap / block_tokens) * block_tokens;
}

hit_policy::result hit_policy::resolve(int64_t l1_tokens, bool snapshot_at_l1) {
  if (l1_tokens <= 0)
    return {};
  if (snapshot_at_l1)
    return {l1_tokens, 0, true};
  return {l1_tokens - block_tokens, block_tokens, false};
}

} // namespace deepinfer::balancers::sim
