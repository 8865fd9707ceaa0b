#include "engine/ep/ep_load_window.hpp"

#include <algorithm>

namespace deepinfer::engine {

ep_load_window::ep_load_window(int layers, int experts, int ranks, int window)
    : layers_(layers), experts_(experts), ranks_(ranks), window_(std::max(1, window)),
      routed_sum_(static_cast<std::size_t>(layers * experts), 0),
      served_sum_(static_cast<std::size_t>(layers * ranks), 0) {}

void ep_load_window::add_step(const std::vector<int64_t>& routed, const std::vector<int64_t>& served) {
  auto add = [](std::vector<int64_t>& sum, const std::vector<int64_t>& v, int64_t sign) {
    for (std::size_t i = 0; i < sum.size(); ++i)
      sum[i] += sign * v[i];
  };
  if (static_cast<int>(routed_.size()) < window_) {
    routed_.push_back(routed);
    served_.push_back(served);
  } else {
    add(routed_sum_, routed_[next_], -1);
    add(served_sum_, served_[next_], -1);
    routed_[next_] = routed;
    served_[next_] = served;
    next_ = (next_ + 1) % static_cast<std::size_t>(window_);
  }
  add(routed_sum_, routed, 1);
  add(served_sum_, served, 1);
}

std::vector<double> ep_load_window::expert_load(int layer) const {
  auto first = routed_sum_.begin() + layer * experts_;
  return {first, first + experts_};
}

std::vector<double> ep_load_window::rank_load(int layer) const {
  auto first = served_sum_.begin() + layer * ranks_;
  return {first, first + ranks_};
}

double ep_load_window::moe_lb() const {
  double max_sum = 0.0, mean_sum = 0.0;
  for (int l = 0; l < layers_; ++l) {
    auto load = rank_load(l);
    double total = 0.0;
    for (double v : load)
      total += v;
    max_sum += *std::max_element(load.begin(), load.end());
    mean_sum += total / ranks_;
  }
  return mean_sum > 0.0 ? max_sum / mean_sum : 1.0;
}

} // namespace deepinfer::engine
