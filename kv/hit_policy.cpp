#include "kv/hit_policy.hpp"

#include <algorithm>

namespace deepinfer::kv {

std::size_t hit_policy::reusable_length(std::size_t prompt_length, std::size_t stored_blocks) const {
  if (prompt_length <= cfg_.ring || cfg_.block == 0)
    return 0;
  const std::size_t cap_blocks = (prompt_length - cfg_.ring) / cfg_.block;
  return std::min(cap_blocks, stored_blocks) * cfg_.block;
}

hit_decision hit_policy::operator()(std::size_t prompt_length, std::size_t stored_blocks,
                                    bool swa_at_l1) const {
  const std::size_t l1 = reusable_length(prompt_length, stored_blocks);
  hit_decision out;
  if (l1 == 0)
    return out;
  out.blocks = l1 / cfg_.block;
  if (swa_at_l1) {
    out.hit_length = l1;
    out.swa = swa_mode::exact;
  } else {
    out.hit_length = l1 - cfg_.block;
    out.swa = swa_mode::replay;
    out.replay_begin = l1 - cfg_.block;
  }
  return out;
}

} // namespace deepinfer::kv
