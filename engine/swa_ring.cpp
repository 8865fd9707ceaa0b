#include "engine/swa_ring.hpp"

#include <algorithm>
#include <cstring>

namespace deepinfer::engine {

swa_ring::swa_ring(const config& cfg)
    : config_(cfg), k_(static_cast<std::size_t>(cfg.slots * cfg.width)),
      v_(static_cast<std::size_t>(cfg.slots * cfg.width)) {}

void swa_ring::push(int64_t pos, const float* k, const float* v) {
  const auto bytes = static_cast<std::size_t>(config_.width) * sizeof(float);
  std::memcpy(k_.data() + (pos % config_.slots) * config_.width, k, bytes);
  std::memcpy(v_.data() + (pos % config_.slots) * config_.width, v, bytes);
  end_ = pos + 1;
  count_ = std::min(count_ + 1, config_.slots);
}

void swa_ring::reset(int64_t pos) {
  end_ = pos;
  count_ = 0;
}

void swa_ring::truncate(int64_t end) {
  count_ -= end_ - end;
  end_ = end;
}

} // namespace deepinfer::engine
